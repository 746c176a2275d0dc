#!/usr/bin/env bash
# Capture Gemini CLI's checkpoints (`/restore`'s records) for `rewind import gemini`'s tests.
# Usage: tests/agents/capture_gemini_checkpoints.sh <gemini binary> <out dir>
#   (e.g. target/agents/gemini-cli-<version>/node_modules/.bin/gemini fixtures/gemini/real-<version>)
# Gemini checkpoints only in its interactive UI, before a file tool call it asks approval for:
# this runs the real `gemini` in tmux (default approval mode, `general.checkpointing.enabled`)
# against tests/agents/fake_gemini.py on 127.0.0.1 (inside `unshare -n` when it works), types
# the scenario's prompt and approves each call (write_file notes.txt, replace README.md,
# replace notes.txt, read_file, run_shell_command sed; the fake server appends `user line` to
# notes.txt before the read). No rewind hooks. Keeps, under <out dir>: `gemini/` (its
# projects.json, `history/<id>/` with the shadow repository's `.git` as `dot-git/` (HEAD,
# refs, objects), `tmp/<id>/` with `checkpoints/`, `chats/` and `.project_root`) and
# `workspace/` (the files at the end), the workspace path replaced by /REWIND_FIXTURE_WS.
set -euo pipefail
GEMINI=$(realpath "$1"); OUT=$(realpath -m "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/rewind-gemini-capture.XXXXXX")
mkdir -p "$D/ws" "$D/home/.gemini"
(cd "$D/ws" && git init -q && git config user.email e2e@example.invalid && git config user.name e2e \
  && echo "# e2e" > README.md && git add README.md && git commit -qm init)
cat > "$D/home/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "checkpointing": {"enabled": true}}}
JSON
cat > "$D/run.sh" <<RUN
set -u
python3 "$HERE/fake_gemini.py" "$D/ws" "$D/requests.jsonl" "$D/port" & srv=\$!
for _ in \$(seq 100); do [ -s "$D/port" ] && break; sleep 0.1; done
tmux -L rwgem new-session -d -s g -x 200 -y 50 "cd $D/ws && env HOME=$D/home GEMINI_API_KEY=e2e-dummy GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:\$(cat "$D/port") GEMINI_CLI_NO_RELAUNCH=true $GEMINI; sleep 600"
for _ in \$(seq 60); do sleep 0.5; tmux -L rwgem capture-pane -p -t g | grep -q "Type your message" && break; done
tmux -L rwgem send-keys -t g -l "create notes.txt, edit it, read it, uppercase with sed"
sleep 1; tmux -L rwgem send-keys -t g Enter
n=0
for _ in \$(seq 60); do
  sleep 1
  tmux -L rwgem capture-pane -p -t g > "$D/screen.txt"
  if grep -q "Allow once" "$D/screen.txt"; then tmux -L rwgem send-keys -t g Enter; n=\$((n+1)); sleep 1; fi
  if [ \$n -ge 4 ] && grep -q "✦ done" "$D/screen.txt"; then break; fi
done
tmux -L rwgem send-keys -t g "/quit" Enter; sleep 3
tmux -L rwgem kill-server; kill \$srv
RUN
if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
  unshare -n sh -c 'ip link set lo up && exec bash "$1"' sh "$D/run.sh"
else
  bash "$D/run.sh"
fi
G="$D/home/.gemini"
rm -rf "$OUT"; mkdir -p "$OUT/gemini/tmp" "$OUT/gemini/history"
for d in "$G"/tmp/*/; do
  id=$(basename "$d"); mkdir -p "$OUT/gemini/tmp/$id"
  cp -r "$d/checkpoints" "$d/chats" "$d/.project_root" "$OUT/gemini/tmp/$id/"
done
for d in "$G"/history/*/; do
  id=$(basename "$d"); mkdir -p "$OUT/gemini/history/$id/dot-git"
  cp "$d/.project_root" "$OUT/gemini/history/$id/"
  (cd "$d/.git" && cp -r HEAD refs objects "$OUT/gemini/history/$id/dot-git/")
done
cp "$G/projects.json" "$OUT/gemini/"
mkdir -p "$OUT/workspace"; cp "$D/ws"/*.* "$OUT/workspace/"
grep -rlF "$D/ws" "$OUT/gemini" | while read -r f; do
  python3 - "$f" "$D/ws" "$D" <<'PY'
import sys
p, ws, tmp = sys.argv[1:]
s = open(p).read().replace(ws, "/REWIND_FIXTURE_WS").replace(tmp, "/REWIND_FIXTURE_TMP")
open(p, "w").write(s)
PY
done
echo "captured into $OUT ($("$GEMINI" --version))"
[ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"
