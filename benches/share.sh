#!/bin/bash
# Issue 44's benchmark (not a test): sharing sessions through a git remote served by
# `git daemon` on 127.0.0.1, side by side with git itself.
#  1. push a 1,000-change session (one window: the agent appended a line to each of 1,000
#     2 KB files) to a fresh remote, against `git push` of the very same commit as a branch
#     to another fresh remote (rewind's push writes the session's new versions as git objects
#     first, every round; git's pushes objects that exist). Target: <= 2 s and <= 1.5x.
#  2. fetch one session from a remote holding SESSIONS sessions into a fresh clone: time,
#     and the bytes the clone's object store grew by against that session's own objects.
#     Target: <= 1 s, bytes <= 1.2x.
#     Also `git fetch` of the same ref into a fresh clone, and `push --all` of the
#     SESSIONS-1 sessions (one `git push`) against `git push` of the same refs.
#  3. `rewind log --remote` with SESSIONS sessions against `git ls-remote` of the same refs.
#     Target: <= 1.5x. Once against a remote serving no filtered fetch, once against one
#     that does from a fresh home (the first listing a person runs), once from the home of
#     the first (the session commits no summary vouches for fetched too), and once more
#     (the commits kept in the home from the listing before).
# usage: benches/share.sh REWIND [ROUNDS] [SESSIONS]   (needs git, python3; no data download)
# Prints one line per measurement, then medians and ratios. Measure a release build.
set -euo pipefail
REWIND=$(realpath "$(command -v "$1")")
ROUNDS=${2:-5}
SESSIONS=${3:-1000}
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
DAEMON=$!   # git-daemon itself: killing the `git` front end would leave it running
URL="git://127.0.0.1:$PORT"
for _ in $(seq 100); do git ls-remote "$URL/none" >/dev/null 2>&1 && break; git init -q --bare "$DIR/srv/none"; sleep 0.05; done

# The project: 1,000 files, on main in a seed remote.
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
"$REWIND" window open >/dev/null
"$REWIND" snap src/*.txt >/dev/null
for f in src/*.txt; do echo "agent line" >>"$f"; done
"$REWIND" record src/*.txt >/dev/null
"$REWIND" window close >/dev/null

fresh_remote() { rm -rf "$DIR/srv/$1" && cp -a "$DIR/srv/seed.git" "$DIR/srv/$1"; }
echo "## 1. push a 1,000-change session"
for r in $(seq "$ROUNDS"); do
  fresh_remote r.git
  git for-each-ref --format='%(refname)' refs/rewind | xargs -r -n1 git update-ref -d
  # Every round a first push: the versions the round before wrote are dropped (they are
  # unreachable once its ref is gone), so rewind writes them again, as any real push does.
  git repack -a -d -q && git prune --expire=now
  t0=$(now); "$REWIND" push --remote "$URL/r.git" >/dev/null; t1=$(now)
  commit=$(git for-each-ref --format='%(objectname)' 'refs/rewind/??/*/*')
  fresh_remote g.git
  t2=$(now); git push -q "$URL/g.git" "$commit:refs/heads/bench"; t3=$(now)
  echo "push rewind $(ms "$t0" "$t1") ms  git-branch $(ms "$t2" "$t3") ms"
done | tee "$DIR/push.txt"

echo "## 2./3. a remote holding $SESSIONS sessions"
fresh_remote many.git
"$REWIND" push --remote "$URL/many.git" >/dev/null
cd "$DIR" && git clone -q "$URL/seed.git" other && cd other
export REWIND_ORIGIN=ci@runner REWIND_HOME="$DIR/home-o"
for i in $(seq 2 "$SESSIONS"); do
  REWIND_SESSION="job$i" "$REWIND" window open >/dev/null
  REWIND_SESSION="job$i" "$REWIND" snap "src/f$((i % 1000)).txt" >/dev/null
  echo "job $i" >>"src/f$((i % 1000)).txt"
  REWIND_SESSION="job$i" "$REWIND" record "src/f$((i % 1000)).txt" >/dev/null
  REWIND_SESSION="job$i" "$REWIND" window close >/dev/null
done
t0=$(now); "$REWIND" push --all --remote "$URL/many.git" >/dev/null; t1=$(now)
# The same refs and objects by git alone (one `git push`), to a fresh copy of the seed.
fresh_remote many-git.git
git for-each-ref --format='%(objectname):%(refname)' refs/rewind >"$DIR/specs"
t2=$(now); git push -q "$URL/many-git.git" $(cat "$DIR/specs"); t3=$(now)
echo "pushall rewind $(ms "$t0" "$t1") ms  git-push $(ms "$t2" "$t3") ms  sessions $((SESSIONS - 1))" | tee "$DIR/pushall.txt"
echo "$(git ls-remote "$URL/many.git" 'refs/rewind/??/*/*' | wc -l) session refs and $(git ls-remote "$URL/many.git" 'refs/rewind/summary/*' | wc -l) summary refs on the remote"

size() { du -sk "$1/.git/objects" | cut -f1; }
for r in $(seq "$ROUNDS"); do
  cd "$DIR" && rm -rf "$DIR/b" "$DIR/home-b" && git clone -q "$URL/seed.git" "$DIR/b" && cd "$DIR/b"
  export REWIND_ORIGIN=bob@desk REWIND_HOME="$DIR/home-b"
  before=$(size .)
  t0=$(now); "$REWIND" fetch --remote "$URL/many.git" alice@laptop/s1 >/dev/null; t1=$(now)
  after=$(size .)
  # The session's own new objects, as git would pack them for a clone that has main.
  own=$(git rev-list --objects $(git for-each-ref --format='%(objectname)' 'refs/rewind/??/*/*') --not main | git pack-objects --stdout -q | wc -c)
  echo "fetch rewind $(ms "$t0" "$t1") ms  objects-grew $(( (after - before) * 1024 )) B  session-pack $own B"
  # git alone: the same ref into another fresh clone.
  rm -rf "$DIR/g" && git clone -q "$URL/seed.git" "$DIR/g"
  ref=$(git for-each-ref --format='%(refname)' 'refs/rewind/??/*/*')
  t6=$(now); git -C "$DIR/g" fetch -q --no-tags "$URL/many.git" "+$ref:$ref"; t7=$(now)
  echo "gitfetch rewind $(ms "$t0" "$t1") ms  git-fetch $(ms "$t6" "$t7") ms"
  git -C "$DIR/srv/many.git" config --unset uploadpack.allowFilter || true
  t2=$(now); "$REWIND" log --remote "$URL/many.git" >/dev/null; t3=$(now)
  t4=$(now); git ls-remote "$URL/many.git" 'refs/rewind/*' >/dev/null; t5=$(now)
  echo "list rewind $(ms "$t2" "$t3") ms  git-ls-remote $(ms "$t4" "$t5") ms"
  # A remote that serves filtered fetches, listed from a home no listing has filled: the
  # first listing a person runs (counts from the summary refs; a build without them
  # fetches every session's commit).
  git -C "$DIR/srv/many.git" config uploadpack.allowFilter true
  t2=$(now); REWIND_HOME="$DIR/home-first-$r" "$REWIND" log --remote "$URL/many.git" >/dev/null; t3=$(now)
  t4=$(now); git ls-remote "$URL/many.git" 'refs/rewind/*' >/dev/null; t5=$(now)
  echo "listfirst rewind $(ms "$t2" "$t3") ms  git-ls-remote $(ms "$t4" "$t5") ms"
  # The same remote from the home above: every session's commit no summary vouches for is
  # fetched too (one small object each), all but the one fetched above.
  t2=$(now); "$REWIND" log --remote "$URL/many.git" >/dev/null; t3=$(now)
  t4=$(now); git ls-remote "$URL/many.git" 'refs/rewind/*' >/dev/null; t5=$(now)
  echo "listmeta rewind $(ms "$t2" "$t3") ms  git-ls-remote $(ms "$t4" "$t5") ms"
  # Again: the commits the listing above fetched are kept in the home (listed-commits.git),
  # so this one fetches none (the common case: a listing with no new push since the last).
  t2=$(now); "$REWIND" log --remote "$URL/many.git" >/dev/null; t3=$(now)
  t4=$(now); git ls-remote "$URL/many.git" 'refs/rewind/*' >/dev/null; t5=$(now)
  echo "listwarm rewind $(ms "$t2" "$t3") ms  git-ls-remote $(ms "$t4" "$t5") ms"
done | tee "$DIR/fetch.txt"

python3 - "$DIR/push.txt" "$DIR/fetch.txt" "$DIR/pushall.txt" <<'EOF'
import statistics, sys
rows = [l.split() for f in sys.argv[1:] for l in open(f)]
def med(kind, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == kind)
p, g = med("push", 2), med("push", 5)
print(f"push: rewind {p:.0f} ms, git push of the same commit as a branch {g:.0f} ms, {p / g:.2f}x")
f = med("fetch", 2)
grew, own = med("fetch", 5), med("fetch", 8)
print(f"fetch one session: {f:.0f} ms; object store grew {grew:.0f} B against the session's own pack {own:.0f} B ({grew / own:.2f}x, loose objects are larger than a pack)")
gf = med("gitfetch", 5)
print(f"fetch one session: git fetch of the same ref {gf:.0f} ms, {f / gf:.2f}x")
a, ga, n = med("pushall", 2), med("pushall", 5), med("pushall", 8)
print(f"push --all of {n:.0f} sessions (one run): rewind {a:.0f} ms, git push of the same refs {ga:.0f} ms, {a / ga:.2f}x")
l, s = med("list", 2), med("list", 5)
print(f"log --remote: rewind {l:.0f} ms, git ls-remote {s:.0f} ms, {l / s:.2f}x")
l, s = med("listfirst", 2), med("listfirst", 5)
print(f"log --remote, remote serving filters, first listing in a fresh home: rewind {l:.0f} ms, git ls-remote {s:.0f} ms, {l / s:.2f}x")
l, s = med("listmeta", 2), med("listmeta", 5)
print(f"log --remote, remote serving filters (commits fetched): rewind {l:.0f} ms, git ls-remote {s:.0f} ms, {l / s:.2f}x")
l, s = med("listwarm", 2), med("listwarm", 5)
print(f"log --remote, remote serving filters, again (commits kept from the listing before): rewind {l:.0f} ms, git ls-remote {s:.0f} ms, {l / s:.2f}x")
EOF
