#!/usr/bin/env bash
# The sanitizer run (docs/CONTRIBUTING.md): builds the core, its C++ tests and the Python extension with
# -fsanitize=address,undefined into a build directory of its own, runs every C++ test, then a subset
# of the Python suite on the sanitized extension with the ASan runtime preloaded. Any report fails
# the run (halt_on_error for both sanitizers).
#
#   tests/sanitize/run.sh [build-dir] [-- extra pytest arguments]
#
# build-dir defaults to build/sanitize/ in the repository; the tree's own cq_core/ is not touched
# (the sanitized extension goes to <build-dir>/python/cq_core/). CQ_SANITIZE_JOBS sets the build's
# parallelism (default: the number of cores), CQ_SANITIZE_PYTHON the interpreter (default: python3
# on PATH, which needs pybind11, pytest, hypothesis, pyarrow and pandas).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/sanitize}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
python=${CQ_SANITIZE_PYTHON:-python3}
jobs=${CQ_SANITIZE_JOBS:-$(nproc)}
pyext=$build/python/cq_core

start=$(date +%s)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCQ_SANITIZE=ON \
    -DCQ_BUILD_PYTHON=ON -DCQ_BUILD_TESTS=ON -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$pyext" \
    -DPython3_EXECUTABLE="$(command -v "$python")" \
    -Dpybind11_DIR="$("$python" -c 'import pybind11; print(pybind11.get_cmake_dir())')"
fi
cmake --build "$build" --parallel "$jobs"
cp "$root/cq_core/__init__.py" "$root/cq_core/py.typed" "$pyext/"
echo "== built in $(( $(date +%s) - start )) s"

# halt_on_error: the first report ends the process with an error, so that no report goes unseen.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1

start=$(date +%s)
"$build/src_cpp/tests/cq_core_tests"
echo "== C++ tests in $(( $(date +%s) - start )) s"

# CPython is not built with ASan: its runtime must be loaded first — with libstdc++, which the
# interpreter does not link, or ASan cannot find the real __cxa_throw and aborts at the first C++
# exception — and CPython's own allocations that live until exit are not leaks to report.
# pytest captures a test's stderr, and the sanitizer ends the process before pytest prints it:
# reports go to files, printed if the run fails.
reports=$build/reports
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=0:detect_stack_use_after_return=1:log_path=$reports/asan
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan
trap 'status=$?; [ $status -ne 0 ] && [ -n "$(ls -A "$reports")" ] && head -40 "$reports"/*; exit $status' EXIT
preload="$("${CXX:-c++}" -print-file-name=libasan.so) $("${CXX:-c++}" -print-file-name=libstdc++.so)"
start=$(date +%s)
cd "$root"
# The sanitized extension must be the one imported: PYTHONSAFEPATH keeps the source tree's cq_core/
# (the working directory) from coming first, and an editable install of cq in the interpreter's
# environment would map cq_core to its own tree whatever PYTHONPATH says — refused here.
export PYTHONSAFEPATH=1 PYTHONPATH="$build/python:$root"
# Tests that bound a subprocess's time (a loop of 10^7 rows) give it longer: ASan slows it down.
export CQ_TEST_TIMEOUT_SCALE=10
LD_PRELOAD="$preload" "$python" -c "import cq_core, sys; sys.exit(0 if cq_core.__file__.startswith('$pyext') else
  f'cq_core comes from {cq_core.__file__}, not the sanitized build $pyext: use an interpreter without cq installed')"
LD_PRELOAD="$preload" "$python" -m pytest -q -p no:cacheprovider \
  -o addopts="--import-mode=importlib" \
  tests/test_snapshot.py tests/test_snapshot_damage.py tests/test_end_to_end.py tests/test_relation.py \
  tests/test_errors.py tests/executors "$@"
# The conformance corpus once per configuration with the input pushed whole (and snapshot/restore
# after it): every file, every executor and lifetime method, at a tenth of the matrix's cost.
LD_PRELOAD="$preload" "$python" -m pytest -q -p no:cacheprovider \
  -o addopts="--import-mode=importlib" tests/conformance -k whole "$@"
echo "== Python subset in $(( $(date +%s) - start )) s"
