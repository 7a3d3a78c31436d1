#!/usr/bin/env bash
# test/cli/run.sh BIN - the CLI behaviours of issue 22 as data: each line of
# cases.tsv is "EXIT<TAB>TEXT<TAB>COMMAND"; COMMAND runs under bash in a fresh
# temporary directory $T with $BIN (the tools), $D (test/cli/data) and $P
# (profiles/) set, must exit with EXIT and, when TEXT is not empty, print TEXT
# on stderr.  EXIT written "N,nosan" marks a case that the sanitizer build
# (SAN set, make asan-test) skips: its comment in cases.tsv says what covers it
# there; `make test` runs it.  A SIGINT test checks that interrupted writes
# leave no temporary files.  Prints one line per failure and a summary; exits
# 1 on any failure.
# SA_CLI_TIMES=FILE appends each case's wall seconds, number and command to FILE.
set -u
BIN=$(cd "${1:-bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
D=$HERE/data
P=$(cd "$HERE/../../profiles" && pwd)
export BIN D P
pass=0 fail=0 n=0 skipped=0
guard=${SA_CLI_GUARD:-$([ -n "${SAN:-}" ] && echo 1800 || echo 600)}
# log_time START N WHAT: with SA_CLI_TIMES, append the seconds since START
log_time() {
    [ -z "${SA_CLI_TIMES:-}" ] ||
        printf '%s\t%d\t%s\n' "$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $1 }")" "$2" "$3" >> "$SA_CLI_TIMES"
}
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    want=${line%%$'\t'*}
    rest=${line#*$'\t'}
    text=${rest%%$'\t'*}
    cmd=${rest#*$'\t'}
    n=$((n + 1))
    case $want in
        *,nosan)
            want=${want%,nosan}
            [ -z "${SAN:-}" ] || { skipped=$((skipped + 1)); continue; } ;;
    esac
    T=$(mktemp -d /tmp/sa_cli_XXXXXX)
    export T
    # a hang guard, not a timing test: generous enough for a loaded 2-core
    # machine under ASan (a case that needs more is too big for this suite)
    t_case=$EPOCHREALTIME
    timeout "$guard" bash -c "$cmd" > "$T.out" 2> "$T.err"
    got=$?
    log_time "$t_case" "$n" "$cmd"
    if [ "$got" != "$want" ] || { [ -n "$text" ] && ! grep -qF -- "$text" "$T.err"; }; then
        fail=$((fail + 1))
        echo "cli case $n FAILED: exit $got (want $want${text:+, stderr with '$text'}): $cmd"
        sed 's/^/    stderr: /' "$T.err" | head -5
    else
        pass=$((pass + 1))
    fi
    rm -rf "$T" "$T.out" "$T.err"
done < "$HERE/cases.tsv"

# Signals that end a process, in the middle of writing: no OUT.tmp.XXXXXX may
# stay behind.  The signal lands at random moments of a run that writes a
# 15 MB document.
T=$(mktemp -d /tmp/sa_cli_XXXXXX)
t_case=$EPOCHREALTIME
left=0
sigs=(INT TERM HUP QUIT USR1 USR2 ALRM)
for i in $(seq 1 28); do
    "$BIN/dfg-zoo" nasnet-6 -o "$T/out.json" 2>/dev/null &
    pid=$!
    sleep "0.0$((RANDOM % 10))"
    kill -"${sigs[$((i % ${#sigs[@]}))]}" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if ls "$T"/out.json.tmp.* > /dev/null 2>&1; then left=$((left + 1)); rm -f "$T"/out.json.tmp.*; fi
done
rm -rf "$T"
n=$((n + 1))
log_time "$t_case" "$n" "28 interrupted writes"
if [ "$left" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "cli: $left of 28 interrupted writes left a temporary file"; fi

echo "cli: $n cases, $pass passed, $fail failed${SAN:+, $skipped skipped under the sanitizers (make test runs them)}"
[ "$fail" = 0 ]
