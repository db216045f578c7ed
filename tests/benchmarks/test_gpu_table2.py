"""glueCode's Table 2 for the GPU machine (benchmarks/gpu/table2.sh) runs here on the CPU with tiny models, across
commands as it will there: the payload arrives in parts (a model runs once its parts are all there, each part and
file checksummed), a deadline stops a command between chunks, a fresh machine continues from the results an earlier
command sent back, and the predictions equal one uninterrupted run's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from benchmarks.gpu import parts, table2
from benchmarks.gpu.bundle import pack_folder, pack_tasks
from tests.helpers import ROOT, gluecode_items

SET = "toy-4-seed0"


def _task_set(run: Path) -> None:
    from probes.gluecode.items import TASKS, save_items
    from probes.gluecode.runs import task_file

    for task in TASKS:
        save_items(task_file(run, SET, task), task, gluecode_items(task), {"corpus": "toy", "size": 4, "seed": 0})


def _payload(tmp: Path, tiny) -> Path:
    """Parts of a tiny payload under ``tmp/all``: the task set's test items and two tiny model folders."""
    from tests.support.models import tiny_random_model

    built = tmp / "built"
    _task_set(built)
    (tmp / "site" / "t2marker").mkdir(parents=True)
    (tmp / "site" / "t2marker" / "__init__.py").write_text("")
    with tarfile.open(tmp / table2.SITE_ARCHIVE, "w:xz") as tar:  # the wheels' packages, unpacked
        tar.add(tmp / "site" / "t2marker", arcname="t2marker")
    files = [(table2.SITE_ARCHIVE, tmp / table2.SITE_ARCHIVE),
             (table2.TASKS_ARCHIVE, pack_tasks(built, SET, tmp / table2.TASKS_ARCHIVE))]
    for name, seed in (("tiny-a", 0), ("tiny-b", 1)):
        bundle = tiny if seed == 0 else tiny_random_model(seed=seed)
        bundle.model.save_pretrained(tmp / name)
        bundle.tokenizer.save_pretrained(tmp / name)
        files.append((f"{name}.tar", pack_folder(tmp / name, tmp / f"{name}.tar")))
    manifest = parts.split(files, tmp / "all", 96 * 1024)
    spans = parts.spans(manifest)
    assert spans[table2.TASKS_ARCHIVE][1] < spans["tiny-a.tar"][1] < spans["tiny-b.tar"][1]  # whole one by one
    return tmp / "all"


def _only(tmp: Path, folders: list[Path], name: str) -> Path:
    """A folder holding copies of some ``.gpu-part<i>`` folders: what one command carries."""
    dest = tmp / name
    for folder in folders:
        shutil.copytree(folder, dest / folder.name)
    return dest


def _command(*args: str, out: Path) -> dict:
    proc = subprocess.run([str(ROOT / "benchmarks" / "gpu" / "table2.sh"), "--device", "cpu", "--chunk", "1",
                           "--carried", str(out / "none"), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OUT": str(out), "PYTHON": sys.executable}, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads((out / "table2-status.json").read_text())


def _predictions(archive: Path, tmp: Path) -> dict:
    """Every prediction in a results archive, without its timing: {(file, item, mode): row}."""
    folder = tmp / archive.parent.name
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    rows = {}
    for path in folder.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            row.pop("seconds")
            rows[(str(path.relative_to(folder)), row["item_id"], row["mode"])] = row
    return rows


@pytest.mark.slow
def test_table2_over_commands_equals_one_uninterrupted_run(tmp_path: Path, tiny, capsys):
    everything = _payload(tmp_path, tiny)
    folders = parts.part_folders(everything)
    n = len(folders)

    # command 1 carries part 1: held, nothing whole enough to run, and it says what to carry next
    status = _command("--parts", str(_only(tmp_path, folders[:1], "c1")), "--work", str(tmp_path / "w1"),
                      out=tmp_path / "o1")
    assert status["parts"]["held"] == [1] and status["parts"]["n_parts"] == n
    assert (tmp_path / "w1" / "site" / "t2marker" / "__init__.py").is_file()
    assert "tiny-a.tar" in status["parts"]["needs"] and "worker" not in status
    assert status["next"].startswith("carry .gpu-part2")

    # command 2, same machine, the other parts: both models whole; a deadline stops it partway through the first,
    # and the second is not started
    ticks = iter(range(10**6))  # a clock that moves one second each time it is read
    table2.main(["--parts", str(_only(tmp_path, folders[1:], "c2")), "--work", str(tmp_path / "w1"), "--out",
                 str(tmp_path / "o2"), "--device", "cpu", "--chunk", "1", "--deadline", "30", "--least", "8",
                 "--least-model", "1", "--carried", str(tmp_path / "none"), "--in-process"], clock=lambda: float(next(ticks)))
    status = json.loads((tmp_path / "o2" / "table2-status.json").read_text())
    assert status["parts"]["held"] == list(range(1, n + 1)) and not status["parts"]["needs"]
    done = {m: sum(r["done"] for r in status["progress"] if r["model"] == m) for m in ("tiny-a", "tiny-b")}
    expected = sum(r["expected"] for r in status["progress"] if r["model"] == "tiny-a")
    assert expected == 3 * (5 * 2 + 2) and 0 < done["tiny-a"] < expected and done["tiny-b"] == 0
    assert status["left"] == 2 * expected - done["tiny-a"] and status["next"].startswith("run again")
    partial = _predictions(tmp_path / "o2" / table2.RESULTS, tmp_path)
    assert len(partial) == done["tiny-a"]
    printed = capsys.readouterr().out
    assert "tiny-a: stopped for the deadline" in printed and "tiny-b: loaded" not in printed

    # command 3 on a fresh machine: every part again, and the results command 2 sent back
    status = _command("--parts", str(everything), "--work", str(tmp_path / "w2"), "--carried",
                      str(tmp_path / "o2" / table2.RESULTS), out=tmp_path / "o3")
    assert status["merged"] == len(partial) and status["left"] == 0 and status["worker"] == "finished"
    assert status["next"].startswith("done: every prediction of tiny-a, tiny-b")
    resumed = _predictions(tmp_path / "o3" / table2.RESULTS, tmp_path)
    assert all(resumed[k] == v for k, v in partial.items())  # kept, not answered again
    assert "tiny-b" in (tmp_path / "o3" / "table2.txt").read_text()

    # the reference: one command with every part and nothing carried
    _command("--parts", str(everything), "--work", str(tmp_path / "w3"), out=tmp_path / "o4")
    reference = _predictions(tmp_path / "o4" / table2.RESULTS, tmp_path)
    assert len(reference) == 2 * 3 * (5 * 2 + 2)  # models x levels x (test items, NAME twice)
    assert resumed == reference


def test_a_model_stopped_by_the_deadline_ends_the_command(tmp_path: Path, tiny, capsys):
    """The next model is not loaded after a stop, even when the time left would allow a load (a long chunk)."""

    class StopAtOnce(table2.Deadline):
        def should_stop(self) -> bool:
            self.stopped = True
            return True

    _task_set(tmp_path / "run")
    tiny.model.save_pretrained(tmp_path / "tiny-a")
    tiny.tokenizer.save_pretrained(tmp_path / "tiny-a")
    models = [("tiny-a", str(tmp_path / "tiny-a")), ("tiny-b", str(tmp_path / "tiny-a"))]
    table2.answer(tmp_path / "run", models, StopAtOnce(10**12, least=1), device="cpu", dtype="float32", chunk=1,
                  batch_tokens=1024, max_window=64, least_model=1)
    printed = capsys.readouterr().out
    assert "tiny-a: stopped for the deadline" in printed and "loaded" in printed and "tiny-b" not in printed


def test_parts_are_checked_and_files_are_whole_or_absent(tmp_path: Path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(os.urandom(2500))
    b.write_bytes(os.urandom(1000))
    manifest = parts.split([("a.bin", a), ("b.bin", b)], tmp_path / "src", 1000)
    folders = parts.part_folders(tmp_path / "src")
    assert [p["size"] for p in manifest["parts"]] == [1000, 1000, 1000, 500]
    assert parts.spans(manifest) == {"a.bin": (1, 3), "b.bin": (3, 4)}
    store, target = tmp_path / "store", tmp_path / "payload"
    held = parts.assemble(store, parts.receive(folders[:3], store), target)
    assert held.files == ["a.bin"] and held.needs == {"b.bin": [4]} and (target / "a.bin").read_bytes() == a.read_bytes()
    assert not (target / "b.bin").exists()
    broken = tmp_path / "broken"
    shutil.copytree(folders[3], broken / folders[3].name)
    with open(broken / folders[3].name / parts.PART_FILE, "r+b") as f:
        f.write(b"x")
    held = parts.assemble(store, parts.receive(parts.part_folders(broken), store), target)
    assert held.refused and held.missing_parts() == [4] and not (target / "b.bin").exists()
    held = parts.assemble(store, parts.receive(folders[3:], store), target)
    assert held.files == ["a.bin", "b.bin"] and (target / "b.bin").read_bytes() == b.read_bytes()


def test_the_deadline_stops_before_a_chunk_that_might_not_finish():
    now = [0.0]
    deadline = table2.Deadline(100.0, least=10.0, clock=lambda: now[0])
    stops = []
    for step in (5, 5, 20, 20, 20, 20):  # chunks of 5 s, then of 20 s
        stops.append(deadline.should_stop())
        now[0] += step
    assert stops == [False] * 5 + [True] and deadline.stopped  # at 50 s: 50 left >= 2 x 20 s, go; at 70 s: stop
    deadline.restart()  # a model load between two runs is no chunk
    now[0] = 0.0
    assert deadline.longest == 20 and not deadline.should_stop()


def test_the_same_files_pack_to_the_same_bytes(tmp_path: Path):
    """Two clones build the same payload (the same id, so parts from either fit together): the archive keeps no
    packing time or owner, only names and contents."""
    import os

    sums = []
    for i, stamp in enumerate((1_000_000_000, 1_700_000_000)):
        folder = tmp_path / f"clone{i}" / "model"
        (folder / "sub").mkdir(parents=True)
        for name, text in (("config.json", "{}"), ("sub/weights.bin", "0123")):
            (folder / name).write_text(text)
            os.utime(folder / name, (stamp, stamp))
        sums.append(pack_folder(folder, tmp_path / f"clone{i}.tar").read_bytes())
    assert sums[0] == sums[1]
    (tmp_path / "clone1" / "model" / "config.json").write_text('{"x": 1}')
    assert pack_folder(tmp_path / "clone1" / "model", tmp_path / "changed.tar").read_bytes() != sums[0]
