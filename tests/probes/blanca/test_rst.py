"""The small reST reader of probes.blanca.rst: sections and levels, labels, cross-reference targets, plain text and
object entries, on hand-written pages."""

import textwrap

from probes.blanca.rst import doc_entries, plain_text, read_sections, role_targets

PAGE = textwrap.dedent('''\
    :tocdepth: 2

    ==========
    Things FAQ
    ==========

    .. contents::

    General
    =======

    .. _faq-sorting:

    .. index:: sorting

    How do I sort a list?
    ---------------------

    Use :func:`sorted` or :meth:`list.sort`; see :ref:`the HOWTO <sortinghowto>`.

    Why?
    ----

    Because.

    .. _inline-label:

    More text with a label inside.

    Why?
    ----

    Again.
''')


def test_sections_levels_and_bodies():
    sections = read_sections(PAGE, "faq/things")
    assert [(s.title, s.level) for s in sections] == [("Things FAQ", 0), ("General", 1), ("How do I sort a list?", 2),
                                                      ("Why?", 2), ("Why?", 2)]
    assert plain_text(sections[1].body) == ""  # a category title with no text of its own (a label, an index)
    assert sections[2].body.startswith("Use :func:`sorted`") and "Because" not in sections[2].body
    assert [s.id for s in sections[3:]] == ["faq/things#why", "faq/things#why-2"]  # repeated slugs get numbers
    assert sections[2].line == 16  # 1-based line of the title


def test_labels_attach_to_the_next_title_or_the_enclosing_section():
    sections = read_sections(PAGE, "faq/things")
    assert sections[2].labels == ("faq-sorting",)  # across the index directive
    assert sections[3].labels == ("inline-label",)  # a label before a paragraph: its section


def test_role_targets():
    text = ("See :class:`~collections.OrderedDict`, :func:`os.path.join()`, :meth:`title <str.title>`, "
            ":py:exc:`ValueError`, :class:`!NotALink`, :c:func:`PyList_New`, :mod:`json` and :ref:`Sort <SortingHowTo>`.")
    assert role_targets(text) == [("class", "collections.OrderedDict"), ("func", "os.path.join"), ("meth", "str.title"),
                                  ("exc", "ValueError"), ("mod", "json"), ("ref", "sortinghowto")]
    assert role_targets(text, ("mod",)) == [("mod", "json")]


def test_plain_text():
    rst = textwrap.dedent('''\
        .. _label:

        Use :class:`~collections.OrderedDict` or ``dict`` (see :pep:`468` and `the docs <https://x.y>`_)::

           d = {}
           print(*args, **kwargs)

        .. note::
           :class: tip

           This is *important* and **bold**.

        .. index::
           single: hidden

        .. versionadded:: 3.7

        .. XXX a comment
           continued
        Done.
    ''')
    assert plain_text(rst) == ("Use OrderedDict or dict (see PEP 468 and the docs):\n\n"
                               "   d = {}\n   print(*args, **kwargs)\n\n"
                               "   This is important and bold.\n\nNew in version 3.7\n\nDone.")


def test_doc_entries_with_modules_nesting_and_shared_directives():
    page = textwrap.dedent('''\
        .. module:: shapes

        .. class:: Circle(radius)

           A round shape.

           .. method:: area()

              The area.

        .. class:: Square
                   Rectangle

           Four sides.

        .. function:: scale(shape, k)
           :noindex:

           A duplicate.

        .. currentmodule:: None

        .. function:: len(s)

           The length.
    ''')
    entries = doc_entries(page, "library/shapes")
    assert [(e.name, e.kind, e.module) for e in entries] == [
        ("shapes.Circle", "class", "shapes"), ("shapes.Circle.area", "method", "shapes"),
        ("shapes.Square", "class", "shapes"), ("shapes.Rectangle", "class", "shapes"),
        ("builtins.len", "function", "builtins")]
    assert entries[0].text.startswith("Circle(radius)\n\nA round shape.") and "The area." in entries[0].text
    assert entries[1].text == "area()\n\nThe area."
    assert entries[3].text == "Rectangle\n\nFour sides."
    assert entries[4].qualname == "len"
