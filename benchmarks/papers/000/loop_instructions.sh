#!/bin/bash
# Instructions the engine spends per input tuple on the recursive query, case (a), one small query,
# hybrid DTS — counted by callgrind inside the executor only (Python and data preparation excluded),
# so that changes to the loop's constant can be compared on a machine whose wall clock is noisy.
#
#   benchmarks/papers/000/loop_instructions.sh [TUPLES]      # default 10,000; needs valgrind
#
# Build the extension with symbols first (CMAKE_BUILD_TYPE=RelWithDebInfo), or the executor's
# functions cannot be found and nothing is counted.
set -euo pipefail
n=${1:-10000}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
py=$(python -c "import sys; print(sys.executable)")  # the interpreter itself, not a shim
cd "$out"  # not the checkout: `python -` puts the working directory first on sys.path
OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
  --toggle-collect='*DtsExecutor::AdvanceTo*' --toggle-collect='*DtsExecutor::Push*' \
  "$py" - "$n" "$here" <<'PY' 2> "$out/valgrind.log"
import sys
sys.path.insert(0, sys.argv[2])
import reproduce as R
n = int(sys.argv[1])
R.run(R.recursive_script(1), {"input": R.data(n, 1)}, 65536)
PY
total=$(grep -o "refs: *[0-9,]*" "$out/valgrind.log" | tr -dc 0-9)
echo "$n tuples: $total instructions in the executor, $((total / n)) per input tuple"
rm -rf "$out"
