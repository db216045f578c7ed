"""``python -m probes sae {train,eval,enrich,show,versus}``: sparse autoencoders on the residual stream, read through the AST.

* ``train --model M --layer L --corpus C --tokens N --width W --k K --out DIR``: a TopK SAE on block L's output
  (:func:`probes.sae.train_sae`; resumable from DIR's checkpoint; a progress bar with tokens/s and the loss);
* ``eval DIR --corpus humaneval [--json]``: variance explained, L0, dead latents, CE loss recovered (also saved to
  ``DIR/quality.json`` for the app);
* ``enrich DIR --corpus humaneval [--json] [--out table.csv]``: every latent's firing per syntax category and node
  type, selectivity with bootstrap intervals over snippets, and each category's latents ranked;
* ``show DIR --latent I [--json]``: one latent's dashboard (top contexts with the node highlighted, histogram,
  categories and node types, a label derived from the enrichment);
* ``versus DIR --tasks KTX,LEN [--size N] [--json] [--out table.csv]``: on INSPECT tasks built as ``probes inspect``
  builds them, the best single latent against the linear probe at the SAE's layer (:func:`probes.sae.versus_probe`).

``DIR`` (or ``--sae DIR``) is a folder in SAELens's layout; its model is the one ``cfg.json`` names unless
``--model`` says otherwise, and an SAE of another model or layer stops with one line naming both. ``enrich`` and
``show`` keep the corpus's activations in ``DIR/activations/`` (one ``.npz`` per corpus, limit and token cap).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from asc.cli.args import (
    Subcommands,
    add_model_options,
    count,
    load_bundle,
    non_negative_int,
    out_folder,
    out_table,
    path_text,
    positive_int,
    seed_int,
)
from asc.cli.runner import stage_bar
from asc.errors import InputError
from probes.features import PROBE_MAX_TOKENS

T = TypeVar("T")

if TYPE_CHECKING:
    from asc.models import ModelBundle
    from probes.sae import CorpusActivations, Enrichment, SparseAutoencoder

__all__ = ["add_parser", "execute"]

_MAX_TOKENS = 10**10  # --tokens: more than a CPU trains in a week; the cap keeps typos (an extra 0000) out


def _common(q: argparse.ArgumentParser) -> None:
    q.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    q.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    q.add_argument("--quiet", action="store_true", help="no progress bars")


def _sae_options(q: argparse.ArgumentParser) -> None:
    """The SAE folder, its model and layer, --json, the model options and the common flags."""
    q.add_argument("folder", nargs="?", type=path_text, metavar="DIR", help="the SAE folder (SAELens's layout)")
    q.add_argument("--sae", type=path_text, metavar="DIR", help="the SAE folder (instead of DIR)")
    q.add_argument("--model", default=None, help="the model (default: the one the SAE's cfg.json names)")
    q.add_argument("--layer", type=non_negative_int, default=None,
                   help="the layer expected (refused when the SAE reads another)")
    q.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_model_options(q)
    _common(q)


def _reader(q: argparse.ArgumentParser, corpus: str = "humaneval") -> None:
    _sae_options(q)
    q.add_argument("--corpus", type=path_text, default=corpus, help=f"corpus to read (default {corpus})")
    q.add_argument("--limit", type=positive_int, default=None, help="at most this many snippets")
    q.add_argument("--max-tokens", type=positive_int, default=256, help="tokens read per snippet (the head)")


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``sae`` and its five subcommands to ``python -m probes``."""
    p = sub.add_parser("sae", help="sparse autoencoders on the residual stream, read through the AST (train, "
                       "eval, enrich, show, versus)")
    inner = p.add_subparsers(dest="sae_command", required=True, metavar="{train,eval,enrich,show,versus}")
    t = inner.add_parser("train", help="train a TopK SAE on the residual stream after one block (resumable)")
    t.add_argument("--model", default="smollm2-135m", help="embedded name, folder, .gguf or hub id")
    t.add_argument("--layer", type=non_negative_int, required=True, help="the block (from 0) whose output is read")
    t.add_argument("--corpus", type=path_text, default="stdlib", help="corpus streamed (default stdlib)")
    t.add_argument("--tokens", type=count(_MAX_TOKENS, "a week of CPU"), required=True, help="tokens to train on")
    t.add_argument("--width", type=count(2**20, "SAELens's widest"), required=True, help="latents (d_sae)")
    t.add_argument("--k", type=positive_int, required=True, help="active latents per token (TopK)")
    t.add_argument("--out", type=out_folder, required=True, help="the SAE folder (resumed from its checkpoint)")
    t.add_argument("--seed", type=seed_int, default=0, help="initialization and the corpus's order")
    t.add_argument("--batch-size", type=count(2**16, "tokens per step"), default=1024, help="tokens per step")
    t.add_argument("--lr", type=float, default=0.0, help="Adam's learning rate (default: 2e-4 / sqrt(width / 2^14))")
    t.add_argument("--max-tokens", type=positive_int, default=256, help="tokens read per snippet (the head)")
    t.add_argument("--checkpoint-every", type=positive_int, default=50, help="steps between checkpoints")
    add_model_options(t)
    _common(t)
    t.set_defaults(func=execute_train)
    e = inner.add_parser("eval", help="variance explained, L0, dead latents, CE loss recovered")
    _reader(e)
    e.set_defaults(func=execute_eval)
    n = inner.add_parser("enrich", help="latents by syntax category and node type (selectivity, bootstrap)")
    _reader(n)
    n.add_argument("--out", type=out_table, default=None, help="also write the table (.csv long table, .json)")
    n.add_argument("--top", type=positive_int, default=10, help="latents listed per category")
    n.add_argument("--n-boot", type=count(10_000, "more resamples no longer move the interval"), default=200)
    n.add_argument("--seed", type=seed_int, default=0, help="bootstrap seed")
    n.set_defaults(func=execute_enrich)
    s = inner.add_parser("show", help="one latent's dashboard: top contexts, histogram, categories, label")
    _reader(s)
    s.add_argument("--latent", type=non_negative_int, required=True, help="the latent (from 0)")
    s.add_argument("--top", type=positive_int, default=10, help="contexts shown")
    s.set_defaults(func=execute_show)
    v = inner.add_parser("versus", help="the best single latent against INSPECT's linear probe, on the same tasks")
    _sae_options(v)
    v.add_argument("--tasks", default="", help="comma-separated INSPECT tasks (KTX,LEN,...; 'all': the 15)")
    v.add_argument("--task-file", action="append", type=path_text, help="an INSPECT TSV task file; repeatable")
    v.add_argument("--corpus", type=path_text, default="stdlib", help="corpus the tasks are built from (default stdlib)")
    v.add_argument("--size", type=positive_int, default=1000, help="samples per task")
    v.add_argument("--max-tokens", type=positive_int, default=PROBE_MAX_TOKENS, help="longer samples are truncated")
    v.add_argument("--n-boot", type=count(10_000, "more resamples no longer move the interval"), default=1000)
    v.add_argument("--seed", type=seed_int, default=0, help="task sampling, splits and bootstrap")
    v.add_argument("--out", type=out_table, default=None, help="also write the table (.csv, .json)")
    v.set_defaults(func=execute_versus)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Run the ``sae`` subcommand chosen."""
    status: int = args.func(args)
    return status


def execute_train(args: argparse.Namespace) -> int:
    """Train (or resume) an SAE and print where it went."""
    from asc.corpus.sources import load_corpus
    from probes.sae import TrainSettings, train_sae

    if args.k > args.width:
        raise InputError(f"--k {args.k} is above --width {args.width}: a TopK SAE keeps at most every latent")
    snippets = load_corpus(args.corpus)
    bundle = load_bundle(args)
    from asc.arch import layer_count

    if args.layer >= layer_count(bundle.model):
        raise InputError(f"--layer {args.layer} is outside {bundle.name} (layers 0 to {layer_count(bundle.model) - 1})")
    settings = TrainSettings(model=bundle.name, layer=args.layer, corpus=args.corpus, tokens=args.tokens,
                             width=args.width, k=args.k, seed=args.seed, batch_size=args.batch_size, lr=args.lr,
                             max_tokens=args.max_tokens, checkpoint_every=args.checkpoint_every)
    bar: Any = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=args.tokens, unit="tok", unit_scale=True, desc=f"SAE {bundle.name} layer {args.layer}")

    def progress(done: int, total: int, loss: float) -> None:
        if bar is not None:
            bar.n = done
            bar.set_postfix(loss=f"{loss:.4f}", refresh=True)

    try:
        result = train_sae(bundle, [s.source for s in snippets], settings, args.out, on_progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if result.resumed and result.seconds == 0:
        print(f"{result.folder} is trained already ({result.tokens:,} tokens): give more --tokens to go on")
        return 0
    note = " (resumed)" if result.resumed else ""
    print(f"SAE saved to {result.folder}{note}: {result.tokens:,} tokens in {result.steps} steps, last loss "
          f"{result.loss:.4f}, {result.seconds:.0f} s")
    return 0


def _sae_of(args: argparse.Namespace) -> tuple[SparseAutoencoder, Path]:
    from probes.sae import load_sae

    if (args.folder is None) == (args.sae is None):
        raise InputError("give the SAE folder once: as DIR or as --sae DIR")
    folder = Path(args.folder or args.sae)
    return load_sae(folder), folder


def _model_for(args: argparse.Namespace, sae: SparseAutoencoder) -> tuple[ModelBundle, int]:
    from probes.sae import SaeMismatchError, check_sae_for

    spec = args.model or sae.cfg.model_name
    if not spec:
        raise InputError("the SAE's cfg.json names no model: give --model")
    if args.layer is not None and args.layer != sae.cfg.layer:
        raise SaeMismatchError(f"the SAE reads layer {sae.cfg.layer} ({sae.cfg.hook_name}), not layer {args.layer}: "
                               f"give --layer {sae.cfg.layer} or an SAE of layer {args.layer}")
    bundle = load_bundle(args, spec)
    return bundle, check_sae_for(sae, bundle, args.layer)


def _sources(args: argparse.Namespace) -> list[str]:
    from asc.corpus.sources import load_corpus

    return [s.source for s in load_corpus(args.corpus, limit=args.limit)]


def _with_bar(label: str, unit: str, quiet: bool, work: Callable[[Callable[[int, int], None] | None], T]) -> T:
    """``work(on_progress)`` under a progress bar counting ``unit`` (none with ``--quiet``)."""
    update, close = stage_bar(label, quiet)
    try:
        return work(None if update is None else lambda done, total: update(unit, done, total))
    finally:
        close()


def execute_eval(args: argparse.Namespace) -> int:
    """Measure the SAE's quality on a corpus."""
    from probes.sae.quality import evaluate_sae, summary_line
    from probes.sae.store import save_quality

    sae, folder = _sae_of(args)
    sources = _sources(args)
    bundle, layer = _model_for(args, sae)
    quality = _with_bar(f"SAE eval {bundle.name}", "batches", args.quiet, lambda report: evaluate_sae(
        sae, bundle, sources, layer, max_tokens=args.max_tokens, on_progress=report))
    try:
        save_quality(folder, quality, args.corpus)  # the app's Syntax features page shows it
    except OSError:
        pass  # a read-only SAE folder
    if args.json:
        print(json.dumps({"sae": str(folder), "model": bundle.name, "layer": layer, "corpus": args.corpus,
                          **quality.to_dict()}, indent=1))
    else:
        print(f"{folder} ({bundle.name}, layer {layer}, {sae.cfg.d_sae} latents, k={sae.cfg.k}) on {args.corpus}:")
        print(summary_line(quality))
    return 0


def _activations(args: argparse.Namespace, sae: SparseAutoencoder, folder: Path) -> CorpusActivations:
    """The corpus's activations, from ``DIR/activations/`` when computed before with the same weights."""
    from probes.sae.corpus import corpus_activations, load_activations, save_activations
    from probes.sae.store import activation_key, activation_path

    key = activation_key(folder, args.corpus, args.limit, args.max_tokens, args.model or sae.cfg.model_name)
    path = activation_path(folder, key)
    cached = load_activations(path, key)
    if cached is not None:
        return cached
    sources = _sources(args)
    bundle, layer = _model_for(args, sae)
    acts = _with_bar(f"SAE activations {bundle.name}", "snippets", args.quiet, lambda report: corpus_activations(
        sae, bundle, sources, layer, max_tokens=args.max_tokens, on_progress=report))
    try:
        save_activations(acts, path, key)
    except OSError:
        pass  # a read-only SAE folder: recomputed next time
    return acts


def _enrichment(args: argparse.Namespace, acts: CorpusActivations) -> Enrichment:
    from probes.sae import enrich

    return enrich(acts.matrix(), acts.snippet, acts.category, acts.node_type, acts.categories, acts.node_types,
                  n_boot=getattr(args, "n_boot", 200), seed=getattr(args, "seed", 0))


def execute_enrich(args: argparse.Namespace) -> int:
    """Enrich every latent with the syntax it fires on."""
    sae, folder = _sae_of(args)
    result = _enrichment(args, _activations(args, sae, folder))
    if args.out:
        result.export(args.out)
    if args.json:
        print(json.dumps(result.to_dict(args.top), indent=1))
        return 0
    alive = int((result.fires > 0).sum())
    print(f"{folder}: {result.n_latents} latents, {alive} fire on {result.n_tokens:,} tokens of {result.n_snippets} "
          f"snippets ({args.corpus})")
    for category in result.categories:
        ranked = result.ranked(category, args.top)
        shown = ", ".join(f"{r['latent']} (P {r['precision']:.2f} R {r['recall']:.2f})" for r in ranked) or "-"
        print(f"  {category:<24} {shown}")
    if args.out:
        print(f"table written to {args.out}")
    return 0


def execute_show(args: argparse.Namespace) -> int:
    """Print one latent's dashboard."""
    from probes.sae import latent_card, render_card
    from probes.sae.dashboard import check_latent

    sae, folder = _sae_of(args)
    check_latent(args.latent, sae.cfg.d_sae)
    if args.layer is not None or args.model is not None:
        _model_for(args, sae)  # another model or layer: one line before the corpus is read
    acts = _activations(args, sae, folder)
    card = latent_card(acts, _enrichment(args, acts), args.latent, top=args.top)
    print(json.dumps(card, indent=1) if args.json else render_card(card))
    return 0


def execute_versus(args: argparse.Namespace) -> int:
    """Compare the best single latent with the linear probe on INSPECT tasks."""
    from probes.catalog import build_tasks
    from probes.sae import versus_probe

    sae, folder = _sae_of(args)
    tasks = build_tasks([t for t in args.tasks.split(",") if t.strip()], args.corpus, args.size, args.seed,
                        args.task_file or [])
    bundle, layer = _model_for(args, sae)
    result = _with_bar(f"SAE versus probe {bundle.name}", "tasks", args.quiet, lambda report: versus_probe(
        sae, bundle, tasks, layer, max_tokens=args.max_tokens, n_boot=args.n_boot, seed=args.seed,
        on_progress=report))
    if args.out:
        result.export(args.out)
    if args.json:
        print(json.dumps({"sae": str(folder), "model": bundle.name, **result.to_dict()}, indent=1))
        return 0
    print(f"{folder} ({bundle.name}, layer {layer}, {result.pooling} token): test accuracy "
          f"[{100 * result.level:.0f}% interval]")
    for t, name in enumerate(result.tasks):
        (p_lo, p_hi), (l_lo, l_hi) = result.probe_ci[t], result.latent_ci[t]
        print(f"  {name:<6} {result.n_classes[t]:2d} classes: probe {result.probe_accuracy[t]:.3f} [{p_lo:.3f}, "
              f"{p_hi:.3f}], latent {result.latent[t]} {result.latent_accuracy[t]:.3f} [{l_lo:.3f}, {l_hi:.3f}], "
              f"majority {result.majority[t]:.3f}; {result.rule(t).describe(result.labels[t])}")
    if args.out:
        print(f"table written to {args.out}")
    return 0
