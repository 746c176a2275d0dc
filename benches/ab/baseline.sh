#!/usr/bin/env bash
# A/B of the first baseline of the 78k-file tree (benches/fetch-data.sh's linux tree):
#
#   benches/ab/baseline.sh OLD_BIN NEW_BIN [PAIRS] [OUT]
#
# PAIRS pairs of runs (default 4), the order of the builds reversed every other pair, each run
# a fresh home baselined whole by the PreToolUse Bash hook (no time budget). Prints per run:
# wall and CPU seconds, peak RSS, the home's size (and its index's), the blobs in groups
# (count, distinct frames) and the pack files' bytes, the load average.
# OUT (default $DATA/ab-baseline) is wiped first.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/benches/ab/common.sh"
A=$1 B=$2 PAIRS=${3:-4} OUT=${4:-$DATA/ab-baseline}
TREE=$DATA/linux
FILE=kernel/cred.c
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$A" "$OUT/rewind-a"
cp "$B" "$OUT/rewind-b"
write_payload bash "$OUT/bash.json" "$TREE"
find "$TREE" -type f -print0 | xargs -0 cat >/dev/null
one() { # a|b
    rm -rf "$OUT/home-$1"
    sync
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/t.txt" sh -c "REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME=$OUT/home-$1 $OUT/rewind-$1 hook claude-code <$OUT/bash.json" >/dev/null 2>&1
    read -r s u sy rss <"$OUT/t.txt"
    kib=$(du -sk "$OUT/home-$1" | cut -f1)
    blobs=$(python3 - "$OUT/home-$1/index.sqlite3" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in c.execute("pragma table_info(blobs)")]
g = (0, 0)
if "pack_inner" in cols:
    g = c.execute("select count(*), count(distinct pack || ':' || pack_offset) from blobs where pack_inner is not null").fetchone()
a = c.execute("select count(*), sum(size) from blobs").fetchone()
print(f"grouped={g[0]}/{g[1]}frames blobs={a[0]} raw={a[1]}")
PY
)
    packs=$(du -sk "$OUT/home-$1/packs" 2>/dev/null | cut -f1)
    index=$(du -sk "$OUT/home-$1/index.sqlite3" | cut -f1)
    echo "$1 wall=$s cpu=$(echo "$u + $sy" | bc) rss_kib=$rss home_kib=$kib packs_kib=$packs index_kib=$index $blobs load=$(cut -d' ' -f1 /proc/loadavg)"
}
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then one a; one b; else one b; one a; fi
done
