#!/usr/bin/env bash
# Fails when a file of lib/ calls a function (or uses a variable) defined in a
# higher layer.  Layers, lowest first, are the folders of lib/ in the order of
# LAYERS in the Makefile; a layer may use its own symbols and lower layers'.
# Reads the objects of a build (default build/) with nm.
# Usage: scripts/layers.sh [BUILD_DIR]      exit 0: layering holds
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
layers=$(sed -n 's/^LAYERS *= *//p' Makefile)
declare -A rank def
i=0
for l in $layers; do rank[$l]=$i; i=$((i + 1)); done
objs=()
for l in $layers; do
    for o in "$build"/lib/"$l"/*.o; do
        [ -e "$o" ] || continue
        objs+=("$o")
        while read -r sym; do def[$sym]=$l; done < <(nm --defined-only -g "$o" | awk '$2 ~ /[TDBRC]/ {print $3}')
    done
done
[ ${#objs[@]} -gt 0 ] || { echo "layers: no objects under $build/lib (run make first)" >&2; exit 2; }
bad=0
for o in "${objs[@]}"; do
    l=$(basename "$(dirname "$o")")
    while read -r sym; do
        d=${def[$sym]:-}
        [ -n "$d" ] || continue
        if [ "${rank[$d]}" -gt "${rank[$l]}" ]; then
            echo "layers: ${o#"$build"/}: layer $l uses $sym of the higher layer $d" >&2
            bad=1
        fi
    done < <(nm -u "$o" | awk '{print $2}')
done
[ $bad = 0 ] && echo "layers: ${#objs[@]} objects, every call goes to its own layer or a lower one"
exit $bad
