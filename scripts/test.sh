#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script):
# install dependencies, configure with warnings as errors, build, run every CTest test.
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -L unit         # extra arguments go to ctest (here: one label)
# The build tree is build/ (GOSSIP_RDZV_BUILD_DIR overrides it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${GOSSIP_RDZV_BUILD_DIR:-build}   # override to keep another build tree

bash scripts/setup.sh
# Line tables only (-g1, not -g): backtraces and sanitizer reports keep file:line, and the
# tree compiles about a third faster (docs/hardening.md, "What CI runs").
cmake -S . -B "$BUILD_DIR" -G Ninja -DGOSSIP_RDZV_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build "$BUILD_DIR" -j2
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 "$@"
