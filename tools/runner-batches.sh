#!/usr/bin/env bash
# On an offline GPU runner, from the repository root with wheelhouse/ beside it (`make wheelhouse`): install the kit's
# wheels once per machine, then run batches of every notebook one after the other with one compile cache (the first
# on a fresh machine is cold, the rest warm), each run folder packed as DEST/<run-id>.tgz to bring back.
#   tools/runner-batches.sh DEST [BATCHES] [run arguments...]
# BATCHES is a count (every batch with the same arguments) or GPU sets separated by '/', one batch each:
# "0,1/0/0,1" runs a batch on GPUs 0 and 1, then one on GPU 0, then one on both. With DEADLINE=S (seconds from the
# script's start) no batch starts after S - 60 and each gets `--stop-after` what is left of S, so the batches fit
# a call of limited length and a cut batch can be resumed (`yolo26kit run --resume`).
#   DEADLINE=570 tools/runner-batches.sh /tmp/out "0,1/0"
set -uo pipefail
dest=${1:?usage: tools/runner-batches.sh DEST [BATCHES] [run arguments...]}
batches=${2:-1}
shift $(( $# < 2 ? $# : 2 ))
site=/tmp/yolo26kit-site
cache=/tmp/yolo26kit-cache
mkdir -p "$dest" reports
if [ ! -d "$site/yolo26kit_site_ready" ]; then
    python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target "$site" \
        wheelhouse/*.whl || exit 1
    mkdir -p "$site/yolo26kit_site_ready"
fi
# GIT_DIR: a copy may carry a .git that is not the checkout's; the kit's revision then comes from the stamp
# (`yolo26kit stamp`), not from that repository
export PYTHONPATH="$PWD:$site" PATH="$site/bin:$PATH" JUPYTER_PATH="$site/share/jupyter" PYTHONUNBUFFERED=1 \
    GIT_DIR=/nonexistent
if [[ "$batches" =~ ^[0-9]+$ ]]; then
    gpu_sets=()
    for _ in $(seq "$batches"); do gpu_sets+=(""); done
else
    IFS=/ read -r -a gpu_sets <<< "$batches"
fi
for gpus in "${gpu_sets[@]}"; do
    limit=()
    if [ -n "${DEADLINE:-}" ]; then
        left=$(( DEADLINE - SECONDS ))
        if [ "$left" -lt 60 ]; then echo "no time left for a batch on GPUs ${gpus:-all} ($left s)"; break; fi
        limit=(--stop-after "$(( left - 12 ))")
    fi
    before=$(ls reports)
    python3 -m yolo26kit run --all --device cuda --out reports --cache "$cache" ${gpus:+--gpus "$gpus"} \
        "${limit[@]}" "$@"
    echo "batch on GPUs ${gpus:-all}: exit code $?, ${SECONDS} s into the call"
    run=$(comm -13 <(echo "$before") <(ls reports) | grep -v '^index.html$' | head -n 1)
    [ -n "$run" ] && tar czf "$dest/$run.tgz" -C reports "$run" && echo "packed $dest/$run.tgz"
done
