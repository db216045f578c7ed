"""A tiny GGUF file written with the gguf package, for tests of GGUF loading and its cache (seconds, not minutes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_tiny_gguf(path: Path) -> Path:
    """A 1-block Llama GGUF: a byte-level vocabulary of 98 tokens (printable ASCII, BOS, EOS, space, newline)."""
    import gguf

    rng = np.random.default_rng(0)
    tokens = ["<s>", "</s>", *(chr(c) for c in range(33, 127)), "Ġ", "Ċ"]
    d, ff, n = 16, 32, len(tokens)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3] + [1] * (n - 2))
    w.add_token_scores([0.0] * n)
    w.add_token_merges([])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    shapes = {"token_embd.weight": (n, d), "output_norm.weight": (d,), "output.weight": (n, d),
              "blk.0.attn_norm.weight": (d,), "blk.0.attn_q.weight": (d, d), "blk.0.attn_k.weight": (d, d),
              "blk.0.attn_v.weight": (d, d), "blk.0.attn_output.weight": (d, d), "blk.0.ffn_norm.weight": (d,),
              "blk.0.ffn_gate.weight": (ff, d), "blk.0.ffn_up.weight": (ff, d), "blk.0.ffn_down.weight": (d, ff)}
    for name, shape in shapes.items():
        w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
