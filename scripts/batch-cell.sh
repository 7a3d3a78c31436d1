#!/usr/bin/env bash
# Plans one cell of a batch (scripts/batch.mk runs one of these per cell, make
# -j decides how many at once): swapadvisor-search GRAPH --memory MEM --policy
# POLICY, then swapplan-emit --format check --strict on the plan, and writes
# one CSV row to ROW (atomically: a temporary file renamed):
#   graph,memory,policy,iteration_us,pct_of_ideal,validity,exit_code
# validity is "valid", "invalid" (the check failed) or "-" (no plan: the search
# exited non-zero, its code in exit_code; its stderr is in PLAN's .log).
# Exits 0 once the row is written, whatever the cell's outcome; non-zero
# when the row cannot be written, and (no row) when the search was killed by
# a signal, so that the next run retries the cell.
# Usage: scripts/batch-cell.sh BIN GRAPH MEM POLICY ROW PLAN [SEARCH ARGS...]
set -u
[ $# -ge 6 ] || { echo "usage: $0 BIN GRAPH MEM POLICY ROW PLAN [ARGS...]" >&2; exit 2; }
bin=$1 graph=$2 mem=$3 policy=$4 row=$5 plan=$6
shift 6
log=${plan%.json}.log
rm -f "$plan"
"$bin/swapadvisor-search" "$graph" --memory "$mem" --policy "$policy" "$@" -q -o "$plan" 2>"$log"
rc=$?
# killed by a signal (an OOM kill, a ^C): no row, so that the next run plans
# the cell again, as an interrupted cell is
if [ $rc -gt 128 ]; then
    echo "batch: $graph at $mem with $policy: killed by signal $((rc - 128)); no row written (the next run retries)" >&2
    rm -f "$plan"
    exit 1
fi
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
# a field with a comma or a quote is quoted (RFC 4180); readers take
# validity and exit_code as the last two fields
csv() { case $1 in *[,\"]*) printf '"%s"' "${1//\"/\"\"}" ;; *) printf '%s' "$1" ;; esac; }
tmp=$row.tmp.$$
printf '%s,%s,%s,%s,%s,%s,%d\n' "$(csv "$graph")" "$(csv "$mem")" "$(csv "$policy")" "$iter" "$pct" "$valid" "$rc" >"$tmp" &&
    mv -f "$tmp" "$row"
