#!/usr/bin/env bash
# The README's test command, for a fresh machine of this kind: installs the tools the tests use
# (cluster/test-tools.sh), builds everything (the tests start the `parley` executable), runs every test.
# Arguments go to `swift test` (e.g. `--filter ClientFaultTests`).
set -euo pipefail
cd "$(dirname "$0")/.."
cluster/test-tools.sh
swift build
# Swift Testing starts every suite at once by default. On a 2-core machine the integration suites' dozens of
# node processes then starve the in-process edge tests' timers (A2 frame deadlines, idle timeouts, X2 spacing,
# 5 s enter waits) in the first 40 s, and about 1 run in 5 failed (sessions 41-42). Six tests at a time passed
# every run tried and finished sooner (4.6-5.0 min against 5.3; docs/benchmarks.md, "The test command").
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-6}"
# Every test's databases, certificates and node folders go under one folder for the run (TMPDIR, which
# Foundation's temporaryDirectory and mktemp follow): removed when the run passes, kept and named when it fails.
# Before, each passing run left about 60 folders in /tmp.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/parley-test.XXXXXX")"
if TMPDIR="$scratch" swift test "$@"; then
  rm -rf "$scratch"
else
  status=$?
  echo "cluster/test.sh: the run failed; its test files are kept in $scratch" >&2
  exit "$status"
fi
