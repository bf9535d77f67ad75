# Sourced by gpu_mfu.sh and tpu_mfu.sh: `run NAME ARGS...` runs benchmarks/train_mfu.py on the mixture in $DATA at
# seq_len 4096 for $PRESET under a time limit of $LIMIT seconds, its log in $OUT/NAME.log, and prints the lines
# that carry its figures (or why it failed: out of memory, an attention kernel that differs from the reference).
run() {  # NAME ARGS...
  local name=$1; shift
  echo "== $name: $*"
  timeout "$LIMIT" python3 benchmarks/train_mfu.py --data "$DATA" --preset "$PRESET" --seq-len 4096 --mesh 1,-1,1 "$@" \
    >"$OUT/$name.log" 2>&1
  echo "exit $?"
  grep -E "attention check|params|steps in|bench:|RESOURCE_EXHAUSTED|rror" "$OUT/$name.log" | cut -c1-300 | tail -12
  sleep 3  # a TPU can refuse a program started just after another ended
}
