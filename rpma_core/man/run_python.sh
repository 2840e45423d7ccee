#!/usr/bin/env bash
# Runs a Python check with the host's python3 (tools/install-deps.sh): the
# offline workspace sets up no Python toolchain for Bazel's py_* rules.
set -euo pipefail
exec python3 "$@"
