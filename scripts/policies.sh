#!/usr/bin/env bash
# Runs every policy on every zoo model at 100 %, 50 %, 25 % and 12.5 % of its
# no-swap peak and at the profile's own memory (16 GiB), validates each plan
# (swapplan-emit --format check --strict) and writes one table:
# % of ideal throughput and the arena reached (GB), or why there is no plan.
# Usage: scripts/policies.sh [OUT]   (default bench/results/policies.txt)
# Env: PROFILE (default profiles/v100-pcie3-16gb.json), TIMEOUT per run (120 s),
#      MODELS, POLICIES (space-separated overrides).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/policies.txt}
profile=${PROFILE:-profiles/v100-pcie3-16gb.json}
tmo=${TIMEOUT:-120}
dir=build/zoo
mkdir -p "$dir" "$(dirname "$out")"
models=${MODELS:-resnet-50 vgg-16 wresnet-152-10 inception-4 nasnet-25 rnn-8-8k brnn-4-8k gpt-12-768}
policies=${POLICIES:-$(./bin/swapadvisor-search --list-policies | cut -f1 | tr "\n" " ")}
mems="1x 0.5x 0.25x 0.125x 16GiB"
t_start=$(date +%s)
tmp=$(mktemp)
{
    printf '# scripts/policies.sh: %% of ideal throughput / arena reached (GB); profile %s; timeout %ss per run\n' "$profile" "$tmo"
    printf '# swapadvisor and optimal-search (its order) = the genetic search with --generations 5 --threads 2; 16GiB = the profile'"'"'s own memory\n'
    printf '%-15s %-15s' model policy
    for mm in $mems; do printf ' %-28s' "$mm"; done
    printf '\n'
} >"$tmp"
for m in $models; do
    g=$dir/$m.json
    [ -s "$g" ] || ./bin/dfg-zoo "$m" -o - | ./bin/dfg-profile - --device "$profile" -o "$g"
    for pol in $policies; do
        line=$(printf '%-15s %-15s' "$m" "$pol")
        for mm in $mems; do
            p=$dir/$m.$pol.$mm.plan.json
            args=(--policy "$pol")
            # the rows that run the genetic search (optimal-search: for its order)
            # get the same options, so that their cells compare like for like
            case $pol in swapadvisor | optimal-search) args+=(--generations 5 --threads 2) ;; esac
            [ "$mm" != 16GiB ] && args+=(--memory "$mm")
            t0=$(date +%s.%N)
            timeout "$tmo" ./bin/swapadvisor-search "$g" "${args[@]}" -q -o "$p" 2>"$p.err"
            rc=$?
            secs=$(echo "$(date +%s.%N) - $t0" | bc)
            if [ $rc -eq 124 ]; then
                cell="timeout(${tmo}s)"
            elif [ $rc -ne 0 ]; then
                # the reason, short: the policy's clause after "NAME: " up to the first comma or paren
                r=$(sed -e 's/^swapadvisor-search: //' -e "s/^$pol: //" "$p.err" | head -1)
                case "$r" in
                    *"parameters and optimizer state alone"*) r="params>mem" ;;
                    *"alone needs"*) r="op>mem" ;;
                    *"does not swap"*) r="no-swap arena>mem" ;;
                    *) r=$(echo "$r" | sed -E 's/^(even )?//; s/[,(:].*//' | cut -c1-20 | sed 's/ *$//' | tr ' ' '-') ;;
                esac
                cell="refused:$r"
            else
                chk=$(./bin/swapplan-emit "$p" --graph "$g" --format check --strict -q >/dev/null 2>&1 && echo "" || echo "!INVALID")
                cell=$(python3 - "$p" "$chk" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
q = d["predicted"]
print("%.1f%%/%.2fGB%s" % (100 * q["ideal_us"] / q["iteration_us"], d["arena_bytes"] / 1e9, sys.argv[2]))
PY
)
            fi
            echo "$m $pol $mm ${secs}s $cell" >&2
            line+=$(printf ' %-28s' "$cell")
        done
        echo "$line" >>"$tmp"
    done
done
t_end=$(date +%s)
echo "# total run time: $((t_end - t_start)) s on $(nproc) cores" >>"$tmp"
# issue 15's demand on every cell: the search (swapadvisor) no slower than any
# other policy that planned it (scripts/policies_table.py check)
python3 scripts/policies_table.py check "$tmp" >>"$tmp"
mv "$tmp" "$out"
cat "$out"
