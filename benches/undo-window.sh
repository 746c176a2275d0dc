#!/bin/bash
# The undo benchmark's workspace: WS holds the first 1,000 files (in sort order) of
# drivers/**/*.c of the Linux tree, and HOME one window in which the agent appended a line to
# each. Used by compare.sh (section 7) and by benches/ab/undo-ab.py (A/B of two builds);
# benches/review-10k.py makes it with UNDO_WINDOW_FILES=10000.
# usage: [UNDO_WINDOW_FILES=N] benches/undo-window.sh WS HOME REWIND
set -euo pipefail
# Absolute: the script changes directory.
WS=$(realpath -m "$1")
HOME_DIR=$(realpath -m "$2")
REWIND=$(realpath "$(command -v "$3")")
TREE=${REWIND_BENCH_DATA:-$HOME/.cache/rewind-bench}/linux
rm -rf "$WS" "$HOME_DIR"
mkdir -p "$WS"
COUNT=${UNDO_WINDOW_FILES:-1000}
mapfile -t files < <(cd "$TREE" && find drivers -type f -name '*.c' | sort | awk -v n="$COUNT" 'NR <= n')
(cd "$TREE" && cp --parents -t "$WS" "${files[@]}")
cd "$WS"
ru() { "$REWIND" --home "$HOME_DIR" --workspace "$WS" "$@"; }
ru window open --label "$COUNT files" >/dev/null
ru snap "${files[@]}" >/dev/null
for f in "${files[@]}"; do printf '/* edited by the agent */\n' >>"$f"; done
ru record "${files[@]}" >/dev/null
ru window close >/dev/null
