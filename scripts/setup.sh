#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, when missing (needs root).
# python3-jsonschema checks documents against schemas/; chromium runs the HTML
# report in a headless browser; man-db renders the man pages (each test skips
# cleanly without its package).
set -euo pipefail
need=()
# python3-torch, python3-torchvision: bin/dfg-from-torch and its tests (test/py), run by /usr/bin/python3
# libopenmpi-dev, openmpi-bin: swapadvisor-search-mpi and its tests (mpicc, mpirun)
# coinor-libcbc-dev and libglpk-dev: the optional MILP / LP solvers (optimal policy, --bound=lp)
# libopenblas0-pthread: Debian's torch (no MKL) does its matrix products through libblas.so.3,
#   which is the reference BLAS unless OpenBLAS provides it (30 times slower: test/py's ViT
#   training steps take 80 s each instead of 3)
for pkg in gcc make libcjson-dev check pkg-config graphviz libxml2-utils python3-torch python3-torchvision \
           python3-jsonschema chromium man-db libopenmpi-dev openmpi-bin coinor-libcbc-dev libglpk-dev \
           valgrind clang libopenblas0-pthread; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
