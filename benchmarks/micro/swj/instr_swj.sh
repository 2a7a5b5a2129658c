#!/bin/bash
# instr_swj.sh <tree> <queries> <matches> [rows]: instructions per input tuple (A and B) of
# bench_swj.py's script, shared and alone, counted by callgrind over the whole process, less a run
# that does everything but the pushes (Python's start, the inputs, planning). With an extension
# built RelWithDebInfo, set CQ_TOGGLE=1 to count inside cq::DtsExecutor::{Push,AdvanceTo} alone,
# as /work/tools/instr.sh does (a Release build hides those symbols).
set -euo pipefail
tree=$(cd "$1" && pwd); n=$2; m=$3; rows=${4:-20000}
here=$(cd "$(dirname "$0")" && pwd)
toggle=()
[ -n "${CQ_TOGGLE:-}" ] && toggle=(--toggle-collect='*DtsExecutor::Push*' --toggle-collect='*DtsExecutor::AdvanceTo*')
count() {
  local out; out=$(mktemp -d)
  (cd "$out" && OPENBLAS_NUM_THREADS=1 PYTHONPATH=$tree valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
    "${toggle[@]}" /work/venv/bin/python "$here/bench_swj.py" --instr "$1" --queries "$n" --matches "$m" \
    --rows "$rows" > "$out/stdout" 2> "$out/valgrind.log")
  echo "$(grep -o "refs: *[0-9,]*" "$out/valgrind.log" | tr -dc 0-9) $(cat "$out/stdout")"
  rm -rf "$out"
}
base=0
[ -z "${CQ_TOGGLE:-}" ] && base=$(count none | cut -d' ' -f1)
for plan in shared alone; do
  read -r total rest <<<"$(count $plan)"
  echo "$n queries, $m matches/probe, $plan ($rest): $(( (total - base) / (2 * rows) )) instructions per input tuple"
done
