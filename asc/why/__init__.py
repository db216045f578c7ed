"""Why this token? Attribution and interventions on the syntax tree (issue 30).

- :mod:`asc.why.corrupt`: corruptions that keep code valid (rename an identifier, swap an operator within
  its class, replace a literal, remove a docstring or comment), each checked to parse with no new ERROR node;
  :mod:`asc.why.choices` lists those a snippet offers.
- :mod:`asc.why.attribute`: what in the prompt a prediction used: gradient x input, integrated gradients
  (Captum) and syntax-aware occlusion, aggregated to AST nodes and categories; :mod:`asc.why.statements`: the same
  per statement (each token counted once), per node's own tokens, and where methods agree.
- :mod:`asc.why.patching`: activation patching, clean residual streams restored inside a corrupted run,
  layer x node.
- :mod:`asc.why.corpus`, :mod:`asc.why.corpus_run`, :mod:`asc.why.matrix`: corpus attribution (k target nodes per
  snippet, mass per source category and AST distance, stored in a run's ``attribution/`` table) and the target x
  source category matrix with snippet-bootstrap intervals.
"""
