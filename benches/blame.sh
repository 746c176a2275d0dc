#!/bin/bash
# Issue 27's blame benchmark: a 5,000-line file with 200 versions (each an agent window that
# rewrites a few random lines), blamed by `rewind blame` and, with the same history replayed
# as commits, by `git blame`, in the same run. Target: rewind <= 1.0x git.
# usage: benches/blame.sh REWIND [ROUNDS]
set -euo pipefail
REWIND=$(realpath "$(command -v "$1")")
ROUNDS=${2:-5}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/ws" && cd "$DIR/ws"
git init -q . && git config user.email b@b && git config user.name bench
ru() { "$REWIND" --home "$DIR/home" --workspace "$DIR/ws" "$@"; }
python3 - "$DIR/ws/f.txt" 0 <<'PY'
import sys
open(sys.argv[1], "w").write("".join(f"line {i} of the original file\n" for i in range(5000)))
PY
git add f.txt && git commit -qm v0
for v in $(seq 200); do
  ru window open >/dev/null
  ru snap f.txt >/dev/null
  python3 - "$DIR/ws/f.txt" "$v" <<'PY'
import random, sys
path, v = sys.argv[1], int(sys.argv[2])
lines = open(path).read().splitlines(keepends=True)
rnd = random.Random(v)
for _ in range(5):
    lines[rnd.randrange(len(lines))] = f"version {v} rewrote this line\n"
open(path, "w").write("".join(lines))
PY
  ru record f.txt >/dev/null
  ru window close >/dev/null
  git commit -qam "v$v"
done
now() { date +%s.%N; }
for round in $(seq "$ROUNDS"); do
  t0=$(now); ru blame f.txt >/dev/null; t1=$(now)
  git blame f.txt >/dev/null; t2=$(now)
  printf '{"round":%s,"rewind_s":%.3f,"git_s":%.3f}\n' "$round" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
done
