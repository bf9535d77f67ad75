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

# `run_list FILE`: every line of FILE (`NAME ARGS...`) as one run of benchmarks/train_mfu.py --variants, all in one
# process (a TPU program's start costs seconds), within $LIMIT seconds in all; each run's figures are appended to
# $OUT/results.jsonl and its log to $OUT/list.log. After a crash the process starts again and skips the runs done.
run_list() {  # FILE
  local attempt status
  for attempt in 1 2 3; do
    timeout "$LIMIT" python3 benchmarks/train_mfu.py --data "$DATA" --preset "$PRESET" --seq-len 4096 --mesh 1,-1,1 \
      --variants "$1" --results "$OUT/results.jsonl" 2>&1 | tee -a "$OUT/list.log" | grep --line-buffered -E \
      "^== |^memory:|params, |steps in|^losses|^bench:|restore check|^splash (sweep|blocks)|^profile|^  |rror|^[A-Za-z0-9_]+: " \
      | cut -c1-400
    status=${PIPESTATUS[0]}
    [ "$status" = 0 ] && return 0
    echo "exit $status (attempt $attempt)"
    [ "$status" = 124 ] && return "$status"  # out of time: what is done is in results.jsonl
    sleep 5  # a TPU can refuse a program started just after another ended
  done
}
