#!/usr/bin/env bash
# The trainer's MFU on one GPU host, as one prepared run (docs/benchmarks.md, "train_mfu on an NVIDIA H200").
# The host has JAX but no network: the token mixture comes built (benchmarks/train_mfu.py --data DIR, written
# on a machine with the corpus), and missing pure-Python packages come as wheels in WHEELS.
#   DATA=.gpu/mix4096 WHEELS=.whl OUT=/tmp/out bash benchmarks/gpu_mfu.sh
# Each variant runs under its own time limit, so one that fails or hangs leaves the others' figures.
set -u
DATA=${DATA:-.gpu/mix4096}
OUT=${OUT:-/tmp/gpu_mfu}
LIMIT=${LIMIT:-150}
mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl \
    && export PYTHONPATH=/tmp/site || exit 1
fi
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.92}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
PRESET=${PRESET:-1b}
source "$(dirname "$0")/mfu_run.sh"
for v in ${VARIANTS:-cudnn attn_saved xla}; do
  case $v in
    auto) run auto --batch 16 --steps 20 ;;
    cudnn) run cudnn --batch 16 --steps 10 --attention cudnn ;;
    attn_saved) run attn_saved --batch 16 --steps 10 --attention cudnn --remat dots_attention ;;
    batch32) run batch32 --batch 32 --steps 6 --attention cudnn --remat dots_attention ;;
    xla) run xla --batch 4 --steps 4 --attention xla ;;
  esac
done
