"""The run folder's owner: what its ``meta.json`` says, typed, and which tables it holds.

Every reader of a corpus run folder goes through this module: :func:`read_run_meta` gives a frozen
:class:`RunMeta` (its :class:`RunSettings`: model, dtype, device, corpus, aggregate, alignment options,
window, and the options later features add: ``--per-layer`` and ``--forks``), :func:`run_language` the
language of its snippets, and :data:`TABLE_SPECS` registers, in one place, every table a run folder can hold:
the four core tables written per chunk (``snippets`` last: it marks a chunk done), and the side tables that
later features add (``digest``, ``layers``, ``forks``, ``attribution``), with the module that writes each.
:func:`finished_parts` lists the parts of complete chunks, which is what every reader reads.

The JSON stays as earlier versions wrote it: :meth:`RunSettings.as_dict` gives back the very dict a
folder's settings were written as (a per-layer run still records ``"layers": true``, absent otherwise, so
folders made before this module are resumed, not refused); :meth:`RunMeta.from_dict` accepts every format
written so far (a test keeps a folder of format 2 as a fixture) and refuses, with a :class:`CorpusError`
naming the folder and the fix, a meta.json that names no model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asc.errors import CorpusError

if TYPE_CHECKING:
    from asc.align import AlignOptions

__all__ = ["CORE_TABLES", "TABLE_SPECS", "ModelMeta", "RunMeta", "RunSettings", "TableSpec", "finished_parts",
           "meta_problem", "read_meta", "read_run_meta", "run_language"]

CORE_TABLES = ("tokens", "nodes", "concepts", "snippets")  # write order: snippets last marks a chunk done


@dataclass(frozen=True)
class TableSpec:
    """A table a run folder can hold: its folder ``name``, the ``columns`` every part must have, the module that
    writes it, and the settings key that says a run has it (None: every run has it, or its own file says so)."""

    name: str
    columns: tuple[str, ...]
    written_by: str
    settings_key: str | None = None
    core: bool = False


TABLE_SPECS: dict[str, TableSpec] = {spec.name: spec for spec in (
    TableSpec("snippets", ("id", "language", "loss", "n_tokens", "n_nodes", "ast_levels", "source"),
              "asc.corpus.tables", core=True),
    TableSpec("tokens", ("snippet_id", "index", "prob"), "asc.corpus.tables", core=True),
    TableSpec("nodes", ("snippet_id", "type", "category", "value"), "asc.corpus.tables", core=True),
    TableSpec("concepts", ("snippet_id", "kind", "name", "value"), "asc.corpus.tables", core=True),
    TableSpec("digest", ("snippet", "category", "type", "value", "first_snippet", "first_category", "first_type"),
              "asc.corpus.digest"),
    TableSpec("layers", ("snippet_id", "node", "layer", "value"), "asc.corpus.depth", settings_key="layers"),
    TableSpec("forks", ("snippet_id", "category", "n_tokens", "n_forks"), "asc.corpus.forks", settings_key="forks"),
    TableSpec("attribution", (), "asc.why.corpus_run"),  # attribution/settings.json says it was made
)}


@dataclass(frozen=True)
class ModelMeta:
    """The model a run was made with, as :meth:`asc.models.ModelBundle.describe` recorded it: ``name``,
    ``dtype`` (None in runs from before dtypes were recorded: float32), ``device``, and every recorded field
    in ``fields`` (layers, parameters, source, context_length, kind)."""

    name: str
    dtype: str | None = None
    device: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> ModelMeta:
        dtype, device = entry.get("dtype"), entry.get("device")
        return cls(name=str(entry["name"]), dtype=None if dtype is None else str(dtype),
                   device=None if device is None else str(device), fields=dict(entry))


@dataclass(frozen=True)
class RunSettings:
    """What decides whether a folder may be resumed (:func:`asc.corpus.resume.settings_differences`): the
    ``format``, the ``model``, the ``corpus`` spec, the ``aggregate``, the alignment options (``align``, as
    :class:`asc.align.AlignOptions`' fields), ``max_window``, and the options of later features:
    ``per_layer`` (``--per-layer``; recorded as ``"layers"``) and ``forks`` (the fork thresholds, or None)."""

    format: int
    model: ModelMeta
    corpus: str = ""
    aggregate: str = "median"
    align: Mapping[str, str] = field(default_factory=dict)
    max_window: int | None = None
    per_layer: bool = False
    forks: Mapping[str, float] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> RunSettings:
        window = settings.get("max_window")
        forks = settings.get("forks")
        if forks is not None and not isinstance(forks, dict):
            raise CorpusError(f"meta.json records broken fork thresholds ({forks!r}); delete the folder and run the "
                              "evaluation again")
        return cls(format=int(settings.get("format", 1)), model=ModelMeta.from_dict(settings["model"]),
                   corpus=str(settings.get("corpus", "")), aggregate=str(settings.get("aggregate", "median")),
                   align=dict(settings.get("align") or {}), max_window=None if window is None else int(window),
                   per_layer=bool(settings.get("layers")), forks=dict(forks) if isinstance(forks, dict) else None,
                   raw=dict(settings))

    @property
    def align_options(self) -> AlignOptions:
        """:attr:`align` as :class:`asc.align.AlignOptions` (which checks the values)."""
        from asc.align import AlignOptions

        return AlignOptions(**self.align)  # type: ignore[arg-type]  # str values: AlignOptions checks them

    def as_dict(self) -> dict[str, Any]:
        """The settings as meta.json records them (the dict they were read from, when they were read)."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"format": self.format, "model": dict(self.model.fields) or {"name": self.model.name},
                               "corpus": self.corpus, "aggregate": self.aggregate, "align": dict(self.align),
                               "max_window": self.max_window}
        out |= {"layers": True} if self.per_layer else {}  # absent, not False: older runs stay resumable
        return out | ({"forks": dict(self.forks)} if self.forks is not None else {})


@dataclass(frozen=True)
class RunMeta:
    """A run folder's meta.json: its :class:`RunSettings`, the planned ``corpus`` (digest, n_snippets, file),
    when it was ``started`` and ``finished`` (None while a run is incomplete), and ``n_planned`` snippets."""

    settings: RunSettings
    corpus: Mapping[str, Any] = field(default_factory=dict)
    started: str = ""
    finished: str | None = None
    n_planned: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def model(self) -> ModelMeta:
        return self.settings.model

    @property
    def model_name(self) -> str:
        return self.settings.model.name

    @classmethod
    def from_dict(cls, meta: Mapping[str, Any], folder: str | Path = "") -> RunMeta:
        """A parsed meta.json; one that is not a corpus run's is a CorpusError naming ``folder`` and the fix."""
        problem = meta_problem(meta)
        if problem:
            raise CorpusError(f"run folder {folder} is broken: {problem}; delete it and run the evaluation again")
        planned, finished = meta.get("n_planned"), meta.get("finished")
        try:
            settings = RunSettings.from_dict(meta["settings"])
        except (TypeError, ValueError) as err:
            raise CorpusError(f"run folder {folder} is broken: meta.json's settings cannot be read ({err}); delete it "
                              "and run the evaluation again") from None
        corpus = meta.get("corpus")
        return cls(settings=settings, corpus=dict(corpus) if isinstance(corpus, dict) else {},
                   started=str(meta.get("started", "")), finished=None if not finished else str(finished),
                   n_planned=planned if isinstance(planned, int) and not isinstance(planned, bool) else None,
                   raw=dict(meta))

    def as_dict(self) -> dict[str, Any]:
        """The meta.json as written (keys this version does not know are kept)."""
        out = dict(self.raw) | {"settings": self.settings.as_dict(), "corpus": dict(self.corpus)}
        out |= {"started": self.started} if self.started else {}
        out |= {"n_planned": self.n_planned} if self.n_planned is not None else {}
        out.pop("finished", None)
        return out | ({"finished": self.finished} if self.finished else {})


def read_meta(path: str | Path) -> dict[str, Any]:
    """A run folder's meta.json as parsed, or CorpusError naming the folder when it is missing or not a JSON
    object (writers read it raw to keep what they do not know; readers use :func:`read_run_meta`)."""
    meta_path = Path(path) / "meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{path} is not a run folder (no meta.json); create one with `python -m asc eval`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise CorpusError(f"{meta_path} cannot be read ({str(err)[:200]}); delete the folder and run the evaluation "
                          "again") from None
    if not isinstance(meta, dict):
        raise CorpusError(f"{meta_path} is not a JSON object; delete the folder and run the evaluation again")
    return meta


def meta_problem(meta: Mapping[str, Any]) -> str | None:
    """Why a parsed meta.json is not a corpus run's (None: it is)."""
    settings = meta.get("settings")
    if not isinstance(settings, dict):
        return "meta.json has no settings"
    if not isinstance(settings.get("model"), dict) or not isinstance(settings["model"].get("name"), str):
        return "meta.json names no model"
    return None


def read_run_meta(path: str | Path) -> RunMeta:
    """The run folder's meta.json, typed; any problem is a CorpusError naming the folder and the fix."""
    return RunMeta.from_dict(read_meta(path), path)


def finished_parts(path: str | Path, table: str = "snippets") -> list[Path]:
    """The parts of ``table`` that belong to finished chunks (those with a ``snippets`` part), in order; a part of
    a finished chunk that ``table`` lacks is left out (the caller says whether that is an error)."""
    if table not in TABLE_SPECS:
        raise CorpusError(f"no run table {table!r}; choose one of {', '.join(TABLE_SPECS)}")
    done = sorted((Path(path) / "snippets").glob("part-*.parquet"))
    return done if table == "snippets" else [p for p in (Path(path) / table / d.name for d in done) if p.is_file()]


def run_language(path: str | Path) -> str:
    """The language of a run's snippets (:func:`asc.concepts.language_of` over every finished part)."""
    import pyarrow.parquet as pq

    from asc.concepts import language_of

    languages: set[str] = set()
    for part in finished_parts(path):
        with pq.ParquetFile(part) as file:
            languages.update(str(x) for x in file.read(columns=["language"])["language"].to_pylist())
    return language_of(sorted(languages))
