"""The GPU report's sections, one per process (``report.py`` runs them): ``sections.py NAME --json FILE``.

Each section measures one thing on ``cuda`` in bfloat16 (``--dry``: on the CPU, tiny sizes, to keep the script
from rotting while no GPU is there) and writes ``{"figures", "lines", "targets"}`` to FILE. Models are the
architectures of ``configs.json`` with random weights (``from_config``, built on the device), which cost what the
real ones cost; ``.gpu/tokenizer`` is SmolLM2's (``bundle.py`` says why one tokenizer serves all four).

- environment: device, memory, versions;
- stats: next-token statistics (prob, entropy, rank, top-5) of random logits at 49k/152k/262k vocabularies: the
  fused kernel (:mod:`asc.kernels`) against the eager path and one plain read of the logits, results compared;
- pipeline: bare forward passes against the whole AsC-Eval pipeline (``explain_many``) on the same batches, per
  architecture, with a profile of the pipeline on the smallest model; the CPU side of a corpus run alone and with
  pools of worker processes (``feed.py``);
- pytest: ``pytest -m gpu`` (every command on ``--device cuda``, the kernel, loading, statistics);
- placement: ``device_map="auto"`` spread over the GPU and the CPU, and the halving of a batch on a real CUDA
  out-of-memory error (forced by capping the process's share of GPU memory);
- half: bfloat16 against float32 on the GPU, within the CPU test's tolerances;
- eval: ``python -m asc eval`` of the 164 HumanEval problems on the GPU (local engine);
- lens_branch: ``benchmarks/bench_layers.py`` and ``bench_branch.py`` on the GPU.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import io
import json
import logging
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.gpu.child import python  # noqa: E402  (a fresh interpreter on the GPU, a fork in a dry run)

K = 5
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 49152}  # the tokenizer's ids must fit
PIPELINE_TARGETS = {"smollm2-135m": 500_000, "gemma3-270m": 280_000, "qwen2.5-coder-7b": 32_000}


class Context:
    def __init__(self, dry: bool, work: Path, out: Path) -> None:
        self.dry, self.work, self.out = dry, work, out
        self.device = torch.device("cpu" if dry else "cuda")
        self.dtype = torch.float32 if dry else torch.bfloat16  # bfloat16 matrix products are slow on most CPUs
        self.dtype_name = str(self.dtype).replace("torch.", "")
        self.rounds = 1 if dry else 3
        self.figures: dict[str, Any] = {}
        self.lines: list[str] = []
        self.targets: list[dict[str, Any]] = []

    def target(self, name: str, value: float, target: float, fmt: str = "{:,.0f}", higher: bool = True) -> None:
        met = value >= target if higher else value <= target
        self.targets.append({"name": name, "value": fmt.format(value), "target": (">= " if higher else "<= ")
                             + fmt.format(target), "met": bool(met)})

    def save(self) -> None:
        """Write what was measured so far (a section cut short by its time limit keeps its finished rows)."""
        self.out.write_text(json.dumps({"figures": self.figures, "lines": self.lines, "targets": self.targets},
                                       indent=2, default=str))

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def best(self, fn: Callable[[], Any], rounds: int = 3) -> float:
        """Fastest of ``rounds`` timed calls after one warm-up, in seconds (one call in a dry run)."""
        fn()
        times = []
        for _ in range(1 if self.dry else rounds):
            self.sync()
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        return min(times)


def configs(dry: bool) -> dict[str, dict[str, Any]]:
    data = json.loads((HERE / "configs.json").read_text())
    archs = {k: v for k, v in data.items() if isinstance(v, dict) and "model_type" in v and not k.startswith("_")}
    if dry:
        archs = {k: {**v, **TINY, **({"head_dim": 16} if "head_dim" in v else {})} for k, v in archs.items()}
    return archs


@functools.cache
def tokenizer() -> Any:
    """SmolLM2's tokenizer, loaded once per process (every architecture's bundle shares it; none changes it)."""
    from transformers import AutoTokenizer

    folder = ROOT / ".gpu" / "tokenizer"
    if not folder.is_dir():  # dry runs here: the embedded SmolLM2's folder
        sys.path.insert(0, str(HERE))
        from bundle import tokenizer_folder

        folder = tokenizer_folder()
    return AutoTokenizer.from_pretrained(folder)


def random_model(cfg: dict[str, Any], device: Any, dtype: Any) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=dtype)


def bundle_of(arch: str, cfg: dict[str, Any], ctx: Context, dtype: Any = None) -> Any:
    from asc.models import wrap

    return wrap(random_model(cfg, ctx.device, dtype or ctx.dtype), tokenizer(), arch)


def saved_smollm2(ctx: Context) -> Path:
    """A SmolLM2-shaped folder with random weights and the tokenizer (for the CLI), made once per run."""
    folder = ctx.work / "smollm2-random"
    if not (folder / "config.json").is_file():
        model = random_model(configs(ctx.dry)["smollm2-135m"], "cpu", ctx.dtype)
        model.save_pretrained(folder)
        tokenizer().save_pretrained(folder)
    return folder


def snippets(ctx: Context, limit: int | None = None) -> list[str]:
    from asc.corpus.sources import load_corpus

    if ctx.dry:
        return [s.source for s in load_corpus("humaneval", limit=min(limit or 3, 3))]
    found = [s.source for s in load_corpus("humaneval")] + [s.source for s in load_corpus("algorithms", limit=300)]
    return found[:limit] if limit else found


def free(*objects: Any) -> None:
    del objects
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------- sections

def environment(ctx: Context) -> None:
    import transformers

    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "absent"
    if ctx.device.type == "cuda":
        props = torch.cuda.get_device_properties(0)
        device = f"{props.name}, {props.total_memory / 2**30:.0f} GiB, {props.multi_processor_count} SMs"
    else:
        device = f"CPU ({os.cpu_count()} cores): dry run"
    software = (f"Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
                f"transformers {transformers.__version__}, Triton {triton_version}")
    ctx.figures.update(device=device, software=software, cpus=os.cpu_count())
    ctx.lines += [f"- {device}", f"- {software}", f"- {os.cpu_count()} CPU cores"]


def stats(ctx: Context) -> None:
    from asc import kernels

    rows = 256 if ctx.dry else 32768
    ctx.lines += [f"Random bfloat16 logits, {rows:,} rows; tokens/s (best of 3). Kernel: "
                  f"{'Triton one-pass' if kernels._kernel() is not None else 'absent (eager path)'}.", "",
                  "| vocabulary | one read (amax) | fused (token_stats) | its kernel alone | torch.topk alone, for "
                  "reference | eager | max abs diff logprob / entropy | ranks equal |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for vocab in ((4096,) if ctx.dry else (49152, 151936, 262144)):
        stats_at(ctx, rows, vocab)
    if kernels._state["failed"]:
        ctx.lines.append("\nThe kernel failed and the eager path ran instead (see the log).")


def stats_at(ctx: Context, rows: int, vocab: int) -> None:
    from asc import kernels
    from asc.device import logit_budget
    from asc.scores import eager_stats, token_stats

    gen = torch.Generator(device=ctx.device).manual_seed(0)
    logits = (torch.randn(rows, vocab, device=ctx.device, generator=gen) * 3).to(torch.bfloat16)
    targets = torch.randint(0, vocab, (rows,), device=ctx.device, generator=gen)
    budget = logit_budget(ctx.device)
    read = ctx.best(lambda: logits.amax(-1))
    parts = {"kernel": rows / ctx.best(lambda: kernels.row_stats(logits, targets)) if kernels.available(logits) else 0,
             "topk": rows / ctx.best(lambda: logits.topk(K, dim=-1))}
    fused = ctx.best(lambda: token_stats(logits, targets, K, budget))
    eager = ctx.best(lambda: eager_stats(logits, targets, K, budget))
    part = slice(0, min(rows, 2048))
    a = token_stats(logits[part], targets[part], K, budget)
    b = eager_stats(logits[part], targets[part], K, budget)
    diff = (float(abs(a[0] - b[0]).max()), float(abs(a[1] - b[1]).max()))
    same = bool((a[2] == b[2]).all())
    ctx.figures[f"stats_{vocab}"] = {"read": rows / read, "fused": rows / fused, "eager": rows / eager, **parts,
                                     "diff": diff, "ranks_equal": same, "kernel_failed": kernels._state["failed"]}
    ctx.lines.append(f"| {vocab:,} | {rows / read:,.0f} | {rows / fused:,.0f} | {parts['kernel']:,.0f} | "
                     f"{parts['topk']:,.0f} | {rows / eager:,.0f} | "
                     f"{diff[0]:.1e} / {diff[1]:.1e} | {same} |")
    if vocab == 262144:
        ctx.target("next-token statistics at a 262k vocabulary, tokens/s", rows / fused, 1_000_000)
    free(logits, targets)
    ctx.save()


def pipeline(ctx: Context) -> None:

    texts = snippets(ctx)
    ctx.lines += [f"{len(texts)} functions (HumanEval and `algorithms`), {ctx.dtype_name}, random weights; bare = the "
                  "model's forward passes on the pipeline's own batches; pipeline = `explain_many` (tokenize, "
                  f"forward, statistics, parse, align, aggregate). Medians of {ctx.rounds} interleaved rounds.", "",
                  "| architecture | tokens | bare tok/s | pipeline tok/s | pipeline / bare speed | "
                  "bare at 64 x 512, tok/s |", "| --- | --- | --- | --- | --- | --- |"]
    profile = ""
    for arch, cfg in configs(ctx.dry).items():
        profile = pipeline_of(ctx, arch, cfg, texts) or profile
    from benchmarks.gpu import feed  # the CPU side alone and the pool (issue 46)

    small = bundle_of("smollm2-135m", configs(ctx.dry)["smollm2-135m"], ctx)
    feed.measure(ctx, small, texts)
    free(small)
    ctx.save()
    ctx.lines += ["", "Profile of one pipeline run on smollm2-135m (by cumulative, then by own time):", "", "```",
                  *[line for line in profile.splitlines() if line.strip() and not line.startswith(("   Ordered", "   List"))],
                  "```"]


def pipeline_of(ctx: Context, arch: str, cfg: dict[str, Any], texts: list[str]) -> str | None:
    """One architecture's row of the pipeline table; the profile text for smollm2-135m."""
    from asc.explain import explain_many
    from asc.scores import encode, forward_batches

    profile = None
    bundle = bundle_of(arch, cfg, ctx)
    n_tokens = sum(len(encode(bundle, t)[0]) for t in texts)
    batches = forward_batches(bundle, texts)

    def bare() -> None:
        with torch.inference_mode():
            for ids, mask in batches:
                bundle.model(input_ids=ids, attention_mask=mask, use_cache=False)

    def whole() -> None:
        explain_many(bundle, texts)

    times: dict[str, list[float]] = {"bare": [], "whole": []}
    bare(), whole()
    for r in range(ctx.rounds):
        for key, fn in ((("bare", bare), ("whole", whole)) if r % 2 == 0 else (("whole", whole), ("bare", bare))):
            ctx.sync()
            t0 = time.perf_counter()
            fn()
            ctx.sync()
            times[key].append(time.perf_counter() - t0)
    b, p = statistics.median(times["bare"]), statistics.median(times["whole"])
    shape = (2, 64) if ctx.dry else (64, 512)
    block = torch.randint(0, 49152 if not ctx.dry else 1000, shape, device=ctx.device)
    with torch.inference_mode():
        peak = shape[0] * shape[1] / ctx.best(lambda: bundle.model(input_ids=block, use_cache=False), rounds=2)
    ctx.figures[arch] = {"tokens": n_tokens, "bare": n_tokens / b, "pipeline": n_tokens / p, "ratio": b / p,
                         "batches": len(batches), "peak_64x512": peak}
    ctx.lines.append(f"| {arch} | {n_tokens:,} | {n_tokens / b:,.0f} | {n_tokens / p:,.0f} | {b / p:.3f} | "
                     f"{peak:,.0f} |")
    ctx.target(f"{arch}: pipeline speed / bare speed", b / p, 0.90, "{:.3f}")
    if arch in PIPELINE_TARGETS:
        ctx.target(f"{arch}: pipeline tokens/s", n_tokens / p, PIPELINE_TARGETS[arch])
    if arch == "smollm2-135m":
        prof = cProfile.Profile()
        prof.enable()
        whole()
        ctx.sync()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(18)
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
        profile = text.getvalue()
    free(bundle)
    ctx.save()
    return profile


def pytest_gpu(ctx: Context) -> None:
    files = ["tests/asc/test_kernels.py", "tests/asc/test_models.py", "tests/asc/test_device.py",
             "tests/asc/test_scores.py", "tests/gpu"]
    # a fresh interpreter even in a dry run: pytest rewrites the asserts of what it imports, and a fork has imported
    stdout, stderr, code = python(["-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-rs", *files],
                                  fork=False)
    summary = [line for line in stdout.splitlines() if line.strip()][-12:]
    ctx.figures.update(returncode=code, summary=summary[-1] if summary else "")
    ctx.lines += ["`pytest -m gpu " + " ".join(files) + "`:", "", "```", *summary, "```"]
    if code != 0:
        raise SystemExit(stdout[-3000:] + stderr[-2000:])


def placement(ctx: Context) -> None:
    from transformers import AutoModelForCausalLM

    from asc.explain import explain_many
    from asc.models import load_model, wrap
    from asc.scores import score_texts

    folder = saved_smollm2(ctx)
    texts = snippets(ctx, limit=8)
    whole = load_model(str(folder), device=ctx.device.type, dtype=ctx.dtype_name)
    want = explain_many(whole, texts)
    size = sum(p.numel() * p.element_size() for p in whole.model.parameters())
    memory = {"cpu": "16GiB"} if ctx.dry else {0: int(size * 0.6), "cpu": "16GiB"}
    spread = AutoModelForCausalLM.from_pretrained(folder, device_map="auto", max_memory=memory, dtype=ctx.dtype)
    where = sorted({str(v) for v in getattr(spread, "hf_device_map", {"": "cpu"}).values()})
    got = explain_many(wrap(spread, whole.tokenizer, "smollm2 spread"), texts)
    diff = max(float(abs(a.scores.prob - b.scores.prob)[a.scores.has_prediction].max()) for a, b in zip(got, want))
    ctx.figures["device_map"] = {"devices": where, "max_prob_diff": diff}
    ctx.lines += [f"- `device_map=\"auto\"` with {memory}: layers on {', '.join(where)}; AsC-Eval of {len(texts)} "
                  f"functions equals the one-device run within {diff:.1e} (max per-token probability difference)."]
    free(spread, got)

    texts = snippets(ctx, limit=None if not ctx.dry else 6)
    want_scores = score_texts(whole, texts)
    halvings: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "out of memory" in record.getMessage():
                halvings.append(record.getMessage())

    logging.getLogger("asc.scores").addHandler(Catch())
    logging.getLogger("asc.scores").setLevel(logging.INFO)
    import asc.scores as scores

    scores._token_budget = lambda bundle, device: 10**9  # one batch of every row: far more than fits
    if ctx.device.type == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(min(1.0, (torch.cuda.memory_allocated() + 2**30) / total))
        how = "a real CUDA out-of-memory error (the process capped at its weights + 1 GiB)"
    else:
        forward = whole.model.forward

        def failing(*args: Any, **kwargs: Any) -> Any:
            if kwargs["input_ids"].shape[0] > 2:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated on the CPU)")
            return forward(*args, **kwargs)

        whole.model.forward = failing
        how = "a simulated out-of-memory error (dry run on the CPU)"
    got_scores = score_texts(whole, texts)
    if ctx.device.type == "cuda":
        torch.cuda.set_per_process_memory_fraction(1.0)
    diff = max(float(abs(a.prob - b.prob)[a.has_prediction].max()) for a, b in zip(got_scores, want_scores))
    ctx.figures["oom"] = {"halvings": len(halvings), "max_prob_diff": diff, "rows": len(texts)}
    ctx.lines.append(f"- OOM halving: {len(texts)} functions planned as one batch hit {how}; the batch was halved "
                     f"{len(halvings)} times and every function scored, equal to the planned run within {diff:.1e}.")
    if not halvings:
        raise SystemExit("no out-of-memory error happened: the cap did not bite")


def half(ctx: Context) -> None:
    import numpy as np

    from asc.explain import explain_many
    from tests.asc.test_device import CATEGORY_ATOL, NODE_ATOL, PROB_ATOL

    cfg = configs(ctx.dry)["smollm2-135m"]
    texts = snippets(ctx, limit=8)
    full = explain_many(bundle_of("smollm2-135m", cfg, ctx, torch.float32), texts)
    model16 = bundle_of("smollm2-135m", cfg, ctx, torch.float32)
    model16.model.to(torch.bfloat16)  # the same random weights, rounded
    halfx = explain_many(model16, texts)

    def worst(get: Callable[[Any], Any]) -> float:
        return max(float(np.nanmax(np.abs(get(a) - get(b)))) for a, b in zip(full, halfx))

    prob = worst(lambda e: np.where(e.scores.has_prediction, e.scores.prob, 0))
    logprob = worst(lambda e: np.where(e.scores.has_prediction, e.scores.logprob, 0))
    node = worst(lambda e: np.nan_to_num(e.values))
    cat = worst(lambda e: np.nan_to_num(np.array([e.category_values[c] for c in sorted(e.category_values)])))
    ctx.figures.update(prob=prob, logprob=logprob, node=node, category=cat)
    ctx.lines += [f"SmolLM2 shape, the same random weights in float32 and rounded to bfloat16, {len(texts)} "
                  f"functions on {ctx.device.type}: max abs difference per token probability {prob:.2e} (CPU test's "
                  f"bound {PROB_ATOL}), log-probability {logprob:.3f}, node value {node:.2e} ({NODE_ATOL}), "
                  f"category value {cat:.2e} ({CATEGORY_ATOL}).",
                  "Random weights predict near-uniform distributions, so the probability bounds are easily met; "
                  "the log-probability difference is the informative figure. Real weights need a second call "
                  "(the SmolLM2 GGUF is 98 MB, over one call's 64 MiB)."]
    ctx.target("bfloat16 vs float32, max per-token probability difference", prob, PROB_ATOL, "{:.3g}", higher=False)
    ctx.target("bfloat16 vs float32, max category value difference", cat, CATEGORY_ATOL, "{:.3g}", higher=False)


def eval_humaneval(ctx: Context) -> None:
    folder = saved_smollm2(ctx)
    out = ctx.work / "eval-humaneval"
    cmd = ["-m", "asc", "eval", "--corpus", "humaneval", "--out", str(out), "--model", str(folder),
           "--device", ctx.device.type, "--dtype", ctx.dtype_name, "--quiet", "--n-boot", "200"]
    if ctx.dry:
        cmd += ["--limit", "4"]
    t0 = time.perf_counter()
    stdout, stderr, code = python(cmd, fork=ctx.dry)
    seconds = time.perf_counter() - t0
    if code:
        raise SystemExit(stdout[-2000:] + stderr[-2000:])
    from asc.corpus.runs import load_run

    run = load_run(out)
    n = len(run.snippets)
    ctx.figures.update(seconds=seconds, snippets=n)
    ctx.lines += [f"`python -m asc eval --corpus humaneval --device {ctx.device.type} --dtype {ctx.dtype_name}` (local engine, "
                  f"SmolLM2 shape, random weights): {seconds:.1f} s for {n} functions, process start and model load "
                  "included.", "",
                  "Ray with a GPU actor was not measured: Ray's wheel for Python 3.12 (about 70 MB) exceeds the "
                  "64 MiB one call carries; the local engine is what ran."]


def lens_branch(ctx: Context) -> None:
    folder = str(saved_smollm2(ctx))
    device = ["--device", ctx.device.type, "--dtype", ctx.dtype_name]
    runs = [("benchmarks/bench_layers.py", ["--model", folder, "--snippets", "2" if ctx.dry else "8",
                                            "--rounds", "1" if ctx.dry else "2", "--out", str(ctx.work / "layers.txt")]),
            ("benchmarks/bench_branch.py", ["--model", folder, "--rounds", "1" if ctx.dry else "3",
                                            "--tokens", "8" if ctx.dry else "64", "--out", str(ctx.work / "branch.txt")])]
    failed = []
    for script, args in runs:
        stdout, stderr, code = python([script, *args, *device], fork=ctx.dry)
        ctx.lines += [f"`{script} {' '.join(args[2:-2] + device)}` (SmolLM2 shape, random weights):", "", "```",
                      *([line for line in stdout.strip().splitlines() if not line.startswith("written to")]
                        or ["(no output)"]), "```", ""]
        if code:
            failed.append(f"{script}: {stderr[-1500:]}")
    if failed:
        raise SystemExit("\n".join(failed))


SECTIONS: dict[str, Callable[[Context], None]] = {
    "environment": environment, "stats": stats, "pipeline": pipeline, "pytest": pytest_gpu, "placement": placement,
    "half": half, "eval": eval_humaneval, "lens_branch": lens_branch,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("section", choices=sorted(SECTIONS))
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="scratch folder shared by the sections of one run")
    ap.add_argument("--dry", action="store_true")
    args = ap.parse_args()
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    ctx = Context(args.dry, args.work, args.json)
    SECTIONS[args.section](ctx)
    ctx.save()


if __name__ == "__main__":
    main()
