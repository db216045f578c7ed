"""BLANCA for Python (Abdelaziz et al., 2021): do a model's embeddings of *text about code* reflect what
programmers know? Five tasks, data built offline from the Python documentation and standard library.

- :mod:`probes.blanca.items`: the items of the five tasks (R, L, F, H, U) and their validated JSONL format.
- :mod:`probes.blanca.metrics`: MRR and NDCG, Student's (or Welch's) t, Pearson r with p, bootstrap intervals.
- :mod:`probes.blanca.classes`: class documentation and MRO tree distances (H), from the stdlib or a package.
- :mod:`probes.blanca.usage`: methods called on instances of each class, by static analysis (U).
- :mod:`probes.blanca.rst` / :mod:`probes.blanca.faq`: the FAQ and Library Reference sources, R, F and L items.
"""

from probes.blanca.classes import ClassCatalog, ClassDoc, class_distance, hierarchy_items, scan_classes
from probes.blanca.faq import (
    FaqQuestion,
    doc_sections,
    faq_questions,
    forum_class_items,
    library_entries,
    linked_items,
    rank_items,
)
from probes.blanca.items import (
    BLANCA_TASKS,
    BlancaItem,
    PairItem,
    RankItem,
    ScoredPairItem,
    load_items,
    save_items,
)
from probes.blanca.metrics import (
    Correlation,
    Interval,
    RankingSummary,
    TTest,
    bootstrap_interval,
    ndcg,
    pearson,
    ranking_summary,
    reciprocal_rank,
    t_test,
)
from probes.blanca.usage import UsageIndex, extract_usage, scan_usage, usage_items, usage_similarity

__all__ = ["BLANCA_TASKS", "BlancaItem", "ClassCatalog", "ClassDoc", "Correlation", "FaqQuestion", "Interval",
           "PairItem", "RankItem", "RankingSummary", "ScoredPairItem", "TTest", "UsageIndex", "bootstrap_interval",
           "class_distance", "doc_sections", "extract_usage", "faq_questions", "forum_class_items", "hierarchy_items",
           "library_entries", "linked_items", "load_items", "ndcg", "pearson", "rank_items", "ranking_summary",
           "reciprocal_rank", "save_items", "scan_classes", "scan_usage", "t_test", "usage_items", "usage_similarity"]
