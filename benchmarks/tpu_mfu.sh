#!/usr/bin/env bash
# The trainer's MFU on one TPU host, as one prepared run (docs/benchmarks.md, "On one TPU v5e").
# The host has JAX but no network: the token mixture comes built (benchmarks/train_mfu.py --data DIR, written on a
# machine with the corpus), and the trainer's other imports install from a local package index (INDEX, a PEP 503
# folder) into /tmp/site, appended to PYTHONPATH so that the host's own JAX stays first.
#   DATA=.gpu/mix4096 INDEX=file:///opt/pypi/simple OUT=/tmp/out bash benchmarks/tpu_mfu.sh             # SET=final
#   SET=options ... bash benchmarks/tpu_mfu.sh    # every memory option's figure, and the splash block-size sweeps
# A set's runs go in one process (benchmarks/train_mfu.py --variants), within LIMIT seconds in all; one that fails
# or runs out of memory leaves the others' figures (in $OUT/results.jsonl, each run's log in $OUT/list.log).
# SPLASH_850M / SPLASH_150M: splash attention's block sizes for the presets (default: datapipe/train/splash.py's).
set -u
DATA=${DATA:-.gpu/mix4096}
OUT=${OUT:-/tmp/tpu_mfu}
LIMIT=${LIMIT:-560}
PRESET=${PRESET:-850m}
SET=${SET:-final}
S850=${SPLASH_850M:+--splash-blocks $SPLASH_850M}
S150=${SPLASH_150M:+--splash-blocks $SPLASH_150M}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -n "${INDEX:-}" ]; then
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --only-binary=:all: --no-compile --no-cache-dir \
    --index-url "$INDEX" --target /tmp/site optax orbax-checkpoint tensorstore numba pyyaml zstandard jsonschema \
    humanize simplejson msgpack cloudpickle etils absl-py >/tmp/pip.log 2>&1 || { tail -3 /tmp/pip.log; exit 1; }
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site
fi
python3 -c "import jax; print('jax', jax.__version__, jax.devices()[0].device_kind, 'x', jax.device_count())"
source "$(dirname "$0")/mfu_run.sh"
B850="--preset 850m --batch 4 --moments bfloat16"  # the 850m preset's plan: remat attention, loss_chunk 512
case $SET in
  final)  # the acceptance figures: 850m at the largest batch that fits (its fastest then runs 20 steps with a
          # restore check and a profile), and 150m
    cat >"$OUT/variants.txt" <<LIST
850m_b4 $B850 $S850
850m_b3 $B850 --batch 3 $S850 --no-check
150m_b4 --preset 150m --batch 4 --remat dots_attention --loss-chunk 512 $S150
150m_b8 --preset 150m --batch 8 --remat dots_attention --loss-chunk 512 $S150 --no-check
850m_b2 $B850 --batch 2 $S850 --no-check
850m $B850 --batch-of 850m_b4,850m_b3,850m_b2 --steps 20 $S850 --no-check --check-restore 2 --profile $OUT
LIST
    ;;
  options)  # the block-size sweeps, then each memory option at a time
    cat >"$OUT/variants.txt" <<LIST
850m_b4 $B850 --steps 10
sweep_850m --preset 850m --batch 4 --splash-sweep
sweep_150m --preset 150m --batch 4 --splash-sweep
850m_b4_tuned $B850 --steps 20 --splash-blocks best:sweep_850m --no-check --check-restore 2 --profile $OUT
150m_b4 --preset 150m --batch 4 --remat dots_attention --loss-chunk 512 --splash-blocks best:sweep_150m
150m_b8 --preset 150m --batch 8 --remat dots_attention --loss-chunk 512 --splash-blocks best:sweep_150m --no-check
850m_mlp_offload $B850 --remat attention_offload --splash-blocks best:sweep_850m --no-check
LIST
    ;;
  more)  # the options the 850m plan goes without: what each one costs, or why it does not fit
    cat >"$OUT/variants.txt" <<LIST
850m_fp32_moments --preset 850m --batch 3 $S850 --no-check
850m_no_chunk $B850 --batch 3 --loss-chunk 0 $S850 --no-check
850m_opt_offload $B850 --batch 3 --opt-offload $S850 --no-check
850m_fp32_offload --preset 850m --batch 3 --opt-offload $S850 --no-check
850m_mlp_offload $B850 --batch 3 --remat attention_offload $S850 --no-check
850m_full_b8 $B850 --batch 8 --remat full $S850 --no-check
LIST
    ;;
  *) echo "SET must be final, options or more"; exit 2 ;;
esac
run_list "$OUT/variants.txt"
