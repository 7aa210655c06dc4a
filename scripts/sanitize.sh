#!/usr/bin/env bash
# Builds soap-opt, soap-zoo and the unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC's, at -O1, in a second build folder) and
# runs the unit tests and every lit test whose RUN lines need no other tool
# (no executables, MPI or profiler). A sanitizer report fails the run:
# UndefinedBehaviorSanitizer does not recover, and a report ends the
# process with a non-zero status.
#
#   scripts/sanitize.sh            # build-asan/ (SOAP_ASAN_DIR to change)
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${SOAP_ASAN_DIR:-build-asan}
FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$DIR/build.ninja" ]; then
  # vptr checks need every library built with them (Debian's libMLIR is
  # not): they are off.
  cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g0" -DCMAKE_C_FLAGS_DEBUG="-O1 -g0" \
    -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_C_FLAGS="$FLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null ||
    { echo "sanitize.sh: configure failed"; exit 1; }
fi
cmake --build "$DIR" -- soap-opt soap-zoo soap-unit-tests ||
  { echo "sanitize.sh: build failed"; exit 1; }

# Leaks are not checked: MLIR's registries live until exit by design.
# LLVM's allocators poison and unpoison their slabs in inline code, which
# runs instrumented in SOAP's objects and uninstrumented in Debian's
# libMLIR: those annotations are ignored (allow_user_poisoning=0), or every
# attribute built in both would be reported.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
failed=0
"$DIR/bin/soap-unit-tests" --gtest_brief=1 || failed=1

tests=()
while IFS= read -r file; do
  grep -q "RUN:" "$file" || continue
  grep -qE "soap-translate|soap-profile|soap-gradcheck|soap-host-probe|soap_fuzz|%mpirun|REQUIRES:" \
    "$file" && continue
  tests+=("$DIR/${file}")
done < <(find test -path '*/Inputs' -prune -o \( -name '*.mlir' -o -name '*.test' \) -print | sort)
echo "sanitize.sh: ${#tests[@]} lit tests"
SOAP_LIT_SANITIZED=1 SOAP_LIT_TOOLS=soap-opt,soap-zoo /usr/lib/llvm-22/bin/lit -s "${tests[@]}" ||
  failed=1
[ "$failed" -eq 0 ] && echo "sanitize.sh: all passed" ||
  echo "sanitize.sh: FAILED"
exit "$failed"
