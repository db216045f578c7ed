"""User-study definitions (paper section VI-D, Table III): load, validate, prepare once, freeze.

A study file (YAML, or JSON with the same keys; chosen by extension) describes what every
participant sees and answers. ``assets/studies/astxplainer.yaml`` is the paper's design::

    id: astxplainer-viz            # letters, digits, '.', '_', '-'; keys the database rows
    title: How useful are AST visualizations?
    model: smollm2-135m            # anything load_model accepts
    language: python               # optional, default python
    aggregate: median              # optional: median | mean | max (node values)
    intro: Markdown shown first    # optional
    consent: Markdown the participant agrees to (required)
    thanks: Markdown on the last page  # optional
    collect_personal_data: false   # default false: nothing personal is stored
    personal_fields:               # only with collect_personal_data: true
      - {id: email, text: Your e-mail for the raffle, required: false}
    groups:                        # between-subjects: each participant sees one group's view
      - {id: C, name: Control, view: none}   # view: none | sequence | partial | complete
      - {id: S1, name: Sequence, view: sequence}
    background:                    # asked once; choices omitted = free-text answer
      - {id: python, text: How proficient are you in Python?, choices: [Novice, Intermediate, Expert]}
    ratings:                       # per sample; 5-point Likert, stored as 1..5
      - {id: useful, text: The visualization is useful to explain the model's prediction}
    comment: {id: comment, text: Anything else?}   # optional per-sample free text, never required
    samples:
      - id: count                  # given completion: shown verbatim
        prompt: "def count(xs):\\n"
        completion: "    return len(xs)\\n"
      - id: fib                    # no completion: the model completes it once, at preparation
        prompt: "def fib(n):\\n"
        max_new_tokens: 64         # optional, default 64

Questions (background, ratings, personal fields) take ``required`` (default true; the comment is
never required). Every id is unique in its list and question ids are unique across all lists. A
malformed file raises :class:`InputError` naming the file and the field, e.g.
``study.yaml: samples[2].prompt: missing``; unknown keys are refused (they are usually typos).

Preparation (:mod:`asc.study.frozen`, :func:`prepare_study`) completes the samples without a completion once (greedy, so
deterministic; the prompt's trailing whitespace is left to the model as in the inspector), scores
the exact token ids once, and :func:`save_frozen` writes everything needed to draw the views to a
JSON file, atomically. Participants are then shown the frozen content, rebuilt without a model by
:func:`frozen_explanation`, so everyone sees identical samples. The frozen file records
:func:`content_hash` of the definition (id, model, language and samples: what the frozen content
depends on; question wording and groups can be edited without preparing again) and
:func:`load_frozen` refuses a file whose hash differs. ``python -m asc.study prepare STUDY``
prepares from the command line (``--out`` defaults to :func:`frozen_path`: ``<id>.frozen.json`` in
:func:`asc.paths.study_dir`, ``runs/study`` unless configured: the folder of the default SQLite database).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from asc.confined import read_user_file
from asc.errors import InputError
from asc.paths import DEFAULT_STUDY

__all__ = ["STUDY_VIEWS", "LIKERT_LABELS", "DEFAULT_STUDY", "Group", "Question", "Sample", "StudyDefinition", "load_study",
           "parse_study"]

STUDY_VIEWS = ("none", "sequence", "partial", "complete")
LIKERT_LABELS = ("Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree")  # values 1..5
MAX_STUDY_BYTES = 16 * 2**20  # one study file (its samples are code snippets)
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    view: str  # one of STUDY_VIEWS


@dataclass(frozen=True)
class Question:
    """A background question (``choices``; empty = free text), a Likert rating (``scale``), a personal
    field or the per-sample comment (free text)."""

    id: str
    text: str
    required: bool = True
    choices: tuple[str, ...] = ()
    scale: str | None = None  # "likert5" for ratings

    @property
    def kind(self) -> str:
        return "likert" if self.scale else ("choice" if self.choices else "text")

    @property
    def labels(self) -> tuple[str, ...]:
        """Likert labels for values 1..5 (empty for other questions)."""
        return LIKERT_LABELS if self.scale else ()


@dataclass(frozen=True)
class Sample:
    id: str
    prompt: str
    completion: str | None = None
    max_new_tokens: int = 64


@dataclass(frozen=True)
class StudyDefinition:
    id: str
    title: str
    model: str
    consent: str
    groups: tuple[Group, ...]
    background: tuple[Question, ...]
    ratings: tuple[Question, ...]
    samples: tuple[Sample, ...]
    comment: Question | None = None
    language: str = "python"
    aggregate: str = "median"
    intro: str = ""
    thanks: str = "Thank you for taking part."
    collect_personal_data: bool = False
    personal_fields: tuple[Question, ...] = ()
    path: str | None = field(default=None, compare=False)

    def group(self, group_id: str) -> Group:
        return next(g for g in self.groups if g.id == group_id)

    def sample(self, sample_id: str) -> Sample:
        return next(s for s in self.samples if s.id == sample_id)


# ---------------------------------------------------------------- parsing and validation


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, what: str):
        raise InputError(f"{self.source}: {where}: {what}" if where else f"{self.source}: {what}")

    def mapping(self, value, where: str, required: set[str], optional: set[str]) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a mapping of keys, got {type(value).__name__}")
        for key in value:
            if key not in required | optional:
                allowed = ", ".join(sorted(required | optional))
                self.fail(_join(where, str(key)), f"unknown key (allowed: {allowed})")
        for key in sorted(required):
            if value.get(key) is None:
                self.fail(_join(where, key), "missing")
        return value

    def text(self, value, where: str, default: str | None = None, allow_empty: bool = False) -> str:
        if value is None and default is not None:
            return default
        if not isinstance(value, str):
            self.fail(where, f"expected text, got {type(value).__name__}")
        if not allow_empty and not value.strip():
            self.fail(where, "empty")
        return value

    def ident(self, value, where: str) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        value = self.text(value, where)
        if not _ID.match(value):
            self.fail(where, f"{value!r} is not a valid id (use 1-64 letters, digits, '.', '_', '-')")
        return value

    def boolean(self, value, where: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {value!r}")
        return value

    def items(self, value, where: str, allow_empty: bool = False) -> list:
        if not isinstance(value, list):
            self.fail(where, f"expected a list, got {type(value).__name__}")
        if not value and not allow_empty:
            self.fail(where, "empty list")
        return value

    def unique(self, objs, where: str, seen: dict[str, str] | None = None) -> None:
        seen = {} if seen is None else seen
        for i, obj in enumerate(objs):
            if obj.id in seen:
                self.fail(f"{where}[{i}].id", f"duplicate id {obj.id!r} (already used by {seen[obj.id]})")
            seen[obj.id] = f"{where}[{i}]"


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _question(ck: _Checker, raw, where: str, kind: str) -> Question:
    keys = {"required"} | ({"choices"} if kind == "background" else set()) | ({"scale"} if kind == "rating" else set())
    raw = ck.mapping(raw, where, {"id", "text"}, keys)
    qid, text = ck.ident(raw["id"], f"{where}.id"), ck.text(raw["text"], f"{where}.text")
    if kind == "comment":
        if ck.boolean(raw.get("required"), f"{where}.required", False):
            ck.fail(f"{where}.required", "the comment is always optional (set required: false or leave it out)")
        return Question(qid, text, required=False)
    required = ck.boolean(raw.get("required"), f"{where}.required", kind != "personal")
    choices: tuple[str, ...] = ()
    if raw.get("choices") is not None:
        items = ck.items(raw["choices"], f"{where}.choices")
        choices = tuple(ck.text(c, f"{where}.choices[{j}]") for j, c in enumerate(items))
        if len(set(choices)) != len(choices):
            ck.fail(f"{where}.choices", "duplicate choice")
    scale = None
    if kind == "rating":
        scale = raw.get("scale", "likert5")
        if scale != "likert5":
            ck.fail(f"{where}.scale", f"{scale!r} is not supported (use likert5)")
    return Question(qid, text, required=required, choices=choices, scale=scale)


def parse_study(data: Any, source: str = "study") -> StudyDefinition:
    """Validate a study given as parsed YAML/JSON (``source`` names it in error messages)."""
    from asc.concepts import AGGREGATES
    from asc.syntax import LANGUAGES

    ck = _Checker(source)
    if data is None:
        ck.fail("", "the study file is empty")
    raw = ck.mapping(data, "", {"id", "title", "model", "consent", "groups", "background", "ratings", "samples"},
                     {"language", "aggregate", "intro", "thanks", "comment", "collect_personal_data",
                      "personal_fields"})
    language = ck.text(raw.get("language"), "language", "python")
    if language not in LANGUAGES:
        ck.fail("language", f"{language!r} is not one of {', '.join(LANGUAGES)}")
    aggregate = ck.text(raw.get("aggregate"), "aggregate", "median")
    if aggregate not in AGGREGATES:
        ck.fail("aggregate", f"{aggregate!r} is not one of {', '.join(AGGREGATES)}")
    groups = []
    for i, g in enumerate(ck.items(raw["groups"], "groups")):
        w = f"groups[{i}]"
        g = ck.mapping(g, w, {"id", "view"}, {"name"})
        view = g["view"]
        if view not in STUDY_VIEWS:
            ck.fail(f"{w}.view", f"{view!r} is not one of {', '.join(STUDY_VIEWS)}")
        gid = ck.ident(g["id"], f"{w}.id")
        groups.append(Group(gid, ck.text(g.get("name"), f"{w}.name", gid), view))
    ck.unique(groups, "groups")
    background = [_question(ck, q, f"background[{i}]", "background")
                  for i, q in enumerate(ck.items(raw["background"], "background", allow_empty=True))]
    ratings = [_question(ck, q, f"ratings[{i}]", "rating") for i, q in enumerate(ck.items(raw["ratings"], "ratings"))]
    comment = _question(ck, raw["comment"], "comment", "comment") if raw.get("comment") is not None else None
    collect = ck.boolean(raw.get("collect_personal_data"), "collect_personal_data", False)
    personal = [_question(ck, q, f"personal_fields[{i}]", "personal")
                for i, q in enumerate(ck.items(raw.get("personal_fields") or [], "personal_fields", allow_empty=True))]
    if personal and not collect:
        ck.fail("personal_fields", "given, but collect_personal_data is false (set it to true to store them)")
    seen: dict[str, str] = {}
    ck.unique(background, "background", seen)
    ck.unique(ratings, "ratings", seen)
    ck.unique([comment] if comment else [], "comment", seen)
    ck.unique(personal, "personal_fields", seen)
    samples = []
    for i, s in enumerate(ck.items(raw["samples"], "samples")):
        w = f"samples[{i}]"
        s = ck.mapping(s, w, {"id", "prompt"}, {"completion", "max_new_tokens"})
        n = s.get("max_new_tokens", 64)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1024:
            ck.fail(f"{w}.max_new_tokens", f"expected a whole number from 1 to 1024, got {n!r}")
        completion = s.get("completion")
        if completion is not None:
            completion = ck.text(completion, f"{w}.completion", allow_empty=True)
        samples.append(Sample(ck.ident(s["id"], f"{w}.id"), ck.text(s["prompt"], f"{w}.prompt"), completion, n))
    ck.unique(samples, "samples")
    return StudyDefinition(
        id=ck.ident(raw["id"], "id"), title=ck.text(raw["title"], "title"), model=ck.text(raw["model"], "model"),
        consent=ck.text(raw["consent"], "consent"), groups=tuple(groups), background=tuple(background),
        ratings=tuple(ratings), samples=tuple(samples), comment=comment, language=language, aggregate=aggregate,
        intro=ck.text(raw.get("intro"), "intro", "", allow_empty=True),
        thanks=ck.text(raw.get("thanks"), "thanks", "Thank you for taking part."),
        collect_personal_data=collect, personal_fields=tuple(personal))


def load_study(path: str | Path = DEFAULT_STUDY) -> StudyDefinition:
    """Read and validate a study file (``.yaml``/``.yml`` or ``.json``); errors name the file and field."""
    path = Path(path)
    name = path.name
    data = read_user_file(path, MAX_STUDY_BYTES, "study file", fix="give a .yaml or .json study file",
                          missing=f"{path}: study file not found")  # a FIFO or a device: said, never opened
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name}: cannot read the study file ({err})") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"{name}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
        except RecursionError:
            raise InputError(f"{name}: nested too deeply to be a study file; see {DEFAULT_STUDY.name}") from None
    elif path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            raise InputError(f"{name}: not valid YAML{at}: {getattr(err, 'problem', None) or err}") from None
        except RecursionError:
            raise InputError(f"{name}: nested too deeply to be a study file; see {DEFAULT_STUDY.name}") from None
    else:
        raise InputError(f"{name}: a study file must end in .yaml, .yml or .json")
    return replace(parse_study(data, name), path=str(path))
