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
# Inside the zoo, the same rule over its tiers (lib/zoo/zoo_tape.h):
# zoo_tape < zoo_layers < zoo_cnn, zoo_rnn, zoo_gpt < zoo.
declare -A ztier zdef
for f in zoo_tape:0 zoo_layers:1 zoo_cnn:2 zoo_rnn:2 zoo_gpt:2 zoo:3; do ztier[${f%%:*}]=${f##*:}; done
for f in "${!ztier[@]}"; do
    o=$build/lib/zoo/$f.o
    [ -e "$o" ] || { echo "layers: $o missing (a zoo tier was renamed? update scripts/layers.sh)" >&2; bad=1; continue; }
    while read -r sym; do zdef[$sym]=$f; done < <(nm --defined-only -g "$o" | awk '$2 ~ /[TDBRC]/ {print $3}')
done
for o in "$build"/lib/zoo/*.o; do
    f=$(basename "$o" .o)
    [ -n "${ztier[$f]:-}" ] || { echo "layers: $o is in no zoo tier (add it to scripts/layers.sh)" >&2; bad=1; continue; }
    while read -r sym; do
        d=${zdef[$sym]:-}
        [ -n "$d" ] && [ "$d" != "$f" ] || continue
        if [ "${ztier[$d]}" -ge "${ztier[$f]}" ]; then
            echo "layers: zoo/$f.o uses $sym of zoo/$d.o, not a lower zoo tier" >&2
            bad=1
        fi
    done < <(nm -u "$o" | awk '{print $2}')
done
[ $bad = 0 ] && echo "layers: ${#objs[@]} objects, every call goes to its own layer or a lower one"
exit $bad
