"""A GGUF file's first load with each piece of parsing done once: :func:`parse_once`.

transformers de-quantizes a GGUF file (:func:`asc.models.load_model`, first load only) with three full parses of
the file, one each for the tokenizer, the config and the weights (``load_gguf_checkpoint`` builds a
``gguf.GGUFReader``, which reads every metadata field, the whole vocabulary included: 49k strings for SmolLM2,
262k for Gemma 3), and it builds gguf's tensor-name map (``gguf.get_tensor_name_map``, the same for a given
architecture and depth) once per module of the model, 397 times for SmolLM2. Within :func:`parse_once` the
reader of a file is built once and the map once per ``(architecture, blocks)``; the weights, tokenizer and config
come out the same (the reader is only read; ``tests/asc/test_gguf_once.py``). Measured on the 2-core machine
(CPU seconds of the whole first load, de-quantizing and writing the cache included): SmolLM2 21.9 -> 9.8,
Gemma 3 57.0 -> 28.7.

It replaces the two names in the ``gguf`` module (transformers imports them from there at each call) for the
duration of the block, under a lock, so loads in other threads wait instead of restoring each other's names.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["parse_once"]

_LOCK = threading.Lock()


@contextmanager
def parse_once() -> Iterator[None]:
    """Within the block, ``gguf.GGUFReader(path)`` returns one reader per file and mode, and
    ``gguf.get_tensor_name_map`` one map per architecture and depth; both names are restored after."""
    import gguf

    with _LOCK:
        reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        readers: dict[tuple[str, str], Any] = {}

        def one_reader(path: Any, mode: str = "r") -> Any:
            key = (str(path), mode)
            if key not in readers:
                readers[key] = reader(path, mode)
            return readers[key]

        gguf.GGUFReader, gguf.get_tensor_name_map = one_reader, functools.lru_cache(maxsize=None)(name_map)
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
            readers.clear()
