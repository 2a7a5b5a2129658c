#!/bin/bash
# Instructions the engine spends per input tuple on the paper's benchmark query (one small query),
# counted by callgrind inside the executor only (Python and data preparation excluded),
# so that changes to the engine's constant can be compared on a machine whose wall clock is noisy.
#
#   benchmarks/papers/000/loop_instructions.sh [MODE] [TUPLES] [BATCH] [PATTERN]
#     MODE   rec-hybrid (default)   recursive query, DTS as cq runs it (the 2,000,000-tuple target)
#            rec-published          recursive query, hybrid=False
#            open-hybrid            the loop opened (DUMMY inputs), hybrid
#            open-published         the loop opened, hybrid=False
#     TUPLES default 20,000; BATCH rows per push, default 8,192 (several pushes, as a long run has)
#     PATTERN a (default): every timestamp distinct; b: four tuples per timestamp
#
# Needs valgrind, and an extension built with symbols (CMAKE_BUILD_TYPE=RelWithDebInfo), or the
# executor's functions cannot be found and nothing is counted. The DUMMY inputs of the open query
# are computed (by a recursive run) outside the count.
set -euo pipefail
mode=${1:-rec-hybrid}
n=${2:-20000}
batch=${3:-8192}
pattern=${4:-a}
case "$pattern" in a) per_ts=1 ;; b) per_ts=4 ;; *) echo "PATTERN is a or b, not $pattern" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
py=$(python -c "import sys; print(sys.executable)")  # the interpreter itself, not a shim
cd "$out"  # not the checkout: `python -` puts the working directory first on sys.path
"$py" - "$n" "$here" "$out" "$per_ts" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import pyarrow.parquet as pq
import reproduce as R
n, out = int(sys.argv[1]), sys.argv[3]
t = R.data(n, int(sys.argv[4]))
pq.write_table(t, f"{out}/input.parquet")
for name, table in R.fed_back(1, t).items():
    pq.write_table(table, f"{out}/{name}.parquet")
PY
OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
  --toggle-collect='*DtsExecutor::AdvanceTo*' --toggle-collect='*DtsExecutor::Push*' \
  "$py" - "$mode" "$batch" "$here" "$out" <<'PY' 2> "$out/valgrind.log"
import glob, os, sys
sys.path.insert(0, sys.argv[3])
import pyarrow.parquet as pq
import reproduce as R
mode, batch, out = sys.argv[1], int(sys.argv[2]), sys.argv[4]
tables = {os.path.basename(p)[:-8]: pq.read_table(p) for p in glob.glob(f"{out}/*.parquet")}
options = {"hybrid": False} if mode.endswith("published") else {}
if mode.startswith("rec"):
    R.run(R.recursive_script(1), {"input": tables["input"]}, batch, **options)
else:
    R.run(R.open_script(1), tables, batch, **options)
PY
total=$(grep -o "refs: *[0-9,]*" "$out/valgrind.log" | tr -dc 0-9)
echo "$mode ($pattern), $n tuples, batches of $batch: $total instructions in the executor, $((total / n)) per input tuple"
if [ -n "${KEEP_PROFILE:-}" ]; then cp "$out/cg.out" "$KEEP_PROFILE"; fi
rm -rf "$out"
