#!/usr/bin/env bash
# A/B of two rewind builds on rows 1, 2, 3 and 7 of benches/RESULTS.md, in one run.
#
#   benches/ab/rows.sh OLD_BIN NEW_BIN
#
# Needs the data of benches/fetch-data.sh (REWIND_BENCH_DATA, default ~/.cache/rewind-bench).
# Each build runs from its own copy and with its own homes, prepared the same way as
# benches/compare.sh prepares them (benches/ab/common.sh): every hyperfine invocation holds
# the old and the new build's commands, round after round, the order of the builds reversed
# every other round. Prints a markdown table: old and new medians over all runs and their
# ratio (as RESULTS.md gives it), the ratio of the two builds' medians in each round (median,
# min–max), the ratio of their 10th percentiles, and whether new/old ≤ LIMIT: "yes" when both
# the median per-round ratio and the p10 ratio are, "no" when neither is, "unclear (noise)"
# otherwise (benches/ab/rows-table.py says why both).
#
# Many short rounds rather than a few long ones: hyperfine runs all the runs of one command
# before the next command, and the load of this shared 2-core VM comes in bursts of seconds
# (an A/A run with 10 runs per round had undo at 0.2-0.5 s for one build and 1-2 s for the
# other in the same round). With few runs per round a burst hits both builds more evenly,
# and a round's ratio compares runs seconds apart; the median over rounds drops the rounds a
# burst still split.
#
# Rows (as in RESULTS.md):
#   1  `rewind snap` and the PreToolUse Write hook (own process) of one 24 KB file, 78k-file tree
#   2  `rewind check` and the PostToolUse Read hook (own process) of that unchanged file
#   3  no-change scan of the tree through the PreToolUse Bash hook, own process (`-N --input`)
#   7  undo and redo of one window of 1,000 files (CLI); the windows are made anew every
#      round, each build's in turn, as placement on disk differs from one workspace to another
#
# Knobs: ROUNDS (default 10), RUNS (runs per command per round of row 7, default 3),
# SCAN_RUNS (the same for row 3, default 6), FAST_RUNS (the same for rows 1 and 2, a few ms
# each, default 30), LIMIT (default 1.05),
# SKIP="prewrite check scan undo" (rows to leave out), UNDO_ROUNDS (rounds of row 7, default
# ROUNDS; each round makes both windows anew, 2-5 s), UNDO_DIR (filesystem of row 7, default
# OUT; RESULTS.md's row 7 ran on an ext4 with a journal, see fs_label), REWIND_AB_OUT (OUT, default $DATA/ab, wiped first). With the defaults,
# 5.5-9 minutes on the 2-core VM while other engineers' builds and tests kept its load at
# 6-13 (row 7 is most of it: 290-460 s; rows 1-3 about a minute, the setup 30-60 s); the raw
# hyperfine JSON stays under OUT/hf, the table in OUT/table.md, the load per row in
# OUT/machine.txt. Row 7 is the noisy one (A/A rounds 0.34-3.6 under that load): run it on a
# quiet machine, or with more ROUNDS, before reading a 5 % difference into it.
set -euo pipefail

[ $# = 2 ] || {
    echo "usage: $0 OLD_BIN NEW_BIN" >&2
    exit 2
}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/benches/ab/common.sh"
OUT=${REWIND_AB_OUT:-$DATA/ab}
ROUNDS=${ROUNDS:-10}
RUNS=${RUNS:-3}
FAST_RUNS=${FAST_RUNS:-30}
SCAN_RUNS=${SCAN_RUNS:-6}
LIMIT=${LIMIT:-1.05}
SKIP=${SKIP:-}
UNDO_ROUNDS=${UNDO_ROUNDS:-$ROUNDS}
UNDO_DIR=${UNDO_DIR:-$OUT}
BUILDS=(old new)

log() { printf '== %s\n' "$*" >&2; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
[ $HF_INPUT = 1 ] || {
    echo "$HF has no --input (the hooks read their event on stdin): run benches/fetch-data.sh" >&2
    exit 1
}
for b in "$1" "$2"; do
    [ -x "$b" ] || {
        echo "not an executable: $b" >&2
        exit 1
    }
done

rm -rf "$OUT"
mkdir -p "$OUT/hf" "$OUT/old" "$OUT/new"
# Copies, not the files the linker wrote (see compare.sh: a binary just written starts slower).
cp "$1" "$OUT/old/rewind"
cp "$2" "$OUT/new/rewind"
bin() { echo "$OUT/$1/rewind"; }
loadavg() { # and the CPU and I/O pressure (share of the last 60 s some task waited), if any
    local cpu io
    cpu=$(awk '/^some/ { sub("avg60=", "", $3); print $3 }' /proc/pressure/cpu 2>/dev/null || true)
    io=$(awk '/^some/ { sub("avg60=", "", $3); print $3 }' /proc/pressure/io 2>/dev/null || true)
    echo "$(cut -d' ' -f1-3 /proc/loadavg)${cpu:+; pressure 60 s: cpu $cpu %, io $io %}"
}
t_section=$(date +%s)
section_done() { # NAME: its wall time and the load average after it, into machine.txt
    note "$1: $(($(date +%s) - t_section)) s, load average after: $(loadavg)"
    t_section=$(date +%s)
}
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "old: $1 (sha256 $(sha256sum "$1" | cut -c1-12))"
    echo "new: $2 (sha256 $(sha256sum "$2" | cut -c1-12))"
    echo "rounds: $ROUNDS (row 7: $UNDO_ROUNDS); runs per round: $FAST_RUNS (rows 1, 2), $SCAN_RUNS (row 3), $RUNS (row 7)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc)"
    echo "hyperfine: $("$HF" --version)"
} >"$OUT/machine.txt"
note() { echo "$*" >>"$OUT/machine.txt"; }
note "load average at start: $(loadavg)"
start=$(date +%s)

warm_tree
WRITE_PAYLOAD=$OUT/pre-tool-use-write.json
READ_PAYLOAD=$OUT/post-tool-use-read.json
SCAN_PAYLOAD=$OUT/pre-tool-use-bash.json
write_payload write "$WRITE_PAYLOAD"
write_payload read "$READ_PAYLOAD"
write_payload bash "$SCAN_PAYLOAD"

# The builds in this round's order: old first in odd rounds, new first in even ones.
order() { if (($1 % 2)); then echo old new; else echo new old; fi; }

# hyperfine for one round: NAME ROUND RUNS HYPERFINE-ARGS...
hf_round() {
    local name=$1 r=$2 runs=$3
    shift 3
    # hyperfine's warnings (outliers on this shared machine) to a file; shown when it fails
    "$HF" --style none --runs "$runs" --export-json "$OUT/hf/$name-$r.json" "$@" >/dev/null 2>"$OUT/hf/$name-$r.err" || {
        cat "$OUT/hf/$name-$r.err" >&2
        exit 1
    }
}

# --- homes: rows 1 and 2 (snap, hook), row 3 (a complete first baseline) -------------------
for b in "${BUILDS[@]}"; do
    if ! skipped prewrite || ! skipped check; then
        prewrite_homes "$(bin $b)" "$OUT/$b/home-snap" "$OUT/$b/home-hook" "$WRITE_PAYLOAD"
        "$(bin $b)" --home "$OUT/$b/home-hook" --workspace "$TREE" log --all-sessions --json 2>/dev/null | grep -q "\"$FILE\"" || {
            echo "$b: the PreToolUse Write hook recorded no snapshot of $FILE (see $OUT/$b/home-hook/logs/)" >&2
            exit 1
        }
    fi
    if ! skipped scan; then
        log "$b: first baseline of the tree (row 3's home)"
        first_baseline "$(bin $b)" "$OUT/$b/home-scan" "$SCAN_PAYLOAD" >/dev/null 2>&1 || true
        python3 - "$OUT/$b/home-scan/index.sqlite3" <<'EOF' || {
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from baselines where complete").fetchone()[0]
sys.exit(0 if n > 0 else 1)
EOF
            echo "$b: the PreToolUse Bash hook left no complete baseline in $OUT/$b/home-scan" >&2
            exit 1
        }
    fi
done
section_done "setup (page cache, payloads, homes; row 3 a first baseline per build)"

# --- 1. pre-write: `rewind snap` and the PreToolUse Write hook ------------------------------
if ! skipped prewrite; then
    log "1. pre-write, $ROUNDS rounds (load $(loadavg))"
    for r in $(seq 1 "$ROUNDS"); do
        args=()
        for b in $(order "$r"); do
            args+=(-n "$b snap" "$(bin $b) --home $OUT/$b/home-snap --workspace $TREE snap $TREE/$FILE")
        done
        for b in $(order "$r"); do
            args+=(-n "$b hook-write" "$(bin $b) --home $OUT/$b/home-hook hook claude-code")
        done
        hf_round prewrite "$r" "$FAST_RUNS" -N --warmup 3 --input "$WRITE_PAYLOAD" "${args[@]}"
    done
    section_done "row 1"
fi

# --- 2. read check: `rewind check` and the PostToolUse Read hook --------------------------
if ! skipped check; then
    log "2. read check, $ROUNDS rounds (load $(loadavg))"
    for r in $(seq 1 "$ROUNDS"); do
        args=()
        for b in $(order "$r"); do
            args+=(-n "$b check" "$(bin $b) --home $OUT/$b/home-snap --workspace $TREE check $TREE/$FILE")
        done
        for b in $(order "$r"); do
            args+=(-n "$b hook-read" "$(bin $b) --home $OUT/$b/home-hook hook claude-code")
        done
        hf_round check "$r" "$FAST_RUNS" -N --warmup 3 --input "$READ_PAYLOAD" "${args[@]}"
    done
    section_done "row 2"
fi

# --- 3. no-change scan through the PreToolUse Bash hook, own process ------------------------
if ! skipped scan; then
    log "3. no-change scan, $ROUNDS rounds (load $(loadavg))"
    for r in $(seq 1 "$ROUNDS"); do
        args=()
        for b in $(order "$r"); do
            args+=(-n "$b scan" "$(bin $b) --home $OUT/$b/home-scan hook claude-code")
        done
        hf_round scan "$r" "$SCAN_RUNS" -N --warmup 1 --input "$SCAN_PAYLOAD" "${args[@]}"
    done
    section_done "row 3"
    rm -rf "$OUT/old/home-scan" "$OUT/new/home-scan"
fi

# --- 7. undo and redo of one window of 1,000 files ----------------------------------------
if ! skipped undo; then
    label=$(fs_label "$UNDO_DIR")
    note "row 7 filesystem: $UNDO_DIR ($label)"
    log "7. undo/redo of 1,000 files ($label), $UNDO_ROUNDS rounds (load $(loadavg))"
    mkdir -p "$UNDO_DIR"
    declare -A U
    for r in $(seq 1 "$UNDO_ROUNDS"); do
        args=()
        for b in $(order "$r"); do
            # A new window each round, in this round's order and under a new name.
            W=$UNDO_DIR/rewind-ab-undo-$b-$r
            REWIND_BENCH_DATA=$DATA "$ROOT/benches/undo-window.sh" "$W/ws" "$W/home" "$(bin $b)"
            U[$b]="$(bin $b) --home $W/home --workspace $W/ws"
        done
        for b in $(order "$r"); do
            args+=(--prepare "sync; ${U[$b]} redo >/dev/null 2>&1 || true" -n "$b undo" "${U[$b]} undo")
        done
        for b in $(order "$r"); do
            args+=(--prepare "sync; ${U[$b]} undo >/dev/null 2>&1 || true" -n "$b redo" "${U[$b]} redo")
        done
        hf_round undo "$r" "$RUNS" "${args[@]}"
        rm -rf "$UNDO_DIR"/rewind-ab-undo-*-"$r"
    done
    section_done "row 7"
fi

note "load average at end: $(loadavg)"
if awk -v n="$(nproc)" '{ exit !($2 > n) }' /proc/loadavg; then
    note "warning: the 5-minute load average is above the $(nproc) cores: other processes competed with every measurement; see benches/ab/rows-table.py on reading the ratios"
fi
note "took: $(($(date +%s) - start)) s"
python3 "$ROOT/benches/ab/rows-table.py" "$OUT" "$LIMIT" | tee "$OUT/table.md"
