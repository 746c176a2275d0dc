#!/bin/bash
# A/B of undo/redo between two builds, step 1: a workspace DIR/ws of the 1,000 files of the
# harness's section 7 (drivers/**/*.c of the Linux tree, the first 1,000 in sort order), and a
# home DIR/home holding one window that appended a line to each.
# usage: benches/ab/undo-setup.sh DIR REWIND    (then benches/ab/undo-ab.py)
set -euo pipefail
DIR=$1
REWIND=$2
TREE=${REWIND_BENCH_DATA:-$HOME/.cache/rewind-bench}/linux
WS=$DIR/ws
HOME_DIR=$DIR/home
rm -rf "$WS" "$HOME_DIR"
mkdir -p "$WS"
LIST=$DIR/files.txt
(cd "$TREE" && find drivers -type f -name '*.c' | sort | awk 'NR <= 1000') >"$LIST"
(cd "$TREE" && xargs -a "$LIST" cp --parents -t "$WS")
cd "$WS"
ru() { "$REWIND" --home "$HOME_DIR" --workspace "$WS" "$@"; }
mapfile -t files <"$LIST"
ru window open --label "1000 files" >/dev/null
ru snap "${files[@]}" >/dev/null
for f in "${files[@]}"; do printf '/* edited by the agent */\n' >>"$f"; done
ru record "${files[@]}" >/dev/null
ru window close >/dev/null
