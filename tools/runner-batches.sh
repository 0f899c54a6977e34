#!/usr/bin/env bash
# On an offline GPU runner, from the repository root with wheelhouse/ beside it (`make wheelhouse`): install the kit's
# wheels once per machine, then run BATCHES batches of every notebook one after the other with one compile cache
# (the first on a fresh machine is cold, the rest warm), each run folder packed as DEST/<run-id>.tgz to bring back.
# Extra arguments go to `yolo26kit run` (e.g. --gpus 0 or --stop-after 540).
#   tools/runner-batches.sh /tmp/out 2 --stop-after 540
set -uo pipefail
dest=${1:?usage: tools/runner-batches.sh DEST [BATCHES] [run arguments...]}
batches=${2:-1}
shift $(( $# < 2 ? $# : 2 ))
site=/tmp/yolo26kit-site
cache=/tmp/yolo26kit-cache
mkdir -p "$dest" reports
if [ ! -d "$site/yolo26kit_site_ready" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        wheelhouse/*.whl || exit 1
    mkdir -p "$site/yolo26kit_site_ready"
fi
# GIT_DIR: a copy may carry a .git that is not the checkout's; the kit's revision then comes from the stamp
# (`yolo26kit stamp`), not from that repository
export PYTHONPATH="$PWD:$site" PATH="$site/bin:$PATH" JUPYTER_PATH="$site/share/jupyter" PYTHONUNBUFFERED=1 \
    GIT_DIR=/nonexistent
for _ in $(seq "$batches"); do
    before=$(ls reports)
    python3 -m yolo26kit run --all --device cuda --out reports --cache "$cache" "$@"
    echo "batch exit code $?"
    run=$(comm -13 <(echo "$before") <(ls reports) | grep -v '^index.html$' | head -n 1)
    [ -n "$run" ] && tar czf "$dest/$run.tgz" -C reports "$run" && echo "packed $dest/$run.tgz"
done
