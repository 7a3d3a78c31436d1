#!/usr/bin/env bash
# Shows that this tree plans exactly as an earlier revision does: builds REV in
# a temporary worktree, builds every zoo model with REV's zoo, plans it at FRAC (default 0.5x) of its
# no-swap peak with topo, odswap, a 5-generation search and every baseline, in
# both trees, and compares the plans byte for byte (a refusal must match too),
# but for the search block's wall-clock fields (wall_s, time_to_1pct_s).
# Usage: scripts/identical.sh REV [FRAC] [MODEL...]     exit 0: all identical
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/identical.sh REV [FRAC] [MODEL...]}
frac=${2:-0.5}
shift $(( $# >= 2 ? 2 : 1 ))
models=${*:-resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768}
policies="topo odswap swapadvisor smartpool vdnn tflms checkpoint-sqrt superneurons autoswap capuchin pooch"
profile=profiles/v100-pcie3-16gb.json
work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/old" "$rev" >/dev/null 2>&1
make -s -C "$work/old" -j2 all >/dev/null
make -s -j2 all >/dev/null
differ=0
for m in $models; do
    g=$work/$m.json
    # the graph comes from REV's zoo, so a deliberate change of the zoo since
    # (e.g. batchnorm's statistics update as its own op) does not hide the planners'
    "$work/old/bin/dfg-zoo" "$m" | "$work/old/bin/dfg-profile" - --device "$profile" -o "$g"
    for pol in $policies; do
        extra=()
        [ "$pol" = swapadvisor ] && extra=(--generations 5 --threads 2 --seed 1)
        for side in old new; do
            b=./bin; [ $side = old ] && b=$work/old/bin
            rc=0
            "$b/swapadvisor-search" "$g" --policy "$pol" --memory "${frac}x" -q "${extra[@]}" \
                -o "$work/$m.$pol.$side.json" 2>"$work/$m.$pol.$side.err" || rc=$?
            echo "$rc" >"$work/$m.$pol.$side.rc"
            [ "$rc" != 0 ] || sed -i -E 's/"(wall_s|time_to_1pct_s)":[-0-9.e+]+/"\1":0/g' "$work/$m.$pol.$side.json"
        done
        if cmp -s "$work/$m.$pol.old.rc" "$work/$m.$pol.new.rc" &&
           { [ "$(cat "$work/$m.$pol.new.rc")" != 0 ] || cmp -s "$work/$m.$pol.old.json" "$work/$m.$pol.new.json"; }; then
            printf '%-16s %-14s identical (exit %s)\n' "$m" "$pol" "$(cat "$work/$m.$pol.new.rc")"
        else
            printf '%-16s %-14s DIFFERENT\n' "$m" "$pol"
            differ=1
        fi
    done
done
exit $differ
