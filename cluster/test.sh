#!/usr/bin/env bash
# The README's test command, for a fresh machine of this kind: installs the tools the tests use
# (cluster/test-tools.sh), builds everything (the tests start the `parley` executable), runs every test.
# Arguments go to `swift test` (e.g. `--filter ClientFaultTests`).
set -euo pipefail
cd "$(dirname "$0")/.."
cluster/test-tools.sh
swift build
swift test "$@"
