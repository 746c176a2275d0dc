#!/bin/bash
# Issue 28's benchmark (not a test): the review page with a 1,000-file window (the window of
# undo-window.sh: the agent appended a line to each of 1,000 Linux drivers/**/*.c).
#  1. Page load: GET /api/sessions + GET /api/windows/1 (the page's first two calls; diffs
#     load lazily, one per click), timed by curl on loopback. Target: <= 300 ms together.
#  2. Reject all of that window (POST /api/reject {"window":"1","skip_unsafe":true}) against
#     the CLI's `rewind undo --window 1` of the same window, alternating, fresh copies each
#     round (server start not timed; the CLI's process start is). Target: <= 1.25x.
# usage: benches/review.sh REWIND [ROUNDS]   (data: benches/fetch-data.sh; needs curl, python3)
# Prints one JSON line per measurement, then medians and the ratio.
set -euo pipefail
REWIND=$(realpath "$(command -v "$1")")
ROUNDS=${2:-7}
DIR=$(mktemp -d)
SERVER=
stop() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=; fi; }
trap 'stop; rm -rf "$DIR"' EXIT
here=$(dirname "$0")
"$here/undo-window.sh" "$DIR/ws" "$DIR/home" "$REWIND"
# Templates: each round works on a fresh copy at the original paths (the home knows the
# workspace by its path).
for d in ws home; do cp -a "$DIR/$d" "$DIR/$d.tpl"; done
fresh() { for d in ws home; do rm -rf "${DIR:?}/$d" && cp -a "$DIR/$d.tpl" "$DIR/$d"; done; sync; }

start() {
  : >"$DIR/url"
  "$REWIND" --home "$DIR/home" --workspace "$DIR/ws" review >"$DIR/url" 2>/dev/null &
  SERVER=$!
  for _ in $(seq 200); do grep -q token= "$DIR/url" && break; sleep 0.05; done
  URL=$(sed -n 's/^rewind review: //p' "$DIR/url")
  BASE=${URL%%/#token=*}
  TOKEN=${URL##*token=}
}
# call METHOD PATH [BODY]: prints curl's total time in seconds; the answer goes to $DIR/out.json.
call() {
  local args=(-s -o "$DIR/out.json" -w '%{time_total} %{http_code}' -X "$1" -H "Authorization: Bearer $TOKEN")
  [ $# -lt 3 ] || args+=(-H 'Content-Type: application/json' --data "$3")
  read -r t code < <(curl "${args[@]}" "$BASE$2")
  [ "$code" = 200 ] || { echo "$1 $2: HTTP $code: $(head -c 300 "$DIR/out.json")" >&2; exit 1; }
  echo "$t"
}
outcomes() {
  python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["files"]; print(*sorted({x["outcome"] for x in f}), len(f))' "$DIR/out.json"
}
now() { date +%s.%N; }

for round in $(seq "$ROUNDS"); do
  # Page load, then the window's Reject all.
  fresh; start
  s=$(call GET /api/sessions)
  w=$(call GET /api/windows/1)
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["files"]))' "$DIR/out.json")
  printf '{"round":%s,"kind":"sessions","seconds":%s}\n{"round":%s,"kind":"window","seconds":%s,"files":%s}\n' \
    "$round" "$s" "$round" "$w" "$n"
  sync
  r=$(call POST /api/reject '{"window":"1","skip_unsafe":true}')
  printf '{"round":%s,"kind":"reject-all","seconds":%s,"outcomes":"%s"}\n' "$round" "$r" "$(outcomes)"
  stop
  # The CLI's undo of the same window, on a fresh copy.
  fresh
  t0=$(now)
  "$REWIND" --home "$DIR/home" --workspace "$DIR/ws" --json undo --window 1 >"$DIR/out.json"
  t1=$(now)
  printf '{"round":%s,"kind":"cli-undo","seconds":%.6f,"outcomes":"%s"}\n' "$round" "$(echo "$t1 - $t0" | bc)" "$(outcomes)"
done | tee "$DIR/results.jsonl"

python3 - "$DIR/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["kind"], []).append(float(r["seconds"]))
med = {k: statistics.median(v) for k, v in by.items()}
ms = lambda s: f"{s * 1000:.0f} ms"
rng = lambda k: f"{ms(min(by[k]))}–{ms(max(by[k]))}"
load = [a + b for a, b in zip(by["sessions"], by["window"])]
print(f"page load (sessions + window of 1,000 files): median {ms(statistics.median(load))} "
      f"(sessions {ms(med['sessions'])}, window {ms(med['window'])}; range {ms(min(load))}–{ms(max(load))}), target <= 300 ms")
ratios = [a / b for a, b in zip(by["reject-all"], by["cli-undo"])]
print(f"reject-all {ms(med['reject-all'])} ({rng('reject-all')}) vs CLI undo {ms(med['cli-undo'])} ({rng('cli-undo')}): "
      f"ratio of medians {med['reject-all'] / med['cli-undo']:.2f}x (per round {min(ratios):.2f}–{max(ratios):.2f}x), target <= 1.25x")
PY
