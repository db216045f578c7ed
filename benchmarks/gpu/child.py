"""Python commands of the GPU report: a fresh interpreter on the GPU, a fork of the running one in a dry run.

``python(args, fork=...)`` runs ``python SCRIPT ...`` or ``python -m MODULE ...`` from the repository root and
returns its output and exit code, like ``subprocess.run``. The GPU report runs each section (``sections.py NAME``)
this way, and some sections run commands (``python -m asc eval``, ``pytest -m gpu``, two benchmark scripts).

A dry run (``run.sh --dry``, on the CPU with tiny sizes, part of ``make test``) spent most of its minute starting
interpreters and importing torch and transformers, about 5 s of CPU for each of its eight sections and four commands.
There the driver imports them once (:func:`preload`) and every section and command but pytest is a forked child that
runs its script or module with :mod:`runpy`, as ``python`` would: its own process, output, exit code and time limit,
without the imports (59 s -> 28 s here, idle). On the GPU each keeps a fresh interpreter: a process that has touched
CUDA must not fork, and the report times the commands as a user starts them.
"""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[2]


def preload() -> None:
    """Import what every dry-run section imports (torch, transformers and the report's three architectures, the
    pipeline), so that forked children start with it."""
    import torch  # noqa: F401
    import transformers.models.gemma3.modeling_gemma3  # noqa: F401
    import transformers.models.llama.modeling_llama  # noqa: F401
    import transformers.models.qwen2.modeling_qwen2  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import asc.explain  # noqa: F401


def python(args: list[str], *, fork: bool, timeout: float | None = None) -> tuple[str, str, int | None]:
    """``python ARGS`` from the repository root: (stdout, stderr, exit code), the code None when it ran out of
    ``timeout`` seconds (then killed). ``fork``: in a child of this process (see the module doc)."""
    if not fork:
        try:
            proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
            return proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as err:
            return _text(err.stdout), _text(err.stderr), None
    with tempfile.TemporaryDirectory(prefix="asc-child-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run(args, out, err)
        code = _wait(pid, timeout)
        return out.read_text(errors="replace"), err.read_text(errors="replace"), code


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _run(args: list[str], out: Path, err: Path) -> NoReturn:
    """The child: output to the two files, then the script or module as ``__main__``; never returns."""
    code = 1
    try:
        os.chdir(ROOT)
        for fd, path in ((1, out), (2, err)):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(handle, fd)
            os.close(handle)
        # also where a host (pytest's capture) replaced the Python-level streams
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path.insert(0, str((ROOT / args[0]).resolve().parent))  # what `python SCRIPT` puts first
            runpy.run_path(args[0], run_name="__main__")
        code = 0
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001  (the child reports every failure as python would)
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float | None) -> int | None:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)
