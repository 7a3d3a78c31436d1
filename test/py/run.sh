#!/usr/bin/env bash
# Runs the dfg-from-torch tests (test/py/test_*.py) with the Python that has torch:
# $DFG_TEST_PYTHON, else /usr/bin/python3 (Debian's python3-torch; another python3 may
# come first on PATH). Ends with one line "test-py: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/../.."
PY=${DFG_TEST_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
    echo "test-py: torch or torchvision is not importable from $PY: run scripts/setup.sh" \
         "(apt-get install python3-torch python3-torchvision)" >&2
    echo "test-py: 0 passed, 1 failed"
    exit 1
fi
exec "$PY" test/py/runner.py "$@"
