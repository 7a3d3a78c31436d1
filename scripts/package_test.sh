#!/usr/bin/env bash
# package_test.sh BIN BUILD - what a user meets before reading any code:
#   - every tool: --help and -h print the same help to stdout, within 79
#     columns; a bad option or a missing argument is one line plus the hint
#     on stderr, exit 2;
#   - `make install PREFIX=<temp>` lays out bin/, lib/libswapadvisor.a,
#     include/swapadvisor/ (only the public headers, every name prefixed),
#     lib/pkgconfig/swapadvisor.pc, man pages, profiles and schemas; a program
#     that plans with the seeded search builds with pkg-config alone and runs; the installed dfg-profile finds a bundled profile by name from
#     outside the source tree;
#   - every example and produced document against schemas/ (schema_test.py,
#     skipped when python3-jsonschema is missing).
# Run from the repository root (make test does).
set -euo pipefail
BIN=${1:-bin}
BUILD=${2:-build}
fail=0
bad() { echo "package_test: $*" >&2; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the C tools (cmd/*.c); dfg-from-torch (tools/, Python) keeps its own
# conventions and is only checked for being installed with a man page
tools=()
for c in cmd/*.c; do
    t="$BIN/$(basename "$c" .c)"
    [ -x "$t" ] && tools+=("$t") || bad "$t is missing"
done
for t in "${tools[@]}"; do
    name=$(basename "$t")
    "$t" --help > "$tmp/long" 2>&1 || bad "$name --help exits $?"
    "$t" -h > "$tmp/short" 2>&1 || bad "$name -h exits $?"
    cmp -s "$tmp/long" "$tmp/short" || bad "$name: -h and --help differ"
    [ -s "$tmp/long" ] || bad "$name --help prints nothing"
    wide=$(awk 'length($0) > 79 { printf "%d: %s\n", length($0), $0 }' "$tmp/long")
    [ -z "$wide" ] || bad "$name --help has lines over 79 columns:"$'\n'"$wide"
    for args in "--no-such-option" "-Z" "--output"; do
        set +e
        "$t" $args > "$tmp/out" 2> "$tmp/err"
        rc=$?
        set -e
        [ $rc -eq 2 ] || bad "$name $args: exit $rc, want 2"
        [ "$(wc -l < "$tmp/err")" -eq 2 ] && tail -1 "$tmp/err" | grep -q -- "--help" ||
            bad "$name $args: want one error line and the --help hint, got:"$'\n'"$(cat "$tmp/err")"
        head -1 "$tmp/err" | grep -q "^$name: " || bad "$name $args: the error line does not start with '$name: '"
        [ ! -s "$tmp/out" ] || bad "$name $args: writes to stdout"
    done
done

# ---- install into a temporary prefix ----
prefix="$tmp/prefix"
make --no-print-directory -s install PREFIX="$prefix" BUILD="$BUILD" BIN="$BIN" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; bad "make install failed"; exit 1; }
for f in lib/libswapadvisor.a lib/pkgconfig/swapadvisor.pc include/swapadvisor/emit.h include/swapadvisor/sa_common.h \
         share/swapadvisor/profiles/v100-pcie3-16gb.json share/swapadvisor/schemas/swapplan.schema.json \
         share/doc/swapadvisor/LICENSE share/doc/swapadvisor/formats.md; do
    [ -f "$prefix/$f" ] || bad "make install did not install $f"
done
installed=("${tools[@]}")
for py in dfg-from-torch swapplan-torch; do [ -x "$BIN/$py" ] && installed+=("$BIN/$py"); done
for t in "${installed[@]}"; do
    name=$(basename "$t")
    [ -x "$prefix/bin/$name" ] || bad "make install did not install bin/$name"
    page="$prefix/share/man/man1/$name.1"
    [ -f "$page" ] || { bad "no man page $name.1"; continue; }
    grep -q '^\.SH SYNOPSIS' "$page" || bad "$name.1 has no SYNOPSIS"
    if command -v man > /dev/null; then
        MANWIDTH=80 man -l "$page" > "$tmp/man.txt" 2> "$tmp/man.err" || bad "man cannot render $name.1"
        ! grep -q 'warning' "$tmp/man.err" || bad "$name.1: $(head -1 "$tmp/man.err")"
        grep -q -- "--help" "$tmp/man.txt" || bad "$name.1 lacks the options"
    fi
done

# a program built with pkg-config alone, from outside the source tree
cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/emit.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/validate.h"
/* argv: a graph, a device profile.  Plans at half the graph's peak with the
 * seeded search, whose seeds call every policy of the table and the MILP
 * solvers, so that the link needs all the libraries pkg-config names. */
int main(int argc, char **argv)
{
    sa_dfg_graph *g = NULL;
    sa_devprof *dp = NULL;
    sa_plan *p = NULL;
    sa_err err;
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.search.generations = 2;
    if (argc < 3) {
        fprintf(stderr, "usage: hello GRAPH PROFILE\n");
        return 1;
    }
    if (sa_dfg_load_file(argv[1], &g, &err) || sa_devprof_load_file(argv[2], &dp, &err) ||
        sa_cost_profile_graph(g, dp, sa_dfg_peak_bytes(g, NULL) / 2, &err) ||
        sa_policy_run_opts("swapadvisor", g, &g->device, &po, &p, &err) ||
        sa_plan_validate(p, g, true, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char b[64];
    printf("%s: %d ops, %d nodes, peak %s, %.0f us\n", g->name, g->n_ops, p->n_nodes,
           sa_emit_fmt_bytes(b, sizeof b, sa_dfg_peak_bytes(g, NULL), false), p->predicted.iteration_us);
    sa_plan_free(p);
    sa_devprof_free(dp);
    sa_dfg_free(g);
    return 0;
}
C
# only the headers a program needs are installed, every name they declare is
# prefixed (sa_, SA_, SWAPADVISOR_), and they compile as C++ too
want="cost.h devprof.h dfg.h emit.h ga.h milp.h plan.h policy.h runner.h sa_common.h sim.h validate.h"
got=$(cd "$prefix/include/swapadvisor" && echo *.h)
[ "$got" = "$want" ] || bad "installed headers: $got; want $want"
python3 scripts/api_names.py "$prefix/include/swapadvisor" >&2 || bad "an installed header declares a name without the prefix"
if command -v c++ > /dev/null; then
    for h in $want; do echo "#include \"swapadvisor/$h\""; done > "$tmp/all.cc"
    c++ -fsyntax-only -Wall -Werror -I"$prefix/include" "$tmp/all.cc" 2> "$tmp/cxx.err" ||
        bad "the installed headers do not compile as C++: $(head -3 "$tmp/cxx.err")"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
if ! flags=$(pkg-config --cflags --libs swapadvisor 2> "$tmp/pc.err"); then
    bad "pkg-config swapadvisor: $(cat "$tmp/pc.err")"
else
    [ "$(pkg-config --modversion swapadvisor)" = "$(sed -n 's/^#define SA_VERSION "\(.*\)"/\1/p' include/swapadvisor/sa_common.h)" ] ||
        bad "swapadvisor.pc Version differs from SA_VERSION"
    (cd "$tmp" && ${CC:-cc} -std=c11 -Wall -Werror hello.c -o hello $flags) 2> "$tmp/cc.err" ||
        bad "a program does not build with pkg-config alone: $(head -5 "$tmp/cc.err")"
    if [ -x "$tmp/hello" ]; then
        out=$("$tmp/hello" "$PWD/graphs/rnn-2-1k.json" "$prefix/share/swapadvisor/profiles/v100-pcie3-16gb.json") ||
            bad "the pkg-config program fails"
        [[ "$out" == rnn-2-1k:*nodes* ]] || bad "the pkg-config program printed '$out'"
    fi
fi

# the installed dfg-from-torch finds its package (--help needs no torch)
if [ -x "$BIN/dfg-from-torch" ]; then
    (cd "$tmp" && "$prefix/bin/dfg-from-torch" --help > /dev/null) 2> "$tmp/py.err" ||
        bad "installed dfg-from-torch --help: $(head -3 "$tmp/py.err")"
fi

# the installed Python package: swapadvisor.torch imports without torch and finds the
# installed tools and bundled profiles
(cd "$tmp" && PYTHONPATH="$prefix/lib/swapadvisor" env -u SWAPADVISOR_PROFILES PATH=/usr/bin:/bin python3 -c '
import sys, swapadvisor.torch as t
print(t._find_tool("swapadvisor-search")); print(t._profile_path(None, "cpu"))') > "$tmp/api.out" 2> "$tmp/api.err" ||
    bad "installed swapadvisor.torch: $(tail -1 "$tmp/api.err")"
grep -q "^$prefix/bin/swapadvisor-search\$" "$tmp/api.out" && grep -q "share/swapadvisor/profiles/v100-pcie3-16gb.json\$" "$tmp/api.out" ||
    bad "installed swapadvisor.torch finds $(tr '\n' ' ' < "$tmp/api.out")"

# a bundled profile by name, from the installed share dir
cp graphs/rnn-2-1k.json "$tmp/g.json"
(cd "$tmp" && env -u SWAPADVISOR_PROFILES "$prefix/bin/dfg-profile" g.json --device v100-pcie3-16gb -o gp.json) 2> "$tmp/prof.err" ||
    bad "installed dfg-profile --device v100-pcie3-16gb: $(cat "$tmp/prof.err")"
grep -q '"V100-PCIe3-16GB"' "$tmp/gp.json" 2> /dev/null || bad "the profiled graph lacks the V100 device block"
"$prefix/bin/dfg-profile" --list-devices | grep -q "^v100-pcie3-16gb	$prefix/bin/../share/swapadvisor/profiles/" ||
    bad "installed dfg-profile --list-devices does not list the installed profiles"
make --no-print-directory -s uninstall PREFIX="$prefix" BUILD="$BUILD" BIN="$BIN" > /dev/null 2>&1 || bad "make uninstall failed"
left=$(find "$prefix" -type f | head -3)
[ -z "$left" ] || bad "make uninstall left files behind: $left"

# ---- schemas ----
set +e
/usr/bin/python3 scripts/schema_test.py "$BIN" "$tmp" 2>&1 | tail -20
rc=${PIPESTATUS[0]}
set -e
[ $rc -eq 0 ] || [ $rc -eq 77 ] || bad "schema_test.py failed"

if [ $fail -ne 0 ]; then
    echo "package_test: FAILED" >&2
    exit 1
fi
echo "package_test: help, options, install, pkg-config, man pages and schemas OK"
