"""Participants and answers of a user study (:mod:`asc.study.definition`) in a SQL database through SQLAlchemy.

``StudyStore(url, study)`` opens (and creates when missing) three tables: ``participants`` (one row
per anonymous code: group, consent/background/finish times, personal data only when the study asks
for it), ``answers`` (one row per question answered: background answers have ``sample_id = ''``;
``UNIQUE(code, sample_id, question_id)``) and ``assignments`` (participants assigned per study and
group). The URL is any SQLAlchemy URL (``postgresql+psycopg://...``); without one the store uses
``$ASC_STUDY_DB`` or else :func:`default_url` of :func:`asc.paths.study_dir` (``$ASC_STUDY_DIR``
or ``runs/study``): a SQLite file, opened in WAL mode (readers never block the writer) with a busy
timeout, so several server threads or processes can share it. ``sqlite://`` (in memory) is for
single-threaded experiments only.

Every submission is validated against the study (unknown question, missing required answer, Likert
value outside 1..5, choice not offered: :class:`InputError` naming the question) and stored in one
transaction, so an answer is saved when it is submitted and a page is all or nothing. Submitting
the same page again (double click, a second tab, a reload) keeps the first answers: the ``save_*``
methods then return False and store nothing. Optional questions left blank are stored with value
NULL, so every submitted page has one row per question.

Assignment is balanced under concurrency: :meth:`StudyStore.new_participant` takes the write lock
first (SQLite: ``BEGIN IMMEDIATE``; other databases: an ``UPDATE`` of the study's ``assignments``
rows, which locks them until commit), then reads the counts and puts the participant in a group
with the fewest participants so far (ties broken at random). Balance counts assigned participants,
including those who drop out.

``responses()`` (long form, one row per answer) and ``participants()`` are pandas frames (their
summaries, Table III, are in :mod:`asc.study.tables`); :meth:`StudyStore.export_csv` writes all responses.
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.pool import StaticPool

from asc.atomic import write_atomic
from asc.errors import InputError
from asc.export import csv_text
from asc.paths import study_db_url, study_dir
from asc.study.definition import LIKERT_LABELS, Question, StudyDefinition

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["StudyStore", "ParticipantState", "default_url", "normalize_code"]

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: easy to read back and type
CODE_LENGTH = 8
MAX_TEXT = 5000  # characters of one free-text answer
AGREEMENT_LEVELS = tuple(reversed(LIKERT_LABELS))  # Table III order: Strongly agree .. Strongly disagree
_RNG = random.SystemRandom()

metadata = MetaData()
participants_table = Table(
    "participants", metadata,
    Column("code", String(16), primary_key=True),
    Column("study_id", String(64), nullable=False, index=True),
    Column("group_id", String(64), nullable=False),
    Column("created_at", DateTime, nullable=False),  # UTC
    Column("consent_at", DateTime),
    Column("background_done_at", DateTime),
    Column("finished_at", DateTime),
    Column("personal", JSON),  # only when the study collects personal data
)
answers_table = Table(
    "answers", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("code", String(16), ForeignKey("participants.code"), nullable=False, index=True),
    Column("sample_id", String(64), nullable=False),  # '' for background answers
    Column("question_id", String(64), nullable=False),
    Column("value", Text),  # NULL: optional question left blank
    Column("submitted_at", DateTime, nullable=False),
    UniqueConstraint("code", "sample_id", "question_id", name="one_answer_per_question"),
)
assignments_table = Table(
    "assignments", metadata,
    Column("study_id", String(64), primary_key=True),
    Column("group_id", String(64), primary_key=True),
    Column("n", Integer, nullable=False),
)


def default_url(folder: str | Path) -> str:
    """``sqlite:///<folder>/study.sqlite`` (the folder is created)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'study.sqlite').resolve()}"


def normalize_code(code: str) -> str:
    """A typed participant code as stored: upper case, spaces and dashes removed."""
    return "".join(ch for ch in str(code or "").upper() if ch not in " -\t\n")


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class ParticipantState:
    """Where a participant stands; ``step`` is the page to show: consent, background, sample or done."""

    code: str
    group_id: str
    group_name: str
    view: str
    consented: bool
    background_done: bool
    answered: tuple[str, ...]  # sample ids answered, in study order
    next_sample: str | None  # the next sample to show, None when all are answered
    finished: bool

    @property
    def step(self) -> str:
        if self.finished:
            return "done"
        if not self.consented:
            return "consent"
        if not self.background_done:
            return "background"
        return "sample" if self.next_sample else "done"


def _sqlite_engine(url: str, timeout_s: float):
    memory = url in ("sqlite://", "sqlite:///:memory:")
    kwargs = {"poolclass": StaticPool} if memory else {"pool_size": 8, "max_overflow": 32, "pool_timeout": 60}
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": timeout_s}, **kwargs)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (pysqlite's own is deferred and late)
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        # writers take the write lock up front: no deadlock-prone read-then-upgrade, waits use the busy timeout
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("asc_write") else "BEGIN")

    return engine


class StudyStore:
    """Participants and answers of ``study`` in the database at ``url`` (see module doc).

    Thread-safe: one store may serve every session of a server, and several stores (threads or
    processes) may share one database.
    """

    def __init__(self, url: str | None, study: StudyDefinition, *, timeout_s: float = 30.0):
        self.url = str(url or study_db_url() or default_url(study_dir()))
        self.study = study
        self._sqlite = self.url.startswith("sqlite")
        self.engine = _sqlite_engine(self.url, timeout_s) if self._sqlite else create_engine(self.url,
                                                                                            pool_pre_ping=True)
        for attempt in range(3):  # concurrent first openings may race to create the tables
            try:
                with self._tx(write=True) as conn:
                    metadata.create_all(conn)
                    have = set(conn.execute(select(assignments_table.c.group_id)
                                            .where(assignments_table.c.study_id == study.id)).scalars())
                    for g in study.groups:
                        if g.id not in have:
                            conn.execute(insert(assignments_table).values(study_id=study.id, group_id=g.id, n=0))
                break
            except (IntegrityError, OperationalError, ProgrammingError):
                if attempt == 2:
                    raise

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator:
        with self.engine.connect() as conn:
            if write:
                conn.execution_options(asc_write=True)
            with conn.begin():
                yield conn

    # ------------------------------------------------------------ participants

    def new_participant(self) -> str:
        """Create an anonymous participant in a group with the fewest participants; returns the code."""
        groups = [g.id for g in self.study.groups]
        a = assignments_table
        mine = (a.c.study_id == self.study.id) & a.c.group_id.in_(groups)
        for _ in range(8):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            try:
                with self._tx(write=True) as conn:
                    conn.execute(update(a).where(mine).values(n=a.c.n))  # lock the counters first
                    counts = dict(conn.execute(select(a.c.group_id, a.c.n).where(mine).with_for_update()).all())
                    low = min(counts.get(g, 0) for g in groups)
                    group = _RNG.choice([g for g in groups if counts.get(g, 0) == low])
                    conn.execute(update(a).where(mine & (a.c.group_id == group)).values(n=a.c.n + 1))
                    conn.execute(insert(participants_table).values(code=code, study_id=self.study.id, group_id=group,
                                                                  created_at=_now()))
                return code
            except IntegrityError:  # the random code exists already: draw another
                continue
        raise RuntimeError("could not draw an unused participant code")

    def _participant(self, conn, code: str):
        p = participants_table
        return conn.execute(select(p).where((p.c.code == code) & (p.c.study_id == self.study.id))).first()

    def state(self, code: str) -> ParticipantState | None:
        """The participant's progress, or None for a code unknown in this study."""
        code = normalize_code(code)
        with self._tx() as conn:
            row = self._participant(conn, code)
            if row is None:
                return None
            a = answers_table
            done = set(conn.execute(select(a.c.sample_id).distinct()
                                    .where((a.c.code == code) & (a.c.sample_id != ""))).scalars())
        answered = tuple(s.id for s in self.study.samples if s.id in done)
        nxt = next((s.id for s in self.study.samples if s.id not in done), None)
        group = next((g for g in self.study.groups if g.id == row.group_id), None)
        return ParticipantState(code=code, group_id=row.group_id, group_name=group.name if group else row.group_id,
                                view=group.view if group else "none", consented=row.consent_at is not None,
                                background_done=row.background_done_at is not None, answered=answered,
                                next_sample=nxt, finished=row.finished_at is not None)

    def _require(self, conn, code: str):
        row = self._participant(conn, code)
        if row is None:
            raise InputError(f"unknown participant code {code!r}: check the code or start the study again")
        return row

    def consent(self, code: str) -> bool:
        """Record consent; False when it was recorded before (the first time is kept)."""
        code = normalize_code(code)
        p = participants_table
        with self._tx(write=True) as conn:
            if self._require(conn, code).consent_at is not None:
                return False
            conn.execute(update(p).where(p.c.code == code).values(consent_at=_now()))
        return True

    def save_background(self, code: str, answers: dict, personal: dict | None = None) -> bool:
        """Store the background answers (and personal fields, only if the study collects them).

        Returns False and stores nothing when the background was submitted before."""
        code = normalize_code(code)
        values = _validate(self.study.background, answers, "background question")
        if personal and not self.study.collect_personal_data:
            raise InputError("this study does not collect personal data: leave the personal fields out")
        info = None
        if self.study.collect_personal_data:
            info = _validate(self.study.personal_fields, personal or {}, "personal field")
        p = participants_table
        with self._tx(write=True) as conn:
            row = self._require(conn, code)
            if row.consent_at is None:
                raise InputError("consent first: the background questions come after the consent page")
            if row.background_done_at is not None:
                return False
            now = _now()
            self._insert(conn, code, "", values, now)
            conn.execute(update(p).where(p.c.code == code).values(background_done_at=now, personal=info))
        return True

    def save_ratings(self, code: str, sample_id: str, answers: dict) -> bool:
        """Store one sample's ratings (and comment); finishes the participant after the last sample.

        Returns False and stores nothing when this sample was answered before."""
        code = normalize_code(code)
        if sample_id not in {s.id for s in self.study.samples}:
            raise InputError(f"sample {sample_id!r} is not part of study {self.study.id!r}")
        questions = self.study.ratings + ((self.study.comment,) if self.study.comment else ())
        values = _validate(questions, answers, "rating question")
        a, p = answers_table, participants_table
        with self._tx(write=True) as conn:
            row = self._require(conn, code)
            if row.background_done_at is None:
                raise InputError("answer the background questions first")
            done = set(conn.execute(select(a.c.sample_id).distinct().where((a.c.code == code) & (a.c.sample_id != "")))
                       .scalars())
            if sample_id in done:
                return False
            now = _now()
            self._insert(conn, code, sample_id, values, now)
            if all(s.id in done | {sample_id} for s in self.study.samples) and row.finished_at is None:
                conn.execute(update(p).where(p.c.code == code).values(finished_at=now))
        return True

    def finish(self, code: str) -> bool:
        """Mark the participant finished (done automatically after the last sample); False if already."""
        code = normalize_code(code)
        state = self.state(code)
        if state is None:
            raise InputError(f"unknown participant code {code!r}: check the code or start the study again")
        if not state.background_done:
            raise InputError("not finished: answer the background questions first")
        if state.next_sample is not None:
            raise InputError(f"not finished: sample {state.next_sample!r} is unanswered")
        p = participants_table
        with self._tx(write=True) as conn:
            res = conn.execute(update(p).where((p.c.code == code) & p.c.finished_at.is_(None))
                               .values(finished_at=_now()))
        return res.rowcount > 0

    @staticmethod
    def _insert(conn, code: str, sample_id: str, values: dict, now: datetime) -> None:
        rows = [{"code": code, "sample_id": sample_id, "question_id": q, "value": v, "submitted_at": now}
                for q, v in values.items()]
        if rows:
            conn.execute(insert(answers_table), rows)

    # ------------------------------------------------------------ analysis

    def participants(self) -> pd.DataFrame:
        """One row per participant: code, group, created/consent/background/finished times (+ personal)."""
        import pandas as pd

        p = participants_table
        cols = [p.c.code, p.c.group_id.label("group"), p.c.created_at, p.c.consent_at, p.c.background_done_at,
                p.c.finished_at] + ([p.c.personal] if self.study.collect_personal_data else [])
        with self._tx() as conn:
            rows = conn.execute(select(*cols).where(p.c.study_id == self.study.id).order_by(p.c.created_at)).all()
        return pd.DataFrame(rows, columns=[c.name for c in cols])

    def responses(self) -> pd.DataFrame:
        """Every answer, long form: code, group, kind (background/rating/comment), sample_id (missing for
        background), question_id, value (text; Likert as 1..5; missing = left blank), submitted_at (UTC)."""
        import pandas as pd

        a, p = answers_table, participants_table
        with self._tx() as conn:
            rows = conn.execute(select(a.c.code, p.c.group_id, a.c.sample_id, a.c.question_id, a.c.value,
                                       a.c.submitted_at).join(p, p.c.code == a.c.code)
                                .where(p.c.study_id == self.study.id).order_by(a.c.id)).all()
        df = pd.DataFrame(rows, columns=["code", "group", "sample_id", "question_id", "value", "submitted_at"])
        kinds = {q.id: "rating" for q in self.study.ratings}
        if self.study.comment:
            kinds[self.study.comment.id] = "comment"
        df.insert(2, "kind", ["background" if s == "" else kinds.get(q, "other")
                              for s, q in zip(df["sample_id"], df["question_id"])])
        df["sample_id"] = df["sample_id"].where(df["sample_id"] != "", None)
        return df

    def progress(self) -> pd.DataFrame:
        """Per group (study order): assigned, consented, background_done and finished participants."""
        import pandas as pd

        p = participants_table
        with self._tx() as conn:
            rows = conn.execute(select(p.c.group_id, func.count(), func.count(p.c.consent_at),
                                       func.count(p.c.background_done_at), func.count(p.c.finished_at))
                                .where(p.c.study_id == self.study.id).group_by(p.c.group_id)).all()
        got = {r[0]: r[1:] for r in rows}
        return pd.DataFrame([(g.id, g.name, g.view, *got.get(g.id, (0, 0, 0, 0))) for g in self.study.groups],
                            columns=["group", "name", "view", "assigned", "consented", "background_done", "finished"])

    def export_csv(self, path: str | Path) -> Path:
        """All responses (:meth:`responses`) as CSV (spreadsheet-safe: :func:`asc.export.csv_text`; a blank answer and
        a background row's sample read ``absent``), written atomically."""
        text = csv_text(self.responses())
        return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _validate(questions: tuple[Question, ...], answers: dict, what: str) -> dict[str, str | None]:
    """Answers as stored text (None for a blank optional one), or InputError naming the question."""
    answers = dict(answers or {})
    known = {q.id for q in questions}
    unknown = sorted(str(k) for k in answers if k not in known)
    if unknown:
        raise InputError(f"unknown {what} {', '.join(map(repr, unknown))} (expected {', '.join(sorted(known))})")
    out: dict[str, str | None] = {}
    missing: list[str] = []
    for q in questions:
        value = answers.get(q.id)
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
            if q.required:
                missing.append(q.text)
            out[q.id] = None
            continue
        out[q.id] = _check_value(q, value)
    if missing:
        raise InputError("please answer: " + "; ".join(f"“{t}”" for t in missing))
    return out


def _check_value(q: Question, value) -> str:
    if q.kind == "likert":
        if isinstance(value, str) and value in LIKERT_LABELS:
            return str(LIKERT_LABELS.index(value) + 1)
        try:
            number = int(value) if not isinstance(value, bool) and float(value) == int(float(value)) else None
        except (TypeError, ValueError, OverflowError):
            number = None
        if number is None or not 1 <= number <= 5:
            raise InputError(f"“{q.text}”: {value!r} is not on the scale (1 = {LIKERT_LABELS[0]} .. "
                             f"5 = {LIKERT_LABELS[-1]})")
        return str(number)
    if not isinstance(value, str):
        raise InputError(f"“{q.text}”: expected text, got {value!r}")
    if q.kind == "choice" and value not in q.choices:
        raise InputError(f"“{q.text}”: {value!r} is not one of the choices ({', '.join(q.choices)})")
    if len(value) > MAX_TEXT:
        raise InputError(f"“{q.text}”: the answer is {len(value)} characters long; shorten it to {MAX_TEXT}")
    return value
