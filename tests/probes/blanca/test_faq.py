"""BLANCA's R, F and L items from the Python documentation (probes.blanca.faq), on a hand-written two-question FAQ
and small library pages; one test reads the real FAQ where Debian's python3.11-doc is installed."""

import textwrap
from pathlib import Path

import pytest

from asc.errors import CorpusError
from probes.blanca.faq import (
    DOCS_ROOT,
    doc_sections,
    docs_root,
    faq_questions,
    forum_class_items,
    library_entries,
    linked_items,
    questions_of_page,
    rank_items,
)
from probes.blanca.items import load_items, save_items
from probes.blanca.rst import doc_entries, read_sections

FAQ = textwrap.dedent('''\
    ===========
    Tiny FAQ
    ===========

    Containers
    ==========

    How do I keep dictionary keys in insertion order?
    -------------------------------------------------

    Use :class:`collections.OrderedDict`, or a plain :class:`dict` since 3.7.

    How do I count things?
    ----------------------

    A :class:`~collections.Counter` counts hashable objects; see :func:`len` too.
''')

LIBRARY = textwrap.dedent('''\
    .. module:: collections

    .. class:: OrderedDict([items])

       A dict that remembers the order of insertion.

       .. method:: move_to_end(key)

          Move a key to an end.

    .. class:: Counter([iterable])

       A dict subclass for counting.

    .. class:: deque([iterable])

       A double-ended queue.

    .. class:: ChainMap(*maps)

       Several mappings as one.
''')


def test_questions_of_a_hand_written_faq():
    questions = questions_of_page(FAQ, "faq/tiny")
    assert [q.question for q in questions] == ["How do I keep dictionary keys in insertion order?",
                                               "How do I count things?"]
    assert questions[0].answer == "Use collections.OrderedDict, or a plain dict since 3.7."
    assert questions[0].targets == (("class", "collections.OrderedDict"), ("class", "dict"))
    assert questions[1].targets == (("class", "collections.Counter"), ("func", "len"))
    assert questions[0].id == "faq/tiny#how-do-i-keep-dictionary-keys-in-insertion-order"


def test_rank_items_each_question_against_its_pages_answers(tmp_path: Path):
    questions = questions_of_page(FAQ, "faq/tiny")
    items = rank_items(questions)
    assert [it.grades for it in items] == [(1.0, 0.0), (0.0, 1.0)]
    assert items[1].question == "How do I count things?" and items[1].answers[1].startswith("A Counter counts")
    assert load_items(save_items(tmp_path / "R.jsonl", "R", items))[1] == items


def test_forum_class_items_positives_and_same_module_hard_negatives():
    questions = questions_of_page(FAQ, "faq/tiny")
    entries = doc_entries(LIBRARY, "library/collections")
    items = forum_class_items(questions, entries, negatives=3, seed=0)
    first = [it for it in items if it.name_a == questions[0].id]
    positives = [it for it in first if it.positive]
    assert [it.name_b for it in positives] == ["collections.OrderedDict"]  # dict has no entry here: not resolved
    assert positives[0].text_a.startswith("How do I keep dictionary keys") and "remembers" in positives[0].text_b
    negatives = sorted(it.name_b for it in first if not it.positive)
    # classes of the same module the answer does not reference (the method of OrderedDict is neither a class nor
    # unrelated)
    assert negatives == ["collections.ChainMap", "collections.Counter", "collections.deque"]
    assert {it.group for it in first} == {positives[0].id}
    second = [it for it in items if it.name_a == questions[1].id]
    assert "collections.Counter" not in [it.name_b for it in second if not it.positive]
    assert forum_class_items(questions, entries, negatives=1, seed=0) == forum_class_items(questions, entries,
                                                                                           negatives=1, seed=0)


def test_linked_items_from_ref_links():
    page_a = textwrap.dedent('''\
        Alpha
        =====

        .. _alpha-one:

        One
        ---

        Text of one, long enough to count, pointing at :ref:`two <beta-two>` somewhere else entirely.

        Lonely
        ------

        Text of a section that links nowhere but is long enough to be a negative candidate here.
    ''')
    page_b = textwrap.dedent('''\
        Beta
        ====

        .. _beta-two:

        Two
        ---

        Text of two, with a link back to :ref:`alpha-one` and enough words to be kept as well.

        Quiet
        -----

        Another section of text with no link at all, long enough to be drawn as a negative pair.
    ''')
    sections = read_sections(page_a, "a") + read_sections(page_b, "b")
    items = linked_items(sections, min_chars=40, seed=0)
    positives = [(it.name_a, it.name_b) for it in items if it.positive]
    assert positives == [("a#one", "b#two")]  # linked both ways: one pair
    negatives = [(it.name_a, it.name_b) for it in items if not it.positive]
    assert len(negatives) == 1 and negatives[0] != ("a#one", "b#two")
    assert negatives[0][0].startswith("a#") and negatives[0][1].startswith("b#")  # across pages
    assert items[0].text_a.startswith("One\n\nText of one")


def test_missing_documentation_names_the_package(tmp_path: Path):
    with pytest.raises(CorpusError, match="install Debian's python3.11-doc"):
        docs_root(tmp_path)
    with pytest.raises(CorpusError, match="make docs-data"):
        faq_questions(tmp_path)


@pytest.mark.skipif(not (DOCS_ROOT / "faq").is_dir(),
                    reason="Debian's python3.11-doc is not installed (make docs-data installs it as root)")
def test_the_real_faq_parses():
    questions = faq_questions()
    assert len(questions) >= 170
    assert sum(q.page == "faq/programming" for q in questions) >= 60
    assert all(q.answer.strip() for q in questions)
    entries = library_entries()
    assert any(e.name == "collections.OrderedDict" for e in entries)
    f_items = forum_class_items(questions, entries)
    assert sum(it.positive for it in f_items) >= 80 and sum(not it.positive for it in f_items) >= 200
    l_items = linked_items(doc_sections(folders=("faq", "library", "tutorial")))
    assert sum(it.positive for it in l_items) >= 100
