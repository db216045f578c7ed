"""AsC Studio backend: AsC-Eval (next-token scores aligned to the tree-sitter AST), importable without Streamlit."""
