"""The tests' model: ``tiny-random``, a 2-layer GPT-2 with random weights built in process, registered by name.

Importing this module registers ``tiny-random`` (:func:`asc.models.register_model`), so ``load_model("tiny-random")``,
``--model tiny-random`` and ``ASC_MODEL=tiny-random`` work wherever it was imported. ``tests/conftest.py`` imports it
in the test process and names it in ``ASC_MODEL_MODULES`` for the processes tests start (``python -m asc``, the app
server of the browser tests, Ray's workers), whose ``asc.models`` then imports it too. Production code knows no
test model: only the registry hook.
"""

from __future__ import annotations

from asc.models import EmbeddedModel, ModelBundle, make_bundle, register_model

NAME = "tiny-random"
MODULE = __name__  # what ASC_MODEL_MODULES names

TINY_CORPUS = """\
def count_chars(string, character):
    count = 0
    for letter in string:
        if letter == character:
            count = count + 1
    return count

class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()

public class Main {
    public static int add(int a, int b) {
        return a + b;
    }
}
"""


def tiny_random_model(add_bos: bool = False, context_length: int = 64, seed: int = 0) -> ModelBundle:
    """A 2-layer GPT-2 with random weights and a byte-level BPE tokenizer trained on a few snippets.

    Deterministic for a given seed; no file or network access. ``add_bos=True`` makes the tokenizer
    put ``<|endoftext|>`` first (offset (0, 0)), like Gemma's BOS.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    special = "<|endoftext|>"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=[special], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TINY_CORPUS], trainer)
    eos = tok.token_to_id(special)
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{special} $A", special_tokens=[(special, eos)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=special, eos_token=special,
                                        model_max_length=context_length)
    config = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=context_length, n_embd=32, n_layer=2,
                        n_head=2, bos_token_id=eos, eos_token_id=eos)
    with torch.random.fork_rng():  # no global RNG side effect
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    name = "tiny-random-bos" if add_bos else "tiny-random"
    return make_bundle(name, model, tokenizer, "in-process")


register_model(EmbeddedModel(NAME, "2-layer GPT-2 with random weights, 64-token context (tests)", "",
                             build=tiny_random_model, synthetic=True))
