#!/usr/bin/env bash
# rewind on the 470k-file tree (issue 30), every row next to git in the same run.
#
#   BIG=1 benches/fetch-data.sh && benches/big.sh [REWIND_BIN]
#   DISTINCT=1 benches/fetch-data.sh && TREE_NAME=distinct benches/big.sh [REWIND_BIN]
#
# The tree: $DATA/linux-x6 (six copies of linux-source-6.1 in one git repository, every file
# committed; BIG=1 benches/fetch-data.sh builds it), or $DATA/distinct (≈415k distinct source
# files, issue 46). REWIND_BIN defaults to the release build
# (built first); it runs from a copy (see compare.sh on why). Writes under $REWIND_BENCH_OUT
# (default $DATA/big-run-<tree>, wiped first) and prints a markdown table: medians over every run,
# min-max, CPU (user + system, mean) and the ratio of the medians.
#
# Rows:
#   baseline   first baseline through the PreToolUse Bash hook, no time budget, fresh home,
#              against `git add -A && git write-tree` into a fresh shadow git dir (wall, CPU,
#              peak RSS; BASELINE_RUNS runs each, interleaved)
#   scan       no-change scan (the same hook, own process) against `git status --porcelain`
#              of that shadow git dir
#   changed    the same after 1,000 files changed (a line appended to every (files/1001)th file, a
#              new line each run: `--prepare`, not timed)
#   undo       the first scan after `rewind undo` of a window of 1,000 files (another 1,000,
#              a line appended through snap/record; made and undone in `--prepare`), against
#              git status of the tree in the same state
#   prewrite   the PreToolUse Write hook of one 24 KB file (own process, the baselined home)
#              against `git hash-object -w`
#   budgeted   a first baseline as an agent's shell commands make it: the PreToolUse Bash hook
#              with the default 3 s budget, called until the baseline is complete (a fresh
#              home); the calls are counted and their times added up (no git row: no target)
#
# Knobs: ROUNDS (default 3), RUNS (runs per command per round, default 5), BASELINE_RUNS
# (default 2), SKIP="baseline scan changed undo prewrite budgeted", REUSE=1 (below). The tree's files are changed by
# the changed and undo rows and left so (the undo row's restored, the changed row's with
# lines appended; git status counts them either way). Needs ~1.5 GB free under OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/benches/ab/common.sh"
# TREE_NAME=distinct runs the same rows on the ~415k-file tree of distinct sources
# (DISTINCT=1 benches/fetch-data.sh), where five files in six are not copies.
TREE_NAME=${TREE_NAME:-linux-x6}
TREE=$DATA/$TREE_NAME
case "$TREE_NAME" in
    distinct) FILE=linux/kernel/cred.c fetch="DISTINCT=1" ;;
    *) FILE=1/kernel/cred.c fetch="BIG=1" ;;
esac
OUT=${REWIND_BENCH_OUT:-$DATA/big-run-$TREE_NAME}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-5}
BASELINE_RUNS=${BASELINE_RUNS:-2}
SKIP=${SKIP:-}
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
log() { printf '\n== %s\n' "$*" >&2; }

[ -f "$DATA/$TREE_NAME.complete" ] || {
    echo "no $TREE_NAME tree: run $fetch benches/fetch-data.sh first" >&2
    exit 1
}
[ "$HF_INPUT" = 1 ] || {
    echo "needs hyperfine with --input (benches/fetch-data.sh installs one)" >&2
    exit 1
}
BIN=${1:-}
if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build --locked --release --quiet)
    BIN=$ROOT/target/x86_64-unknown-linux-gnu/release/rewind
fi
# REUSE=1: keep OUT (its homes, shadow git dir and results) from a run before, e.g. to run
# the rows a SKIP left out against the same baseline.
if [ "${REUSE:-0}" != 1 ]; then
    rm -rf "$OUT"
fi
mkdir -p "$OUT/hf" "$OUT/bin"
cp "$BIN" "$OUT/bin/rewind"
REWIND=$OUT/bin/rewind
RESULTS=$OUT/results.jsonl
[ "${REUSE:-0}" = 1 ] || : >"$RESULTS"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "rewind: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src Cargo.toml || echo ' + uncommitted changes')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "tree: $TREE ($(git -C "$TREE" ls-files | wc -l) files in git)"
} >"$OUT/machine.txt"

log "warming the page cache with the tree"
find "$TREE" -path "$TREE/.git" -prune -o -type f -print0 | xargs -0 cat >/dev/null

SCAN_PAYLOAD=$OUT/pre-tool-use-bash.json
write_payload bash "$SCAN_PAYLOAD" "$TREE"
WRITE_PAYLOAD=$OUT/pre-tool-use-write.json
write_payload write "$WRITE_PAYLOAD" "$TREE"
HOME_SCAN=$OUT/home-scan
SHADOW=$OUT/shadow.git

timed() { # LABEL COMMAND...: wall and CPU seconds and peak RSS into results.jsonl
    local label=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/time.txt" "$@" >"$OUT/last.out" 2>"$OUT/last.err"
    read -r secs user sys rss <"$OUT/time.txt"
    printf '{"bench":"timed","label":"%s","seconds":%s,"cpu":%s,"max_rss_kib":%s}\n' \
        "$label" "$secs" "$(echo "$user + $sys" | bc)" "$rss" >>"$RESULTS"
}

if ! skipped baseline; then
    for i in $(seq 1 "$BASELINE_RUNS"); do
        log "baseline, run $i of $BASELINE_RUNS"
        rm -rf "$SHADOW" "$HOME_SCAN"
        sync
        git init -q --bare "$SHADOW"
        timed "shadow git add -A && git write-tree" sh -c "git --git-dir=$SHADOW --work-tree=$TREE -c gc.auto=0 add -A && git --git-dir=$SHADOW write-tree"
        printf '{"bench":"du","label":"shadow git dir","kib":%s}\n' "$(du -sk "$SHADOW" | cut -f1)" >>"$RESULTS"
        sync
        # (A command line, not the shell function of common.sh: time runs a program.)
        timed "rewind first baseline (hook, PreToolUse Bash)" sh -c "REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME=$HOME_SCAN $REWIND hook claude-code <$SCAN_PAYLOAD"
        python3 - "$HOME_SCAN/index.sqlite3" >>"$RESULTS" <<'EOF'
import json, sqlite3, sys
complete, files = sqlite3.connect(sys.argv[1]).execute("select complete, files from baselines").fetchone()
print(json.dumps({"bench": "baseline-row", "complete": bool(complete), "files": files}))
EOF
        printf '{"bench":"du","label":"rewind home after baseline","kib":%s}\n' "$(du -sk "$HOME_SCAN" | cut -f1)" >>"$RESULTS"
    done
fi
if [ ! -f "$HOME_SCAN/index.sqlite3" ]; then
    git init -q --bare "$SHADOW"
    git --git-dir="$SHADOW" --work-tree="$TREE" -c gc.auto=0 add -A
    first_baseline "$REWIND" "$HOME_SCAN" "$SCAN_PAYLOAD" >/dev/null
fi
# One scan more: the listings a baseline leaves verify nothing yet (its states are new).
REWIND_HOME=$HOME_SCAN "$REWIND" hook claude-code <"$SCAN_PAYLOAD" >/dev/null
GIT_STATUS="git --git-dir=$SHADOW --work-tree=$TREE status --porcelain"
git --git-dir="$SHADOW" --work-tree="$TREE" status --porcelain >/dev/null

rounds() { # NAME HYPERFINE-ARGS...: ROUNDS rounds of RUNS runs of each command
    local name=$1
    shift
    for r in $(seq 1 "$ROUNDS"); do
        "$HF" --style none -N --warmup 1 --runs "$RUNS" --export-json "$OUT/hf/$name-$r.json" \
            --input "$SCAN_PAYLOAD" "$@" >/dev/null
    done
}
SCAN="$REWIND --home $HOME_SCAN hook claude-code"

if ! skipped scan; then
    log "no-change scan vs git status"
    rounds scan -n "rewind scan, no change (hook, own process)" "$SCAN" \
        -n "git status --porcelain, no change" "$GIT_STATUS"
fi

# Every 469th file of the tree, from the first (changed) or the 235th (undo): about 1,000
# each, spread over the six copies.
# (Regular files only: git also tracks symlinks.)
regular() { (cd "$TREE" && while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done); }
STEP=$(($(git -C "$TREE" ls-files | wc -l) / 1001)) # 469 on linux-x6
git -C "$TREE" ls-files | awk -v s="$STEP" 'NR % s == 1' | regular | sed -n '1,1000p' >"$OUT/changed.list"
git -C "$TREE" ls-files | awk -v s="$STEP" 'NR % s == int(s / 2)' | regular | sed -n '1,1000p' >"$OUT/undo.list"

if ! skipped changed; then
    log "scan after 1,000 files changed vs git status"
    cat >"$OUT/change.sh" <<EOF
#!/bin/sh
# A line appended to each of the 1,000 files, another each time.
cd "$TREE" && n=\$(date +%s%N) && while read -r f; do printf '/* %s */\n' "\$n" >>"\$f"; done <"$OUT/changed.list"
EOF
    chmod +x "$OUT/change.sh"
    rounds changed --prepare "$OUT/change.sh" \
        -n "rewind scan, 1,000 changed (hook, own process)" "$SCAN" \
        -n "git status --porcelain, 1,000 changed" "$GIT_STATUS"
fi

if ! skipped undo; then
    log "first scan after an undo of 1,000 files vs git status"
    UNDO_HOME=$HOME_SCAN
    cat >"$OUT/undo.sh" <<EOF
#!/bin/bash
# A window of 1,000 files an agent appended a line to, then undone (the scan after it is
# timed). The window's session is the CLI's, not the scan hook's.
set -e
cd "$TREE"
mapfile -t files <"$OUT/undo.list"
ru() { "$REWIND" --home "$UNDO_HOME" --workspace "$TREE" "\$@"; }
ru window open --label "1000 files" >/dev/null
ru snap "\${files[@]}" >/dev/null
for f in "\${files[@]}"; do printf '/* edited by the agent */\n' >>"\$f"; done
ru record "\${files[@]}" >/dev/null
ru window close >/dev/null
ru undo >/dev/null
EOF
    chmod +x "$OUT/undo.sh"
    rounds undo --prepare "$OUT/undo.sh" \
        -n "rewind scan after an undo of 1,000 files (hook, own process)" "$SCAN" \
        -n "git status --porcelain after the undo" "$GIT_STATUS"
    # The undo row restored every file: the scan after it finds nothing the undo did not say.
    REWIND_HOME=$HOME_SCAN "$REWIND" hook claude-code <"$SCAN_PAYLOAD" >/dev/null
fi

if ! skipped prewrite; then
    log "pre-write hook of one file vs git hash-object -w"
    for r in $(seq 1 "$ROUNDS"); do
        "$HF" --style none -N --warmup 3 --runs $((RUNS * 4)) --export-json "$OUT/hf/prewrite-$r.json" \
            --input "$WRITE_PAYLOAD" \
            -n "rewind hook, PreToolUse Write, one file (own process)" "$REWIND --home $HOME_SCAN hook claude-code" \
            -n "git hash-object -w, one file" "git --git-dir=$SHADOW hash-object -w $TREE/$FILE" \
            >/dev/null
    done
fi

if ! skipped budgeted; then
    log "first baseline under the default time budget: hook calls until it is complete"
    HOME_BUDGET=$OUT/home-budget
    rm -rf "$HOME_BUDGET"
    sync
    calls=0 total=0 cpu=0 peak=0
    while :; do
        calls=$((calls + 1))
        /usr/bin/time -f '%e %U %S %M' -o "$OUT/time.txt" \
            env -u REWIND_SCAN_BUDGET_MS REWIND_HOME="$HOME_BUDGET" "$REWIND" hook claude-code \
            <"$SCAN_PAYLOAD" >/dev/null 2>&1
        read -r secs user sys rss <"$OUT/time.txt"
        total=$(echo "$total + $secs" | bc)
        cpu=$(echo "$cpu + $user + $sys" | bc)
        [ "$rss" -gt "$peak" ] && peak=$rss
        complete=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select complete from baselines").fetchone()[0])' "$HOME_BUDGET/index.sqlite3")
        [ "$complete" = 1 ] && break
        if [ "$calls" -ge 200 ]; then
            echo "budgeted baseline: not complete after 200 calls" >&2
            break
        fi
    done
    printf '{"bench":"timed","label":"rewind first baseline, default 3 s budget: %s hook calls, added up","seconds":%s,"cpu":%s,"max_rss_kib":%s}\n' \
        "$calls" "$total" "$cpu" "$peak" >>"$RESULTS"
    rm -rf "$HOME_BUDGET"
fi

python3 - "$OUT" <<'EOF' | tee "$OUT/table.md"
import glob, json, os, statistics, sys
out = sys.argv[1]
runs, cpu = {}, {}
order = []
for f in sorted(glob.glob(f"{out}/hf/*.json")):
    for r in json.load(open(f))["results"]:
        name = r["command"]
        if name not in runs:
            order.append(name)
        runs.setdefault(name, []).extend(r["times"])
        cpu.setdefault(name, []).append(r["user"] + r["system"])
timed, rss, du = {}, {}, {}
for line in open(f"{out}/results.jsonl"):
    j = json.loads(line)
    if j["bench"] == "timed":
        timed.setdefault(j["label"], []).append(j)
        if j["label"] not in order:
            order.append(j["label"])
    elif j["bench"] == "du":
        du.setdefault(j["label"], []).append(j["kib"])
    elif j["bench"] == "baseline-row":
        print(f"baseline row: complete {j['complete']}, {j['files']} files", file=sys.stderr)
def ms(s):
    return f"{s * 1000:,.1f} ms" if s < 1 else f"{s:,.2f} s"
print("| work | median | min–max | CPU (user+sys) | peak RSS |")
print("|---|---|---|---|---|")
med = {}
for name in order:
    if name in runs:
        t = runs[name]
        med[name] = statistics.median(t)
        print(f"| {name} | {ms(med[name])} | {ms(min(t))}–{ms(max(t))} | {ms(statistics.median(cpu[name]))} | |")
    else:
        t = [j["seconds"] for j in timed[name]]
        med[name] = statistics.median(t)
        c = statistics.median(j["cpu"] for j in timed[name])
        r = max(j["max_rss_kib"] for j in timed[name]) / 1024
        print(f"| {name} | {ms(med[name])} | {ms(min(t))}–{ms(max(t))} | {ms(c)} | {r:,.0f} MiB |")
for label, kib in du.items():
    print(f"| {label} (size) | {statistics.median(kib) / 1024:,.0f} MiB | | | |")
print()
pairs = [
    ("rewind first baseline (hook, PreToolUse Bash)", "shadow git add -A && git write-tree", "≤ 0.2"),
    ("rewind scan, no change (hook, own process)", "git status --porcelain, no change", "≤ 0.6"),
    ("rewind scan, 1,000 changed (hook, own process)", "git status --porcelain, 1,000 changed", "≤ 0.6"),
    ("rewind scan after an undo of 1,000 files (hook, own process)", "git status --porcelain after the undo", "≤ 0.6"),
    ("rewind hook, PreToolUse Write, one file (own process)", "git hash-object -w, one file", "≤ 1.5"),
]
print("| rewind | git | ratio of medians | target |")
print("|---|---|---|---|")
for a, b, target in pairs:
    if a in med and b in med:
        print(f"| {a} | {b} | {med[a] / med[b]:.2f} | {target} |")
EOF
cat "$OUT/machine.txt"
