#!/usr/bin/env bash
# The GPU report in one command (docs/models.md, "GPU report"). On the GPU machine, from the repository root, with the
# folder .gpu/ that `make gpu-bundle` fills carried along:
#     benchmarks/gpu/run.sh            -> $OUT/gpu-report.md and $OUT/gpu-report.json (default OUT: gpu-report/)
# Here, on the CPU with tiny sizes (`make gpu-report-dry`, part of `make test`):
#     PYTHON=.venv/bin/python benchmarks/gpu/run.sh --dry
# Extra arguments go to benchmarks/gpu/report.py (--deadline SECONDS, --only SECTIONS).
set -u
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-gpu-report}"
if [[ " $* " != *" --dry "* ]] && compgen -G ".gpu/wheels/*.whl" > /dev/null; then  # Python 3.12 wheels
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/asc-site \
        .gpu/wheels/*.whl || exit 1
    export PYTHONPATH="/tmp/asc-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
exec "$PYTHON" benchmarks/gpu/report.py --out "$OUT" "$@"
