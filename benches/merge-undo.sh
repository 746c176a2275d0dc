#!/bin/bash
# Issue 27's benchmark: merge-undo of a window touching 1,000 files, each with a later
# non-overlapping change, against the plain undo of the same window without one, in the
# same run (alternating, fresh copies each round). Target: merge <= 2x plain.
# usage: benches/merge-undo.sh REWIND [ROUNDS]   (data: benches/fetch-data.sh)
set -euo pipefail
REWIND=$(realpath "$(command -v "$1")")
ROUNDS=${2:-5}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
here=$(dirname "$0")
"$here/undo-window.sh" "$DIR/ws" "$DIR/home" "$REWIND"
ru() { "$REWIND" --home "$1" --workspace "$2" "${@:3}"; }
# The later change: a second window that puts a line at the top of each file (the first
# window appended one at the end).
cp -a "$DIR/ws" "$DIR/ws-plain" && cp -a "$DIR/home" "$DIR/home-plain"
cd "$DIR/ws"
mapfile -t files < <(find . -type f -name '*.c' | sort)
ru "$DIR/home" "$DIR/ws" window open --label later >/dev/null
ru "$DIR/home" "$DIR/ws" snap "${files[@]}" >/dev/null
for f in "${files[@]}"; do sed -i '1i /* later */' "$f"; done
ru "$DIR/home" "$DIR/ws" record "${files[@]}" >/dev/null
ru "$DIR/home" "$DIR/ws" window close >/dev/null
cd "$DIR"
now() { date +%s.%N; }
# Templates: each round undoes a fresh copy at the original paths (the home knows the
# workspace by its path).
for d in ws ws-plain home home-plain; do cp -a "$DIR/$d" "$DIR/$d.tpl"; done
for round in $(seq "$ROUNDS"); do
  for kind in plain merge; do
    suffix=$([ "$kind" = plain ] && echo -plain || echo)
    for d in "ws$suffix" "home$suffix"; do rm -rf "${DIR:?}/$d" && cp -a "$DIR/$d.tpl" "$DIR/$d"; done
    sync
    t0=$(now)
    ru "$DIR/home$suffix" "$DIR/ws$suffix" --json undo --window 1 >"$DIR/out.json"
    t1=$(now)
    outcome=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["files"]; print(sorted({x["outcome"] for x in f}), len(f))' "$DIR/out.json")
    printf '{"round":%s,"kind":"%s","seconds":%.3f,"outcomes":"%s"}\n' "$round" "$kind" "$(echo "$t1 - $t0" | bc)" "$outcome"
  done
done
