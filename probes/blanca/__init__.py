"""BLANCA for Python (Abdelaziz et al., 2021): do a model's embeddings of *text about code* reflect what
programmers know? Five tasks, data built offline from the Python documentation and standard library.

- :mod:`probes.blanca.items`: the items of the five tasks (R, L, F, H, U) and their validated JSONL format.
- :mod:`probes.blanca.metrics`: MRR and NDCG, Student's (or Welch's) t, Pearson r with p, bootstrap intervals.
- :mod:`probes.blanca.classes`: class documentation and MRO tree distances (H), from the stdlib or a package.
- :mod:`probes.blanca.usage`: methods called on instances of each class, by static analysis (U).
- :mod:`probes.blanca.rst` / :mod:`probes.blanca.faq`: the FAQ and Library Reference sources, R, F and L items.
- :mod:`probes.blanca.build`: task sets built once under a run folder; a named package's H and U in a set of their own.
- :mod:`probes.blanca.embed`: one vector per text (sentence-transformers pooling, decoders mean-pooled), cached.
- :mod:`probes.blanca.evaluate`: the scores table and the paper's metrics over it, the paper-style table.
- :mod:`probes.blanca.finetune`: contrastive fine-tuning of a sentence encoder (single or multi-task).
- :mod:`probes.blanca.runs`: resumable runs over models, fine-tuned models, the app's background job.
- :mod:`probes.blanca.figures`: pure Plotly figures of the results.
"""

from probes.blanca.build import BlancaTaskSet, blanca_set_name, build_task_set, load_task_set, parse_tasks
from probes.blanca.classes import ClassCatalog, ClassDoc, class_distance, hierarchy_items, scan_classes
from probes.blanca.embed import EmbeddingSettings, cosine_distance, embed_texts, embedding_settings
from probes.blanca.evaluate import PAPER_BLANCA, SCORE_COLUMNS, SUMMARY_COLUMNS, blanca_table, score_task, summarize
from probes.blanca.faq import (
    FaqQuestion,
    doc_sections,
    faq_questions,
    forum_class_items,
    library_entries,
    linked_items,
    rank_items,
)
from probes.blanca.figures import (
    distance_distributions,
    question_answers,
    ranked_answers_figure,
    regression_plot,
    summary_bars,
)
from probes.blanca.finetune import FinetuneResult, default_finetune_name, finetune, training_pairs
from probes.blanca.items import (
    BLANCA_TASK_TITLES,
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
from probes.blanca.runs import (
    blanca_job,
    finetune_task_set,
    finetuned_labels,
    load_scores,
    run_blanca,
    score_folder,
    target_kinds,
)
from probes.blanca.usage import UsageIndex, extract_usage, scan_usage, usage_items, usage_similarity

__all__ = [
    "BLANCA_TASKS", "BLANCA_TASK_TITLES", "PAPER_BLANCA", "SCORE_COLUMNS", "SUMMARY_COLUMNS",
    "BlancaItem", "BlancaTaskSet", "ClassCatalog", "ClassDoc", "Correlation", "EmbeddingSettings", "FaqQuestion",
    "FinetuneResult", "Interval", "PairItem", "RankItem", "RankingSummary", "ScoredPairItem", "TTest", "UsageIndex",
    "blanca_job", "blanca_set_name", "blanca_table", "bootstrap_interval", "build_task_set", "class_distance",
    "cosine_distance", "default_finetune_name", "distance_distributions", "doc_sections", "embed_texts",
    "embedding_settings", "extract_usage", "faq_questions", "finetune", "finetune_task_set", "finetuned_labels",
    "forum_class_items", "hierarchy_items", "library_entries", "linked_items", "load_items", "load_scores",
    "load_task_set", "ndcg", "parse_tasks", "pearson", "question_answers", "rank_items", "ranked_answers_figure",
    "ranking_summary", "reciprocal_rank", "regression_plot", "run_blanca", "save_items", "scan_classes", "scan_usage",
    "score_folder", "score_task", "summarize", "summary_bars", "t_test", "target_kinds", "training_pairs",
    "usage_items", "usage_similarity",
]
