#!/usr/bin/env bash
# The trainer's MFU on one TPU host, as one prepared run (docs/benchmarks.md, "`150m` at seq_len 4096 on one TPU v5e").
# The host has JAX but no network: the token mixture comes built (benchmarks/train_mfu.py --data DIR, written on a
# machine with the corpus), and the trainer's other imports install from a local package index (INDEX, a PEP 503
# folder) into /tmp/site, appended to PYTHONPATH so that the host's own JAX stays first.
#   DATA=.gpu/mix4096 INDEX=file:///opt/pypi/simple OUT=/tmp/out bash benchmarks/tpu_mfu.sh
# Each variant runs under its own time limit, so one that fails or runs out of memory leaves the others' figures.
set -u
DATA=${DATA:-.gpu/mix4096}
OUT=${OUT:-/tmp/tpu_mfu}
LIMIT=${LIMIT:-120}
PRESET=${PRESET:-150m}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -n "${INDEX:-}" ]; then
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --only-binary=:all: --no-compile --no-cache-dir \
    --index-url "$INDEX" --target /tmp/site optax orbax-checkpoint tensorstore numba pyyaml zstandard jsonschema \
    humanize simplejson msgpack cloudpickle etils absl-py >"$OUT/pip.log" 2>&1 || { tail -3 "$OUT/pip.log"; exit 1; }
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site
fi
python3 -c "import jax; print('jax', jax.__version__, jax.devices()[0].device_kind, 'x', jax.device_count())"
source "$(dirname "$0")/mfu_run.sh"
for v in ${VARIANTS:-auto_b4 attn_b4 full_b8 xla_b4}; do  # batch 8 without full remat runs out of HBM
  case $v in
    auto_b4) run auto_b4 --batch 4 --steps 10 ;;
    auto_b8) run auto_b8 --batch 8 --steps 10 ;;
    auto_b16) run auto_b16 --batch 16 --steps 6 ;;
    attn_b4) run attn_b4 --batch 4 --steps 10 --remat dots_attention ;;
    attn_b8) run attn_b8 --batch 8 --steps 10 --remat dots_attention ;;
    full_b8) run full_b8 --batch 8 --steps 10 --remat full ;;
    attn_b16) run attn_b16 --batch 16 --steps 6 --remat dots_attention ;;
    xla_b4) run xla_b4 --batch 4 --steps 10 --attention xla ;;
  esac
done
