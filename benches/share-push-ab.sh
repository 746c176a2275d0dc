#!/bin/bash
# Issue 44's push row, two or more builds side by side (not a test): benches/share.sh's part 1
# (a 1,000-change session pushed to a loopback `git daemon`, every round a first push, then
# `git push` of the same commit as a branch to a fresh copy of the seed), with the builds
# alternating round by round on one scene, so each ratio is to git's push of the same minute.
# usage: benches/share-push-ab.sh ROUNDS REWIND [REWIND…]   (needs git, python3)
# Prints one line per push (build, rewind ms, git ms, load), then per build: medians, their
# ratio, and the range of the per-round ratios.
set -euo pipefail
ROUNDS=$1; shift
BINS=()
for b in "$@"; do BINS+=("$(realpath "$(command -v "$b")")"); done
DIR=$(mktemp -d)
DAEMON=
trap '[ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null; rm -rf "$DIR"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$DIR/user" GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b \
  GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b REWIND_SESSION=s1
mkdir -p "$HOME"
now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$DIR/srv"
"$(git --exec-path)/git-daemon" --export-all --enable=receive-pack --reuseaddr --listen=127.0.0.1 --port="$PORT" \
  --base-path="$DIR/srv" "$DIR/srv" >/dev/null 2>&1 &
DAEMON=$!
URL="git://127.0.0.1:$PORT"
for _ in $(seq 100); do git ls-remote "$URL/none" >/dev/null 2>&1 && break; git init -q --bare "$DIR/srv/none"; sleep 0.05; done
git init -q --bare -b main "$DIR/srv/seed.git"
git init -q -b main "$DIR/a"
cd "$DIR/a"
mkdir src
python3 - <<'EOF'
for i in range(1000):
    open(f"src/f{i}.txt", "w").write(("x" * 79 + "\n") * 25 + f"file {i}\n")
EOF
git add . && git commit -qm base && git push -q "$URL/seed.git" main
export REWIND_ORIGIN=alice@laptop REWIND_HOME="$DIR/home-a"
R="${BINS[0]}"   # the scene is recorded by the first build
"$R" window open >/dev/null
"$R" snap src/*.txt >/dev/null
for f in src/*.txt; do echo "agent line" >>"$f"; done
"$R" record src/*.txt >/dev/null
"$R" window close >/dev/null
fresh_remote() { rm -rf "$DIR/srv/$1" && cp -a "$DIR/srv/seed.git" "$DIR/srv/$1"; }
for r in $(seq "$ROUNDS"); do
  for i in "${!BINS[@]}"; do
    B="${BINS[$i]}"
    fresh_remote r.git
    git for-each-ref --format='%(refname)' refs/rewind | xargs -r -n1 git update-ref -d
    git repack -a -d -q && git prune --expire=now
    t0=$(now); "$B" push --remote "$URL/r.git" >/dev/null; t1=$(now)
    commit=$(git for-each-ref --format='%(objectname)' 'refs/rewind/??/*/*')
    fresh_remote g.git
    t2=$(now); git push -q "$URL/g.git" "$commit:refs/heads/bench"; t3=$(now)
    echo "bin$i $(ms "$t0" "$t1") $(ms "$t2" "$t3") $(cut -d' ' -f1 /proc/loadavg)"
  done
done | tee "$DIR/out.txt"
python3 - "$DIR/out.txt" "${BINS[@]}" <<'EOF'
import statistics, sys
rows=[l.split() for l in open(sys.argv[1])]
for i,b in enumerate(sys.argv[2:]):
    rr=[r for r in rows if r[0]==f"bin{i}"]
    p=statistics.median(float(r[1]) for r in rr); g=statistics.median(float(r[2]) for r in rr)
    ratios=sorted(float(r[1])/float(r[2]) for r in rr)
    print(f"{b}: rewind {p:.0f} ms, git push {g:.0f} ms, ratio of medians {p/g:.2f}x, per-round {ratios[0]:.2f}-{ratios[-1]:.2f}, load {rr[0][3]}-{rr[-1][3]}")
EOF
