#!/usr/bin/env bash
# Checks the build without CUDA (what a machine without nvcc gets): one
# mechanism, lib/cuda/gpu_none.c chosen by the Makefile in place of
# lib/cuda/*.cu (no #if on CUDA anywhere in lib/, cmd/ or include/), and one
# message, gpu_none.c's NO_CUDA, with which `dfg-profile --measure` and
# `swapplan-run --backend cuda` exit 7 and write nothing.
# Usage: scripts/nocuda.sh BIN_DIR      (tools built with `make NVCC=`; exit 0: ok)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/nocuda.sh BIN_DIR}
fail() { echo "nocuda: $*" >&2; exit 1; }

if grep -rnE '^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)\b.*(CUDA|NVCC|CUDACC)' lib cmd include; then
    fail "the lines above choose code by CUDA with the preprocessor; the Makefile's choice of gpu_none.c is the one mechanism"
fi
msg=$(sed -n 's/^#define NO_CUDA "\(.*\)"$/\1/p' lib/cuda/gpu_none.c)
[ -n "$msg" ] || fail "no NO_CUDA message in lib/cuda/gpu_none.c"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/dfg-profile" graphs/vgg-11-b16.json --device profiles/h100-sxm5-80gb.json -o "$tmp/g.json"
"$bin/swapadvisor-search" "$tmp/g.json" --policy ideal -q -o "$tmp/p.json"

# expect TOOL ARGS...: exit 7, one line on stderr that starts with the message (a
# hint may follow it on that line), no output file
expect() {
    local tool=$1 rc=0
    shift
    "$bin/$tool" "$@" 2> "$tmp/err" > "$tmp/out" || rc=$?
    [ "$rc" = 7 ] || fail "$tool $*: exit $rc, not 7: $(cat "$tmp/err")"
    case "$(head -n 1 "$tmp/err")" in
    "$tool: $msg"*) ;;
    *) fail "$tool $*: '$(head -n 1 "$tmp/err")', not '$tool: $msg'" ;;
    esac
    [ "$(wc -l < "$tmp/err")" = 1 ] || fail "$tool $*: more than one line on stderr: $(cat "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "$tool $*: wrote to stdout"
}
expect dfg-profile "$tmp/g.json" --measure --measured-profile "$tmp/m.json" -o "$tmp/measured.json"
[ ! -e "$tmp/m.json" ] && [ ! -e "$tmp/measured.json" ] || fail "dfg-profile --measure wrote a file"
expect swapplan-run "$tmp/p.json" --graph "$tmp/g.json" --backend cuda
echo "nocuda: dfg-profile --measure and swapplan-run --backend cuda exit 7 with \"$msg\""
