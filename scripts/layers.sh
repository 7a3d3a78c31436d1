#!/usr/bin/env bash
# Fails when a file of lib/ calls a function (or uses a variable) defined in a
# higher layer.  Layers, lowest first, are the folders of lib/ in the order of
# LAYERS in the Makefile (a layer's subfolders belong to it); a layer may use
# its own symbols and lower layers'.  Inside a layer, tiers (below) order its
# files or subfolders the same way.
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
    for o in "$build"/lib/"$l"/*.o "$build"/lib/"$l"/*/*.o; do
        [ -e "$o" ] || continue
        objs+=("$o")
        while read -r sym; do def[$sym]=$l; done < <(nm --defined-only -g "$o" | awk '$2 ~ /[TDBRC]/ {print $3}')
    done
done
[ ${#objs[@]} -gt 0 ] || { echo "layers: no objects under $build/lib (run make first)" >&2; exit 2; }
bad=0
for o in "${objs[@]}"; do
    l=${o#"$build"/lib/}
    l=${l%%/*}
    while read -r sym; do
        d=${def[$sym]:-}
        [ -n "$d" ] || continue
        if [ "${rank[$d]}" -gt "${rank[$l]}" ]; then
            echo "layers: ${o#"$build"/}: layer $l uses $sym of the higher layer $d" >&2
            bad=1
        fi
    done < <(nm -u "$o" | awk '{print $2}')
done
# Inside a layer, the same rule over its tiers: a unit (a file, or a subfolder
# of the layer) may use its own symbols and those of lower tiers, not those of
# another unit of its tier or a higher one.  Every object of the layer must be
# in a tier.  LAYER:UNIT:TIER ...
#   zoo: zoo_tape < zoo_layers < zoo_cnn, zoo_rnn, zoo_gpt < zoo (lib/zoo/zoo_tape.h)
#   planning: recompute (the rules both layouts and the bound call), milp (the model
#   and its back ends) < bound, pool/, bestfit/ (the two layouts, apart) < bound_lp,
#   planner
tiers="zoo:zoo_tape:0 zoo:zoo_layers:1 zoo:zoo_cnn:2 zoo:zoo_rnn:2 zoo:zoo_gpt:2 zoo:zoo:3
planning:recompute:0 planning:milp:0 planning:bound:1 planning:pool:1 planning:bestfit:1 planning:bound_lp:2
planning:planner:2"
for layer in $(printf '%s\n' $tiers | cut -d: -f1 | sort -u); do
    declare -A tier=() tdef=()
    for e in $tiers; do
        [ "${e%%:*}" = "$layer" ] || continue
        u=${e#*:}
        tier[${u%%:*}]=${u##*:}
    done
    unit_of() { local r=${1#"$build"/lib/"$layer"/}; r=${r%%/*}; echo "${r%.o}"; }
    lobjs=("$build"/lib/"$layer"/*.o "$build"/lib/"$layer"/*/*.o)
    for o in "${lobjs[@]}"; do
        [ -e "$o" ] || continue
        u=$(unit_of "$o")
        [ -n "${tier[$u]:-}" ] || { echo "layers: $o is in no $layer tier (add it to scripts/layers.sh)" >&2; bad=1; continue; }
        while read -r sym; do tdef[$sym]=$u; done < <(nm --defined-only -g "$o" | awk '$2 ~ /[TDBRC]/ {print $3}')
    done
    for u in "${!tier[@]}"; do
        [ -e "$build/lib/$layer/$u.o" ] || [ -d "$build/lib/$layer/$u" ] ||
            { echo "layers: $layer/$u missing (a tier was renamed? update scripts/layers.sh)" >&2; bad=1; }
    done
    for o in "${lobjs[@]}"; do
        [ -e "$o" ] || continue
        u=$(unit_of "$o")
        [ -n "${tier[$u]:-}" ] || continue
        while read -r sym; do
            d=${tdef[$sym]:-}
            [ -n "$d" ] && [ "$d" != "$u" ] || continue
            if [ "${tier[$d]}" -ge "${tier[$u]}" ]; then
                echo "layers: ${o#"$build"/lib/} uses $sym of $layer/$d, not a lower $layer tier" >&2
                bad=1
            fi
        done < <(nm -u "$o" | awk '{print $2}')
    done
    unset tier tdef
done
[ $bad = 0 ] && echo "layers: ${#objs[@]} objects, every call goes to its own layer or a lower one"
exit $bad
