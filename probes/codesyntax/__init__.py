"""CodeSyntax for Python (Shen et al., EMNLP 2022): does one attention head link the words of a syntactic relation?

- :mod:`probes.codesyntax.samples`: a labelled snippet (words with character spans, relation edges) and the
  CodeSyntax JSON layout.
- :mod:`probes.codesyntax.relations`: relation extraction from Python source (``ast`` + ``tokenize``).
- :mod:`probes.codesyntax.heads`: word-level attention, top-k head scores (val/test), offset and keyword baselines.
- :mod:`probes.codesyntax.attention`: a model's attention on a snippet, corpus runs of head scores on disk, the
  app's background job.
"""

from probes.codesyntax.attention import (
    AttentionRun,
    attention_job,
    attention_runs,
    load_attention_run,
    relation_table,
    run_attention,
    snippet_attention,
    sub_to_word,
)
from probes.codesyntax.heads import (
    HEAD_SPLITS,
    KEYWORDS,
    METRICS,
    HeadScorer,
    HeadScores,
    baseline_scores,
    split_samples,
    word_attention,
)
from probes.codesyntax.relations import CodeParseError, extract, extract_many, word_tokens
from probes.codesyntax.samples import RELATIONS, Edge, Sample, read_json, write_json

__all__ = ["HEAD_SPLITS", "KEYWORDS", "METRICS", "RELATIONS", "AttentionRun", "CodeParseError", "Edge", "HeadScorer",
           "HeadScores", "Sample", "attention_job", "attention_runs", "baseline_scores", "extract", "extract_many",
           "load_attention_run", "read_json", "relation_table", "run_attention", "snippet_attention", "split_samples",
           "sub_to_word", "word_attention", "word_tokens", "write_json"]
