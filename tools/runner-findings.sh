#!/usr/bin/env bash
# On a GPU runner (after tools/runner-batches.sh has installed the kit's wheels): re-run every committed finding's
# repro on the runner's own stack and keep each run under its folder's checked/ (`yolo26kit repro --check --record`),
# record how an AOT Inductor wrapper .so is linked there (tools/libstdcxx_probe.py), and pack both as
# DEST/findings-checked.tgz to bring back and unpack over reports/findings/.
#   tools/runner-findings.sh DEST
set -uo pipefail
dest=${1:?usage: tools/runner-findings.sh DEST}
site=/tmp/yolo26kit-site
export PYTHONPATH="$PWD:$site" PATH="$site/bin:$PATH" PYTHONUNBUFFERED=1 GIT_DIR=/nonexistent
mkdir -p "$dest"
for folder in reports/findings/*/; do
    echo "$(basename "$folder"): $(python3 -m yolo26kit repro --check "$folder" --record 2>&1 | tail -n 1)"
done
python3 tools/libstdcxx_probe.py reports/findings/aoti_load.static_libstdcxx_crash/libstdcxx-probe-cuda.json
tar czf "$dest/findings-checked.tgz" reports/findings/*/checked \
    reports/findings/aoti_load.static_libstdcxx_crash/libstdcxx-probe-cuda.json
echo "packed $dest/findings-checked.tgz"
