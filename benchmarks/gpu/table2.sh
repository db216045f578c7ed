#!/usr/bin/env bash
# glueCode's Table 2 on the GPU machine, one command of at most 10 minutes at a time (docs/models.md, GPU report). Here:
#     make gpu-table2-bundle          -> .gpu-part1/ ... .gpu-partN/ (ignored): wheels, test items, the two GGUFs
# There, from the repository root, carrying one part per command (and .gpu-table2/ after a machine was given back):
#     benchmarks/gpu/table2.sh        -> $OUT/table2-status.md (what is held, done, left, next), table2-results.tar.gz
# Arguments go to benchmarks/gpu/table2.py (--deadline SECONDS, --device, --dtype, --chunk, --work, --parts, ...).
set -u
STARTED="$(date +%s.%N)"
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-gpu-table2}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
exec "$PYTHON" benchmarks/gpu/table2.py --out "$OUT" --started "$STARTED" "$@"
