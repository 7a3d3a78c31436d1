#!/usr/bin/env bash
# Plans one cell of a batch (scripts/batch.mk runs one of these per cell, make
# -j decides how many at once): swapadvisor-search GRAPH --memory MEM --policy
# POLICY, then swapplan-emit --format check --strict on the plan, and writes
# one CSV row to ROW (atomically: a temporary file renamed):
#   graph,memory,policy,iteration_us,pct_of_ideal,validity,exit_code
# validity is "valid", "invalid" (the check failed) or "-" (no plan: the search
# exited non-zero, its code in exit_code; its stderr is in PLAN's .log).
# Exits 0 once the row is written, whatever the cell's outcome; non-zero only
# when the row cannot be written.
# Usage: scripts/batch-cell.sh BIN GRAPH MEM POLICY ROW PLAN [SEARCH ARGS...]
set -u
[ $# -ge 6 ] || { echo "usage: $0 BIN GRAPH MEM POLICY ROW PLAN [ARGS...]" >&2; exit 2; }
bin=$1 graph=$2 mem=$3 policy=$4 row=$5 plan=$6
shift 6
log=${plan%.json}.log
rm -f "$plan"
"$bin/swapadvisor-search" "$graph" --memory "$mem" --policy "$policy" "$@" -q -o "$plan" 2>"$log"
rc=$?
valid=- iter= pct=
if [ $rc -eq 0 ]; then
    if "$bin/swapplan-emit" "$plan" --graph "$graph" --format check --strict -q >>"$log" 2>&1; then
        valid=valid
    else
        valid=invalid
    fi
    # the plan's "predicted" block (docs/formats.md): iteration_us and ideal_us
    iter=$(grep -o '"iteration_us": *[-0-9.eE+]*' "$plan" | head -1 | sed 's/.*: *//')
    ideal=$(grep -o '"ideal_us": *[-0-9.eE+]*' "$plan" | head -1 | sed 's/.*: *//')
    pct=$(awk -v i="$iter" -v d="$ideal" 'BEGIN { if (i > 0) printf "%.1f", 100 * d / i }')
    iter=$(awk -v i="$iter" 'BEGIN { printf "%.1f", i }')
fi
tmp=$row.tmp.$$
printf '%s,%s,%s,%s,%s,%s,%d\n' "$graph" "$mem" "$policy" "$iter" "$pct" "$valid" "$rc" >"$tmp" && mv -f "$tmp" "$row"
