#!/usr/bin/env bash
# rewind against the real alternatives, each next to its anchor in the same run.
#
#   benches/fetch-data.sh && benches/compare.sh
#
# Needs the data from fetch-data.sh (REWIND_BENCH_DATA, default ~/.cache/rewind-bench).
# Writes everything under $REWIND_BENCH_OUT (default $DATA/run, wiped first) and prints the
# markdown table that benches/RESULTS.md holds. Knobs: ROUNDS (hyperfine rounds, default 5),
# RUNS (runs per command per round, default 10), BASELINE_RUNS (default 3),
# SKIP="prewrite check baseline replay undo threshold criterion distinct" (any of them: sections to
# leave out), UNDO_DIRS (directories to run the undo section in, one filesystem each; default
# $OUT: the undo batch's cost depends on the filesystem, e.g. ext4 with or without a journal).
#
# The machine is small and shared: every comparison interleaves its commands round by round,
# and the table reports medians, min–max and ratios of medians, never one run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# DATA, TREE, FILE, NPM_DIR, HF, HF_INPUT, the payloads and homes (shared with benches/ab/rows.sh)
source "$ROOT/benches/ab/common.sh"
OUT=${REWIND_BENCH_OUT:-$DATA/run}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-10}
BASELINE_RUNS=${BASELINE_RUNS:-3}
SKIP=${SKIP:-}
UNDO_DIRS=${UNDO_DIRS:-$OUT}

log() { printf '\n== %s\n' "$*" >&2; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }

log "building (release)"
cd "$ROOT"
built() { # NAME CARGO-ARGS...: the executable cargo reports for target NAME (the output
    # directory depends on .cargo/config.toml's build.target, so it is not spelled out here)
    local name=$1
    shift
    cargo "$@" --quiet --message-format=json-render-diagnostics |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("executable") and m["target"]["name"] == sys.argv[1]: print(m["executable"])' "$name"
}
BUILT=$(built rewind build --release --bin rewind)
HARNESS=$(built harness bench --no-run --bench harness)
STORE_BENCH=$(built store bench --no-run --bench store)
[ -x "$BUILT" ] && [ -x "$HARNESS" ] && [ -x "$STORE_BENCH" ] || {
    echo "compare.sh: cargo reported no executable for rewind, harness or store" >&2
    exit 1
}

rm -rf "$OUT"
mkdir -p "$OUT/hf" "$OUT/bin"
# Measure a copy, as `cargo install` would place it, not the file the linker just wrote: on
# this VM's kernel (6.18) that file's pages stay in the page cache as the linker wrote them,
# and every process started from it took 0.5-0.9 ms more system time in page faults
# (`rewind check`: 3.0 ms from the build's output, 2.1 ms from a copy, same run; 2.5 ms from
# the output once its cached pages were dropped and read back in by exec).
cp "$BUILT" "$OUT/bin/rewind"
REWIND=$OUT/bin/rewind
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "rewind: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src Cargo.toml || echo ' + uncommitted changes')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc)"
    echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "kernel: $(uname -r); filesystem: $(df -T "$DATA" | awk 'NR==2 {print $2}')"
    cat "$DATA/VERSIONS" 2>/dev/null || true
    echo "hyperfine used: $("$HF" --version)$([ $HF_INPUT = 1 ] || echo ' (no --input: hook rows not measured)')"
} >"$OUT/machine.txt"

warm_tree

rw() { "$REWIND" --home "$1" --workspace "$TREE" "${@:2}"; }

# hyperfine in ROUNDS rounds; each round runs every command RUNS times, in order.
rounds() {
    local name=$1
    shift
    for r in $(seq 1 "$ROUNDS"); do
        "$HF" --style none --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/$name-$r.json" "$@" >/dev/null
    done
}

# --- 1. pre-write on one file, process start to exit ------------------------------------
SHADOW=$OUT/shadow-prewrite.git
git init -q --bare "$SHADOW"
sg() { git --git-dir="$SHADOW" --work-tree="$TREE" -c gc.auto=0 "$@"; }
sg add -A
HOME1=$OUT/home-prewrite
# `rewind hook claude-code`, when the hook handles a PreToolUse Write: a payload naming FILE.
HOOK_PAYLOAD=$OUT/pre-tool-use-write.json
write_payload write "$HOOK_PAYLOAD"
HOOK_HOME=$OUT/home-hook
prewrite_homes "$REWIND" "$HOME1" "$HOOK_HOME" "$HOOK_PAYLOAD"
HOOK=0
if [ -f "$HOOK_HOME/index.sqlite3" ] &&
    rw "$HOOK_HOME" log --all-sessions --json 2>/dev/null | grep -q "\"$FILE\""; then
    HOOK=1
    echo "hook: handles PreToolUse Write" >>"$OUT/machine.txt"
else
    echo "hook: not measured: a probe PreToolUse Write recorded no snapshot of the file (see \$HOOK_HOME/logs/hook.log)" >>"$OUT/machine.txt"
fi

# The same hook with a resident helper (`rewind helper start`) for a copy of that home: the
# hook process hands the event over and prints the answer. A home of its own, so that the
# runs without a helper above stay in their own process.
HELPER_HOME=$OUT/home-helper
READ_PAYLOAD=$OUT/post-tool-use-read.json
HELPER=0
if [ $HOOK = 1 ]; then
    write_payload read "$READ_PAYLOAD"
    cp -a "$HOOK_HOME" "$HELPER_HOME"
    if REWIND_HOME=$HELPER_HOME "$REWIND" helper start --idle-timeout 7200 >/dev/null &&
        REWIND_HOME=$HELPER_HOME "$REWIND" hook claude-code <"$HOOK_PAYLOAD" >/dev/null 2>&1 &&
        REWIND_HOME=$HELPER_HOME "$REWIND" --json helper status | grep -q '"served":1'; then
        HELPER=1
        echo "helper: answers the hook" >>"$OUT/machine.txt"
    else
        echo "helper: not measured: it did not answer a probe hook (see \$HELPER_HOME/logs/)" >>"$OUT/machine.txt"
    fi
fi
stop_helper() { # every helper this run started, also when it stops early
    local h
    for h in "$HELPER_HOME" "${SCAN_HELPER_HOME:-}"; do
        if [ -n "$h" ]; then REWIND_HOME=$h "$REWIND" helper stop >/dev/null 2>&1 || true; fi
    done
    true
}
trap stop_helper EXIT
if ! skipped prewrite; then
    log "1. pre-write on one file of the ${TREE##*/} tree"
    for r in $(seq 1 "$ROUNDS"); do
        "$HF" --style none -N --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/prewrite-$r.json" \
            -n "rewind snap" "$REWIND --home $HOME1 --workspace $TREE snap $TREE/$FILE" \
            -n "git hash-object -w" "git --git-dir=$SHADOW hash-object -w $TREE/$FILE" \
            -n "shadow git add" "git --git-dir=$SHADOW --work-tree=$TREE -c gc.auto=0 add $TREE/$FILE" \
            >/dev/null
        # The hook reads its event on stdin (`--input`, no shell). REWIND_HOME names the
        # helper's home for the whole run; the hook without a helper gets its home with --home
        # (options on its command line keep a hook in its own process anyway).
        if [ $HOOK = 1 ] && [ $HF_INPUT = 1 ]; then
            helper_cmd=()
            if [ $HELPER = 1 ]; then
                helper_cmd=(-n "rewind hook claude-code (helper)" "$REWIND hook claude-code")
            fi
            REWIND_HOME=$HELPER_HOME "$HF" --style none -N --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/hook-$r.json" \
                --input "$HOOK_PAYLOAD" \
                -n "rewind hook claude-code" "$REWIND --home $HOOK_HOME hook claude-code" \
                "${helper_cmd[@]}" \
                -n "rewind snap" "$REWIND --home $HOME1 --workspace $TREE snap $TREE/$FILE" \
                -n "git hash-object -w" "git --git-dir=$SHADOW hash-object -w $TREE/$FILE" \
                -n "shadow git add" "git --git-dir=$SHADOW --work-tree=$TREE -c gc.auto=0 add $TREE/$FILE" \
                >/dev/null
        fi
    done
fi

# --- 2. read check of an unchanged file ----------------------------------------------------
if ! skipped check; then
    log "2. read check of an unchanged file"
    rounds check -N \
        -n "rewind check" "$REWIND --home $HOME1 --workspace $TREE check $TREE/$FILE" \
        -n "b3sum" "b3sum $TREE/$FILE"
    # The read check as an agent's read gets it: the PostToolUse Read hook.
    if [ $HOOK = 1 ] && [ $HF_INPUT = 1 ]; then
        for r in $(seq 1 "$ROUNDS"); do
            helper_cmd=()
            if [ $HELPER = 1 ]; then
                helper_cmd=(-n "rewind hook claude-code, Read (helper)" "$REWIND hook claude-code")
            fi
            REWIND_HOME=$HELPER_HOME "$HF" --style none -N --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/read-hook-$r.json" \
                --input "$READ_PAYLOAD" \
                -n "rewind hook claude-code, Read" "$REWIND --home $HOOK_HOME hook claude-code" \
                "${helper_cmd[@]}" \
                -n "b3sum" "b3sum $TREE/$FILE" \
                >/dev/null
        done
    fi
fi

# --- 3./4. scan and baseline (only when the shell-command scan exists) ---------------------
# The scan runs from the PreToolUse Bash hook; it exists when that hook baselines the tree.
SCAN_PAYLOAD=$OUT/pre-tool-use-bash.json
write_payload bash "$SCAN_PAYLOAD"
scan_probe=$OUT/scan-probe
mkdir -p "$scan_probe/ws" && cp "$TREE/$FILE" "$scan_probe/ws/"
write_payload bash "$scan_probe/payload.json" "$scan_probe/ws" -
REWIND_HOME=$scan_probe/home "$REWIND" hook claude-code <"$scan_probe/payload.json" >/dev/null 2>&1 || true
SCAN=0
if [ -f "$scan_probe/home/index.sqlite3" ] && python3 - "$scan_probe/home/index.sqlite3" <<'EOF'; then SCAN=1; fi
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from baselines").fetchone()[0]
sys.exit(0 if n > 0 else 1)
EOF
echo "scan: $([ $SCAN = 1 ] && echo available || echo 'not measured: a probe PreToolUse Bash recorded no baseline')" >>"$OUT/machine.txt"

timed() { # label, command...: wall seconds and peak RSS into results.jsonl
    local label=$1
    shift
    /usr/bin/time -f '%e %M' -o "$OUT/time.txt" "$@" >"$OUT/last.out" 2>"$OUT/last.err"
    read -r secs rss <"$OUT/time.txt"
    printf '{"bench":"timed","label":"%s","seconds":%s,"max_rss_kib":%s}\n' "$label" "$secs" "$rss" >>"$RESULTS"
}

if ! skipped baseline; then
    log "4./5. first baseline of the tree vs git add -A && git write-tree ($BASELINE_RUNS runs each)"
    for i in $(seq 1 "$BASELINE_RUNS"); do
        rm -rf "$OUT/shadow-baseline.git" "$OUT/home-baseline" "$OUT/home-scan"
        sync
        git init -q --bare "$OUT/shadow-baseline.git"
        timed "git add -A && git write-tree" sh -c "git --git-dir=$OUT/shadow-baseline.git --work-tree=$TREE -c gc.auto=0 add -A && git --git-dir=$OUT/shadow-baseline.git write-tree"
        printf '{"bench":"du","label":"shadow git after add -A","kib":%s}\n' "$(du -sk "$OUT/shadow-baseline.git" | cut -f1)" >>"$RESULTS"
        timed "rewind snap of every file (library, 1000 per call)" "$HARNESS" snap-all "$OUT/home-baseline" "$TREE"
        cat "$OUT/last.out" >>"$RESULTS"
        printf '{"bench":"du","label":"rewind home after snap of every file","kib":%s}\n' "$(du -sk "$OUT/home-baseline" | cut -f1)" >>"$RESULTS"
        if [ $SCAN = 1 ]; then
            # The whole baseline in one call: no time budget (by default a hook baselines for
            # 3 s and resumes in later calls).
            timed "rewind first baseline (hook, PreToolUse Bash)" sh -c "REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME=$OUT/home-scan $REWIND hook claude-code <$SCAN_PAYLOAD"
            python3 - "$OUT/home-scan/index.sqlite3" >>"$RESULTS" <<'EOF'
import json, sqlite3, sys
complete, files = sqlite3.connect(sys.argv[1]).execute("select complete, files from baselines").fetchone()
print(json.dumps({"bench": "baseline-row", "complete": bool(complete), "files": files}))
EOF
            printf '{"bench":"du","label":"rewind home after baseline","kib":%s}\n' "$(du -sk "$OUT/home-scan" | cut -f1)" >>"$RESULTS"
        fi
    done
    # Row 5 on a clean committed tree (fetch-data.sh's linux-git: the same files committed in
    # their own repository): committed files are stored as references to git's objects, so
    # the home holds the index alone. Against the same shadow git dir as above.
    if [ $SCAN = 1 ] && [ -f "$DATA/linux-git.complete" ]; then
        COMMITTED_PAYLOAD=$OUT/pre-tool-use-bash-committed.json
        write_payload bash "$COMMITTED_PAYLOAD" "$DATA/linux-git"
        find "$DATA/linux-git" -path "$DATA/linux-git/.git" -prune -o -type f -print0 | xargs -0 cat >/dev/null
        for i in $(seq 1 "$BASELINE_RUNS"); do
            rm -rf "$OUT/home-committed"
            sync
            timed "rewind first baseline, committed tree (hook, PreToolUse Bash)" sh -c "REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME=$OUT/home-committed $REWIND hook claude-code <$COMMITTED_PAYLOAD"
            printf '{"bench":"du","label":"rewind home after baseline, committed tree","kib":%s}\n' "$(du -sk "$OUT/home-committed" | cut -f1)" >>"$RESULTS"
        done
        "$REWIND" --home "$OUT/home-committed" --json verify >"$OUT/committed-verify.json" || true
        rm -rf "$OUT/home-committed"
    elif [ $SCAN = 1 ]; then
        echo "committed tree: not measured (benches/fetch-data.sh builds linux-git)" >>"$OUT/machine.txt"
    fi
    if [ $SCAN = 1 ]; then
        log "3. scan with no changes vs git status --porcelain"
        rounds scan \
            -n "rewind scan (hook, PreToolUse Bash)" "REWIND_HOME=$OUT/home-scan $REWIND hook claude-code <$SCAN_PAYLOAD" \
            -n "git status --porcelain" "git --git-dir=$OUT/shadow-baseline.git --work-tree=$TREE status --porcelain"
        # With a helper for a copy of that home: its first scan walks the tree and places a
        # watch on every directory; the later ones look only where an event says something
        # changed (nothing, here). `-N --input`, the anchors in the same run.
        SCAN_HELPER_HOME=$OUT/home-scan-helper
        rm -rf "$SCAN_HELPER_HOME"
        cp -a "$OUT/home-scan" "$SCAN_HELPER_HOME"
        if [ $HF_INPUT = 1 ] &&
            REWIND_HOME=$SCAN_HELPER_HOME "$REWIND" helper start --idle-timeout 7200 >/dev/null &&
            REWIND_HOME=$SCAN_HELPER_HOME "$REWIND" hook claude-code <"$SCAN_PAYLOAD" >/dev/null 2>&1 &&
            REWIND_HOME=$SCAN_HELPER_HOME "$REWIND" --json helper status | grep -q '"walked":1'; then
            for r in $(seq 1 "$ROUNDS"); do
                REWIND_HOME=$SCAN_HELPER_HOME "$HF" --style none -N --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/scan-helper-$r.json" \
                    --input "$SCAN_PAYLOAD" \
                    -n "rewind scan (hook, PreToolUse Bash, helper)" "$REWIND hook claude-code" \
                    -n "rewind scan (hook, PreToolUse Bash)" "$REWIND --home $OUT/home-scan hook claude-code" \
                    -n "git status --porcelain" "git --git-dir=$OUT/shadow-baseline.git --work-tree=$TREE status --porcelain" \
                    >/dev/null
            done
            # The same after a command touched 100 files (mtime only, same bytes): the helper
            # hashes what its watches name, the own-process scan walks everything and hashes
            # the same 100, git status re-reads them to refresh its index.
            find "$TREE/drivers" -name '*.c' | sort | sed -n '1,100p' >"$OUT/touch100.list"
            printf '#!/bin/sh\nxargs touch <%s\n' "$OUT/touch100.list" >"$OUT/touch100.sh"
            chmod +x "$OUT/touch100.sh"
            for r in $(seq 1 "$ROUNDS"); do
                REWIND_HOME=$SCAN_HELPER_HOME "$HF" --style none -N --warmup 2 --runs "$RUNS" --export-json "$OUT/hf/scan-touched-$r.json" \
                    --input "$SCAN_PAYLOAD" --prepare "$OUT/touch100.sh" \
                    -n "rewind scan (hook, PreToolUse Bash, helper)" "$REWIND hook claude-code" \
                    -n "rewind scan (hook, PreToolUse Bash)" "$REWIND --home $OUT/home-scan hook claude-code" \
                    -n "git status --porcelain" "git --git-dir=$OUT/shadow-baseline.git --work-tree=$TREE status --porcelain" \
                    >/dev/null
            done
            echo "scan helper: $(REWIND_HOME=$SCAN_HELPER_HOME "$REWIND" --json helper status | tr -d '\n')" >>"$OUT/machine.txt"
        else
            echo "scan helper: not measured (no hyperfine with --input, or the helper did not answer a probe scan)" >>"$OUT/machine.txt"
        fi
        REWIND_HOME=$SCAN_HELPER_HOME "$REWIND" helper stop >/dev/null 2>&1 || true
    fi
    rm -rf "$OUT/home-baseline" "$OUT/home-scan" "$OUT/home-scan-helper"
fi

# --- 6. version-history replay ------------------------------------------------------------
if ! skipped replay; then
    log "6. replay of every lodash version as agent writes vs shadow git"
    "$HARNESS" replay "$OUT/home-replay" "$OUT/shadow-replay.git" "$OUT/replay-ws" \
        "$NPM_DIR/v" "$NPM_DIR/versions.txt" >>"$RESULTS"
    if [ -d "$DATA/ripgrep.git" ]; then
        log "6. replay of ripgrep's first-parent history as agent writes vs shadow git"
        rm -rf "$OUT/home-replay-rg" "$OUT/shadow-replay-rg.git" "$OUT/replay-rg-ws"
        "$HARNESS" replay-git "$OUT/home-replay-rg" "$OUT/shadow-replay-rg.git" "$OUT/replay-rg-ws" \
            "$DATA/ripgrep.git" >>"$RESULTS"
    fi
fi

# --- 7. undo of one window of 1,000 changed files -----------------------------------------
if ! skipped undo; then
    n=0
    for dir in $UNDO_DIRS; do
        n=$((n + 1))
        label=$(fs_label "$dir")
        log "7. undo of a window of 1,000 changed files ($dir: $label)"
        echo "undo fs $n: $dir ($label)" >>"$OUT/machine.txt"
        UNDO_WS=$dir/rewind-bench-undo-ws
        UNDO_HOME=$dir/rewind-bench-undo-home
        REWIND_BENCH_DATA=$DATA "$ROOT/benches/undo-window.sh" "$UNDO_WS" "$UNDO_HOME" "$REWIND"
        UNDO="$REWIND --home $UNDO_HOME --workspace $UNDO_WS"
        for r in $(seq 1 "$ROUNDS"); do
            "$HF" --style none --runs "$RUNS" --export-json "$OUT/hf/undo-$r.json" \
                --prepare "sync; $UNDO redo >/dev/null 2>&1 || true" \
                -n "rewind undo (1,000 files, $label)" "$UNDO undo" \
                -n "rewind redo (1,000 files, $label)" --prepare "sync; $UNDO undo >/dev/null 2>&1 || true" "$UNDO redo" \
                >/dev/null
            mv "$OUT/hf/undo-$r.json" "$OUT/hf/undo-fs$n-$r.json"
        done
        rm -rf "$UNDO_WS" "$UNDO_HOME"
    done
fi

# --- inline vs object-file threshold, criterion micro-benchmarks -------------------------
if ! skipped threshold; then
    log "inline-in-SQLite vs object files by compressed size"
    "$HARNESS" threshold "$OUT/threshold" "$TREE" >>"$RESULTS"
    rm -rf "$OUT/threshold"
fi
if ! skipped criterion; then
    log "criterion micro-benchmarks (24 KB file)"
    "$STORE_BENCH" --bench --noplot 2>/dev/null | tee "$OUT/criterion.txt" >&2
fi

SKIP="$SKIP" python3 "$ROOT/benches/summarize.py" "$OUT" | tee "$OUT/table.md"

# --- the ≈415k-file tree of distinct sources (issue 46), when fetch-data.sh built it --------
# (DISTINCT=1 benches/fetch-data.sh). benches/big.sh's rows on it, side by side with git as
# always: first baseline and its peak RSS, the home after it, the three scans, the pre-write
# hook. Takes 30-60 min on 2 cores; SKIP=distinct leaves it out.
if ! skipped distinct && [ -f "$DATA/distinct.complete" ]; then
    log "the tree of distinct sources (benches/big.sh, TREE_NAME=distinct)"
    {
        printf '\n### The tree of distinct sources\n\n'
        grep -A1 '^distinct:' "$DATA/VERSIONS" || true
        echo
    } | tee -a "$OUT/table.md"
    TREE_NAME=distinct REWIND_BENCH_OUT="$OUT/distinct" "$ROOT/benches/big.sh" "$REWIND" |
        tee -a "$OUT/table.md"
elif ! skipped distinct; then
    log "no tree of distinct sources (DISTINCT=1 benches/fetch-data.sh builds it): its rows left out"
fi
