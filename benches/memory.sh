#!/usr/bin/env bash
# Peak memory by tree size (issue 30: "RSS ≤ 200 MB regardless of tree size"): rewind next to
# git on the same trees, in one run.
#
#   BIG=1 HUGE=1 benches/fetch-data.sh && benches/memory.sh [REWIND_BIN]
#
# Trees (each one git repository with every file committed): linux-x6 (470k files) and
# linux-x13 (1.02M: thirteen hard-linked copies of linux/, HUGE=1), and linux/ itself (78k) when
# it is a repository. Per tree:
#   budgeted   a first baseline as an agent's shell commands make it: the PreToolUse Bash hook
#              with the default 3 s budget, a fresh home, called until the baseline is
#              complete; the highest peak RSS of any call, the first call's, the calls and
#              their wall time added up
#   scan       then a scan with no change (the same hook, own process), the third after the
#              baseline: peak RSS and wall, median of RUNS runs
#   one call   a first baseline in one call with no budget (REWIND_SCAN_BUDGET_MS one day),
#              a fresh home: peak RSS and wall, one run
#   git        `git status --porcelain` of the tree's own repository: peak RSS and wall,
#              median of RUNS runs
#   git add    GIT_ADD=1 only: `git add -A` into a fresh shadow git dir (what the baseline
#              stands for), peak RSS and wall, one run
#
# Knobs: TREES (default "linux linux-x6 linux-x13", the ones present), RUNS (default 3),
# GIT_ADD=1. Writes under $REWIND_BENCH_OUT (default $DATA/memory-run, wiped first) and
# prints a markdown table. Every budgeted call is in calls.tsv there.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/benches/ab/common.sh"
OUT=${REWIND_BENCH_OUT:-$DATA/memory-run}
RUNS=${RUNS:-3}
TREES=${TREES:-linux linux-x6 linux-x13}
log() { printf '\n== %s\n' "$*" >&2; }

BIN=${1:-}
if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build --locked --release --quiet)
    BIN=$ROOT/target/x86_64-unknown-linux-gnu/release/rewind
fi
rm -rf "$OUT"
mkdir -p "$OUT/bin"
# From a copy, as the other benchmarks (see compare.sh on why).
cp "$BIN" "$OUT/bin/rewind"
REWIND=$OUT/bin/rewind
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "rewind: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src Cargo.toml || echo ' + uncommitted changes')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc), $(free -g | awk '/Mem:/ { print $2 }') GiB"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"
printf 'tree\tcall\tseconds\tmax_rss_kib\tstates\n' >"$OUT/calls.tsv"
: >"$OUT/rows.tsv"

measure() { # LABEL COMMAND...: wall seconds and peak RSS (KiB) of one run, appended to rows.tsv
    local label=$1
    shift
    /usr/bin/time -f '%e %M' -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/last.err"
    printf '%s\t%s\n' "$label" "$(tr ' ' '\t' <"$OUT/time.txt")" >>"$OUT/rows.tsv"
}

states() { # HOME: file states, and whether the baseline is complete
    python3 - "$1/index.sqlite3" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("select count(*) from file_states").fetchone()[0]
row = c.execute("select complete from baselines").fetchone()
print(n, 1 if row and row[0] else 0)
EOF
}

for name in $TREES; do
    TREE=$DATA/$name
    if ! git -C "$TREE" rev-parse --verify -q HEAD >/dev/null 2>&1; then
        log "$name: not a git repository with a commit, skipped"
        continue
    fi
    files=$(git -C "$TREE" ls-files | wc -l)
    echo "tree $name: $files files in git" >>"$OUT/machine.txt"
    log "$name ($files files): warming the page cache"
    find "$TREE" -path "$TREE/.git" -prune -o -type f -print0 | xargs -0 cat >/dev/null
    git -C "$TREE" status --porcelain >/dev/null
    PAYLOAD=$OUT/$name-bash.json
    write_payload bash "$PAYLOAD" "$TREE"
    HOME_B=$OUT/home-$name

    log "$name: first baseline under the default budget, hook calls until it is complete"
    calls=0
    while :; do
        calls=$((calls + 1))
        measure "$name budgeted call" env -u REWIND_SCAN_BUDGET_MS REWIND_HOME="$HOME_B" \
            "$REWIND" hook claude-code <"$PAYLOAD"
        read -r n complete < <(states "$HOME_B")
        printf '%s\t%s\t%s\t%s\n' "$name" "$calls" "$(tail -n 1 "$OUT/rows.tsv" | cut -f2,3)" "$n" >>"$OUT/calls.tsv"
        [ "$complete" = 1 ] && break
        if [ "$calls" -ge 300 ]; then
            echo "$name: the baseline is not complete after 300 calls" >&2
            exit 1
        fi
    done

    log "$name: scans with no change, git status"
    # Two scans first: the listings a baseline leaves verify nothing yet (its states are new).
    for _ in 1 2; do
        REWIND_HOME=$HOME_B "$REWIND" hook claude-code <"$PAYLOAD" >/dev/null
    done
    for _ in $(seq 1 "$RUNS"); do
        measure "$name scan" env REWIND_HOME="$HOME_B" "$REWIND" hook claude-code <"$PAYLOAD"
        measure "$name git status" git -C "$TREE" status --porcelain
    done
    log "$name: first baseline in one call, no budget, a fresh home"
    rm -rf "$HOME_B"
    measure "$name one call" env REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME="$HOME_B" \
        "$REWIND" hook claude-code <"$PAYLOAD"
    if [ "${GIT_ADD:-0}" = 1 ]; then
        log "$name: git add -A into a shadow git dir"
        rm -rf "$OUT/shadow.git"
        git init -q --bare "$OUT/shadow.git"
        measure "$name git add" git --git-dir="$OUT/shadow.git" --work-tree="$TREE" -c gc.auto=0 add -A
        rm -rf "$OUT/shadow.git"
    fi
    rm -rf "$HOME_B"
done

python3 - "$OUT" <<'EOF' | tee "$OUT/table.md"
import collections, statistics, sys
out = sys.argv[1]
rows = collections.defaultdict(list)
for line in open(f"{out}/rows.tsv"):
    label, secs, rss = line.rstrip("\n").split("\t")
    rows[label].append((float(secs), int(rss) / 1024))
trees = []
for label in rows:
    tree = label.split(" ")[0]
    if tree not in trees:
        trees.append(tree)
files = {}
for line in open(f"{out}/machine.txt"):
    if line.startswith("tree "):
        files[line.split()[1].rstrip(":")] = int(line.split()[2])
print("| tree | files | budgeted baseline: calls, wall added up | first call | highest call | scan, no change | `git status --porcelain` | baseline in one call (no budget) | `git add -A` (shadow) |")
print("|---|---|---|---|---|---|---|---|---|")
def med(label):
    got = rows.get(label)
    if not got:
        return "—"
    secs = statistics.median(s for s, _ in got)
    rss = statistics.median(r for _, r in got)
    return f"{secs:.2f} s, {rss:.0f} MiB"
for tree in trees:
    calls = rows[f"{tree} budgeted call"]
    wall = sum(s for s, _ in calls)
    first = calls[0][1]
    high = max(r for _, r in calls)
    print(f"| {tree} | {files.get(tree, '?'):,} | {len(calls)}, {wall:.1f} s | {first:.0f} MiB | **{high:.0f} MiB** "
          f"| {med(f'{tree} scan')} | {med(f'{tree} git status')} | {med(f'{tree} one call')} "
          f"| {med(f'{tree} git add')} |")
EOF
