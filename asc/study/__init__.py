"""The user study of the AsC-Viz paper, runnable in the app: what participants see, and their answers.

- :mod:`asc.study.definition`: study files (YAML/JSON), validated, the paper's design shipped;
- :mod:`asc.study.frozen`: prepare-once content (completions and scores frozen to JSON);
- :mod:`asc.study.store`: participants and answers in any SQLAlchemy database, balanced groups;
- :mod:`asc.study.tables`: Likert counts and Table III; :mod:`asc.study.figure`: their bar chart;
- ``python -m asc.study check|prepare``: the command line.
"""

from asc.study.definition import (
    LIKERT_LABELS,
    STUDY_VIEWS,
    Group,
    Question,
    Sample,
    StudyDefinition,
    load_study,
    parse_study,
)
from asc.study.figure import rating_bars
from asc.study.frozen import (
    FrozenSample,
    FrozenStudy,
    frozen_explanation,
    frozen_path,
    load_frozen,
    prepare_study,
    save_frozen,
)
from asc.study.store import ParticipantState, StudyStore, default_url, normalize_code
from asc.study.tables import AGREEMENT_LEVELS, agreement_table, rating_counts

__all__ = [
    "AGREEMENT_LEVELS", "LIKERT_LABELS", "STUDY_VIEWS", "FrozenSample", "FrozenStudy", "Group", "ParticipantState",
    "Question", "Sample", "StudyDefinition", "StudyStore", "agreement_table", "default_url", "frozen_explanation",
    "frozen_path", "load_frozen", "load_study", "normalize_code", "parse_study", "prepare_study", "rating_bars",
    "rating_counts", "save_frozen",
]
