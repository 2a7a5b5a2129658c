#!/bin/bash
# instructions.sh <tree> <W2|W3|W5> [events]: callgrind instructions inside
# cq::DtsExecutor::{Push,AdvanceTo} per event of peer_workload.py (one engine, 65,536-row pushes).
# <tree> must hold an extension built RelWithDebInfo (symbols), e.g.
#   git worktree add /tmp/base main
#   CQ_BUILD_TYPE=RelWithDebInfo CQ_DEVBUILD_NAME=base_rwdi tools/devbuild /tmp/base
# KEEP=1 keeps the callgrind file (callgrind_annotate --auto=yes it); PYTHON=<interpreter> (python).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$1" && pwd); w=$2; n=${3:-100000}
out=$(mktemp -d); cd "$out"
OPENBLAS_NUM_THREADS=1 PYTHONPATH=$tree valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
  --toggle-collect='*DtsExecutor::Push*' --toggle-collect='*DtsExecutor::AdvanceTo*' \
  "${PYTHON:-python}" "$here/peer_workload.py" "$w" "$n" > "$out/run.log" 2> "$out/valgrind.log"
total=$(grep -o "refs: *[0-9,]*" "$out/valgrind.log" | tr -dc 0-9)
echo "$(cut -d' ' -f1-3 "$out/run.log"): $total instructions, $((total / n)) per event"
[ -n "${KEEP:-}" ] && echo "kept $out" || rm -rf "$out"
