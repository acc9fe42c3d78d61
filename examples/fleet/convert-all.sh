#!/usr/bin/env bash
# Converts every host's traces into one Parquet dataset, JOBS at a time.
# Each conversion is independent (its own host=/trace= partition), so the
# same command runs as one job per host on a cluster's scheduler, writing
# to a shared file system or uploading its partition afterwards.
#
#   examples/fleet/convert-all.sh DATASET TRACE_DIR...
#   JOBS=8 examples/fleet/convert-all.sh /data/fleet /traces/*/kernel
set -euo pipefail
out=$1; shift
printf '%s\0' "$@" | xargs -0 -n 1 -P "${JOBS:-$(nproc)}" "${REEF:-reef}" convert --to parquet -o "$out"
