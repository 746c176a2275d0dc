#!/usr/bin/env bash
# End-to-end suite against the real agents (issue 25): Claude Code, Gemini CLI, OpenCode, Codex,
# pi, Cline CLI, Copilot CLI, Qwen Code (issue 45).
# Usage: tests/agents/run.sh            (from anywhere; see tests/agents/README.md)
# Env:   REWIND_BIN=<path>  use this rewind binary instead of building one (default: the debug
#                           binary, built by `cargo build --locked`; RELEASE=1: the release one)
#        KEEP=1             keep the scratch directory and print its path
#        CAPTURE=1          save the hook payloads as fixtures/hooks/<agent>/real-<version>/
#        AGENTS="a b"       run only these agents (names as in tests/agents/versions)
# --latest: install whatever the npm registry serves now for each agent instead of the pins in
#           `versions` (under target/agents/<name>-<version>/ like the pins), run the same
#           checks, and report how each agent's hook payloads differ in shape from its newest
#           recorded fixtures (compare_fixtures.py). Not part of the default run.
set -uo pipefail
LATEST=
[ "${1:-}" = --latest ] && { LATEST=1; CAPTURE=1; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/tests/agents"
PASS=0 FAIL=0 SKIPPED=0
ok()   { PASS=$((PASS+1)); echo "  PASS  $*"; }
bad()  { FAIL=$((FAIL+1)); echo "  FAIL  $*"; }
skip() { SKIPPED=$((SKIPPED+1)); echo "SKIP  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# --- rewind ---------------------------------------------------------------------------
# The debug binary by default: `cargo test` has just built it (README's test command runs
# this suite after `cargo test --locked`), so `cargo build` is a no-op, and CI skips a second,
# fat-LTO release build. RELEASE=1 tests the release binary.
if [ -n "${REWIND_BIN:-}" ]; then
  RW=$REWIND_BIN
else
  TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
  if [ -n "${RELEASE:-}" ]; then profile=release; flag=--release; else profile=debug; flag=; fi
  RW="$ROOT/target/$TRIPLE/$profile/rewind"
  echo "== rewind: cargo build${flag:+ $flag} --locked ($RW)"
  (cd "$ROOT" && cargo build $flag --locked -q) || { echo "FAIL  cargo build"; exit 1; }
fi
[ -x "$RW" ] || { echo "FAIL  no rewind binary at $RW"; exit 1; }

# --- the review page in a real browser (issue 28): passes, fails or SKIPs on its own ----
bout=$(mktemp "${TMPDIR:-/tmp}/rewind-browser-out.XXXXXX")
REWIND_BIN="$RW" "$ROOT/tests/browser/run.sh" | tee "$bout"
brc=${PIPESTATUS[0]}
PASS=$((PASS + $(grep -c '^  PASS' "$bout")))
! grep -q '^SKIP' "$bout" || SKIPPED=$((SKIPPED + 1))
rm -f "$bout"
[ "$brc" = 0 ] || bad "browser test of rewind review (tests/browser/run.sh, exit $brc)"

command -v python3 >/dev/null || { skip "python3 not found (the fake model server needs it)"; [ "$FAIL" = 0 ]; exit; }

# --- scratch --------------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rewind-agents.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "${KEEP:-}" ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# A shim named `rewind` first on PATH: the hooks init writes call `rewind hook <agent>`;
# the shim saves each hook payload (one JSON line) before handing it to the real binary.
mkdir -p "$TMP/bin"
cat > "$TMP/bin/rewind" <<SHIM
#!/bin/sh
if [ "\$1" = hook ]; then
  f=\$(mktemp "$TMP/payload.XXXXXX")
  cat > "\$f"
  { cat "\$f"; echo; } > "\$f.line"; cat "\$f.line" >> "$TMP/payloads.jsonl"  # one write each
  exec "$RW" "\$@" < "\$f"
fi
exec "$RW" "\$@"
SHIM
chmod +x "$TMP/bin/rewind"

# want <agent>: is it in $AGENTS (space-separated names from `versions`; unset: all)?
want() { [ -z "${AGENTS:-}" ] || [[ " $AGENTS " == *" $1 "* ]]; }

version_of() { awk -v a="$1" '$1 == a { print $2 }' "$HERE/versions"; }

# fixture_out <agent> <version>: where CAPTURE=1 saves the run's payloads: the fixtures, or
# with --latest a scratch directory that compare_fixtures.py holds against them.
fixture_out() {
  if [ -n "$LATEST" ]; then echo "$TMP/latest/$1"; else echo "$ROOT/fixtures/hooks/$1/real-$2"; fi
}

# --- Claude Code ----------------------------------------------------------------------
run_claude_code() {
  local ver cc ws home log sid
  npm_agent claude-code @anthropic-ai/claude-code claude || return 0
  ver=$AGENT_VER cc=$AGENT_BIN

  ws="$TMP/cc/ws"; home="$TMP/cc/home"; log="$TMP/cc/requests.jsonl"
  mkdir -p "$ws" "$home" "$TMP/cc/rewind-home"
  export REWIND_HOME="$TMP/cc/rewind-home"
  (cd "$ws" && git init -q && git config user.email e2e@example.invalid && git config user.name e2e \
     && echo "# e2e" > README.md && echo "AGENTS-E2E-ROOT: keep answers short" > AGENTS.md \
     && git add README.md AGENTS.md && git commit -qm init)
  (cd "$ws" && PATH="$TMP/bin:$PATH" rewind init claude-code >/dev/null) \
    && ok "rewind init claude-code" || { bad "rewind init claude-code"; return 0; }
  shim_hooks "$ws/.claude/settings.json"

  sid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  # The fake model server and the agent run together, in a network namespace with only a
  # loopback interface when `unshare -n` works (root or user namespaces): nothing the agent
  # tries can leave 127.0.0.1. Without it they run in the host's network, still pointed at
  # 127.0.0.1, with the agents' non-essential traffic switched off.
  cat > "$TMP/cc/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_anthropic.py" "$ws" "$log" "$TMP/cc/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$TMP/cc/port" ] && break; sleep 0.1; done
[ -s "$TMP/cc/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cd "$ws" && env HOME="$home" PATH="$TMP/bin:\$PATH" \
  ANTHROPIC_BASE_URL="http://127.0.0.1:\$(cat "$TMP/cc/port")" ANTHROPIC_API_KEY=sk-ant-e2e-dummy \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
  DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_ENABLE_TELEMETRY=0 CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=1 \
  timeout 180 "$cc" -p "create notes.txt, edit it, read it, uppercase with sed" \
    --session-id "$sid" --output-format json \
    --permission-mode acceptEdits --allowedTools Write Edit Read Bash \
    --setting-sources project --strict-mcp-config \
    >"$TMP/cc/out.json" 2>"$TMP/cc/err.txt"
AGENT
  if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
    echo "   session $sid; agent and model server in a loopback-only network namespace"
    unshare -n sh -c 'ip link set lo up && exec bash "$1"' sh "$TMP/cc/agent.sh"
  else
    echo "   session $sid; unshare -n unavailable: agent runs in the host network (pointed at 127.0.0.1)"
    bash "$TMP/cc/agent.sh"
  fi
  local rc=$?
  check "claude -p exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || { head -c 2000 "$TMP/cc/out.json" "$TMP/cc/err.txt"; }

  python3 "$HERE/check_import.py" save "$ws" "$TMP/cc/end"
  export WS="$ws" SID="$sid" RW LOG="$log" TMPD="$TMP"
  python3 "$HERE/check_claude_code.py"
  local crc=$?
  PASS=$((PASS + $(cat "$TMP/cc/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$TMP/cc/fail" 2>/dev/null || echo 1)))
  # What Claude Code itself recorded (its transcript and file-history backups, kept under -p
  # with CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=1), imported into a fresh home and undone,
  # against its own restore (`claude --resume <session> --rewind-files <prompt>`).
  echo "   rewind import claude-code of the run, against claude --rewind-files"
  import_check claude-code "$TMP/cc" WS="$ws" END="$TMP/cc/end" AGENT_HOME="$home" SID="$sid" \
    CLAUDE="$cc" || { [ "$crc" != 0 ] || crc=1; }
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" "$TMP/payloads.jsonl" "$TMP" "$ver" \
      "$(fixture_out claude-code "$ver")"
  fi

  # /rw-undo typed in the normal permission modes (default, acceptEdits), rewind off PATH,
  # the home chosen at init (issue 45, item 2).
  echo "   /rw-undo in default and acceptEdits modes"
  mkdir -p "$TMP/ccu"
  local urc=0
  if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
    unshare -n sh -c 'ip link set lo up && exec python3 "$@"' sh \
      "$HERE/check_claude_rw_undo.py" "$cc" "$RW" "$TMP/ccu" || urc=$?
  else
    python3 "$HERE/check_claude_rw_undo.py" "$cc" "$RW" "$TMP/ccu" || urc=$?
  fi
  PASS=$((PASS + $(cat "$TMP/ccu/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$TMP/ccu/fail" 2>/dev/null || echo 1)))
  [ "$crc" = 0 ] || return $crc
  return $urc
}

# --- helpers for the agents below -----------------------------------------------------
# npm_agent <name> <npm package> <bin>: installs `versions`' pin of <name> under
# target/agents/<name>-<version>/ once; sets AGENT_BIN and AGENT_VER. Returns 1 (after a SKIP
# saying why) when Node/npm are missing, the install fails or the agent does not start.
npm_agent() {
  local name=$1 pkg=$2 bin=$3 dir
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "$name: node/npm not found"; return 1
  fi
  AGENT_VER=$(version_of "$name")
  if [ -n "$LATEST" ]; then
    AGENT_VER=$(npm view "$pkg" version 2>/dev/null) \
      || { skip "$name: npm view $pkg failed"; return 1; }
    echo "== $name $AGENT_VER (the registry's newest; pinned: $(version_of "$name"))"
  else
    echo "== $name $AGENT_VER"
  fi
  dir="$ROOT/target/agents/$name-$AGENT_VER"
  AGENT_BIN="$dir/node_modules/.bin/$bin"
  if [ ! -x "$AGENT_BIN" ]; then
    echo "   installing $pkg@$AGENT_VER into $dir"
    mkdir -p "$dir"
    if ! timeout 600 npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
        --fetch-retries=1 --fetch-timeout=60000 "$pkg@$AGENT_VER" >"$TMP/npm-$name.log" 2>&1; then
      skip "$name: npm install failed (see below)"; tail -5 "$TMP/npm-$name.log"; return 1
    fi
  fi
  if ! timeout 60 "$AGENT_BIN" --version >/dev/null 2>&1; then
    skip "$name $AGENT_VER does not run here ($(node --version)): $(timeout 60 "$AGENT_BIN" --version 2>&1 | head -2)"
    return 1
  fi
}

# new_workspace <dir>: a scratch git workspace with a committed README.md holding "# e2e".
new_workspace() {
  mkdir -p "$1" && (cd "$1" && git init -q && git config user.email e2e@example.invalid \
    && git config user.name e2e && echo "# e2e" > README.md && git add README.md \
    && git commit -qm init)
}

# shim_hooks <file>...: `rewind init` writes the absolute path of the binary that ran it into
# the hook commands; point them at the payload-saving shim instead.
shim_hooks() {
  python3 - "$RW" "$TMP/bin/rewind" "$@" <<'PY'
import os, sys
real, shim, files = sys.argv[1], sys.argv[2], sys.argv[3:]
for p in files:
    s = open(p).read()
    for name in {os.path.realpath(real), real}:
        s = s.replace(name, shim)
    open(p, "w").write(s)
PY
}

# isolated <script>: runs the script (which starts the fake model server and the agent) in a
# network namespace with only a loopback interface when `unshare -n` works, else in the
# host's network (the agent is still pointed at 127.0.0.1).
isolated() {
  if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
    echo "   agent and model server in a loopback-only network namespace"
    unshare -n sh -c 'ip link set lo up && exec bash "$1"' sh "$1"
  else
    echo "   unshare -n unavailable: agent runs in the host network (pointed at 127.0.0.1)"
    bash "$1"
  fi
}

# import_check <agent> <dir> VAR=value…: check_import.py <agent> with those variables, the
# fresh rewind home <dir>/import-home, results in <dir>/import, in a loopback-only network
# namespace when `unshare -n` works (an agent's own restore runs no model, but starts).
import_check() {
  local agent=$1 d=$2
  shift 2
  local cmd=(env "$@" RW="$RW" FRESH="$d/import-home" RESULTS="$d/import"
    python3 "$HERE/check_import.py" "$agent")
  if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
    unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
  local rc=$?
  tally "$d/import"
  return $rc
}

# tally <dir>: adds the check script's counts to the totals.
tally() {
  PASS=$((PASS + $(cat "$1/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$1/fail" 2>/dev/null || echo 1)))
}

# --- Gemini CLI -----------------------------------------------------------------------
# gemini_turn <dir> <agent PATH>: the scripted turn (fake_gemini.py) in <dir>/ws as session
# $SID_GEM, HOME <dir>/home, with REWIND_HOME unset (the hooks carry the home init wrote).
gemini_turn() {
  local d=$1 path=$2
  mkdir -p "$d/home/.gemini"
  # User settings: the API-key auth (pointed at the fake server by GOOGLE_GEMINI_BASE_URL),
  # folder trust off (an untrusted folder runs no project hooks), no telemetry or updates.
  cat > "$d/home/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}
JSON
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_gemini.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cd "$d/ws" && env -u REWIND_HOME HOME="$d/home" PATH="$path" GEMINI_API_KEY=e2e-dummy \
  GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:\$(cat "$d/port")" GEMINI_CLI_NO_RELAUNCH=true \
  timeout 180 "$AGENT_BIN" -p "create notes.txt, edit it, read it, uppercase with sed" \
    --session-id "$SID_GEM" --yolo --output-format json >"$d/out.json" 2>"$d/err.txt"
AGENT
  isolated "$d/agent.sh"
}

run_gemini() {
  npm_agent gemini-cli @google/gemini-cli gemini || return 0
  local ver=$AGENT_VER d="$TMP/gemini"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && echo "AGENTS-E2E-ROOT: keep answers short" > AGENTS.md && git add AGENTS.md \
     && git commit -qm agents)
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init gemini >/dev/null) \
    && ok "rewind init gemini" || { bad "rewind init gemini"; return 0; }
  shim_hooks "$d/ws/.gemini/settings.json"
  SID_GEM=$(python3 -c 'import uuid; print(uuid.uuid4())')
  echo "   session $SID_GEM"
  : > "$TMP/payloads.jsonl"
  gemini_turn "$d" "$PATH"
  local rc=$?
  check "gemini -p exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || head -c 2000 "$d/out.json" "$d/err.txt"
  WS="$d/ws" SID="$SID_GEM" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" RESULTS="$d" \
    REWIND_HOME="$d/rewind-home" python3 "$HERE/check_gemini.py"
  tally "$d"
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent gemini "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out gemini "$ver")"
  fi
  run_gemini_without_rewind
  run_gemini_checkpoints
}

# need_tmux: tmux on PATH, installed like the browser check's chromium (apt-get, as root) when
# missing. Fails when there is none.
need_tmux() {
  if ! command -v tmux >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "== installing tmux (apt-get)"
    if ! apt-cache policy tmux 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq >/dev/null 2>&1
    fi
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1
  fi
  command -v tmux >/dev/null
}

# tui_turn <dir> <fake server> <approve text> <done text> <agent command>: the scenario's
# prompt typed into the agent's interactive UI in tmux (HOME=<dir>/home, in <dir>/ws, PORT in
# the command replaced by the fake model server's port), each approval asked answered with
# Enter, until <done text> is on the screen; then /quit. In a loopback-only network namespace
# when `unshare -n` works. Exit 0, or 90-93 saying what did not happen; <dir>/screen.txt holds
# the last screen.
tui_turn() {
  local d=$1 server=$2 allow=$3 done=$4 cmd=$5 tm="tmux -L rwtui-$$"
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/$server" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap '$tm kill-server 2>/dev/null; kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
# CI=true (or GITHUB_ACTIONS=true) puts Gemini CLI (and Qwen Code) in headless mode, where
# with no prompt it exits at once (seen in this project's CI): unset for the UI.
# remain-on-exit keeps what it printed.
port=\$(cat "$d/port")
cmd="$cmd"
$tm new-session -d -s g -x 200 -y 50 "cd $d/ws && env -u REWIND_HOME -u CI -u GITHUB_ACTIONS HOME=$d/home \${cmd//PORT/\$port}" \\; set-option -t g remain-on-exit on
screen() { $tm capture-pane -p -t g > "$d/screen.txt"; grep -q "\$1" "$d/screen.txt"; }
for _ in \$(seq 120); do sleep 0.5; screen "Type your message" && break; done
screen "Type your message" || { echo "the agent's UI did not start; its pane:" >&2; cat "$d/screen.txt" >&2; exit 93; }
$tm send-keys -t g -l "create notes.txt, edit it, read it, uppercase with sed"
# An Enter that comes while the UI still takes the typed text in is lost (seen under load):
# Enter again until the model server has the request (an Enter on an empty input does
# nothing; no approval can be asked before that request).
for _ in \$(seq 10); do
  sleep 1; $tm send-keys -t g Enter
  for _ in \$(seq 20); do [ -s "$d/requests.jsonl" ] && break; sleep 0.5; done
  [ -s "$d/requests.jsonl" ] && break
done
[ -s "$d/requests.jsonl" ] || { echo "the prompt never reached the model server" >&2; exit 91; }
for _ in \$(seq 240); do
  sleep 0.5
  if screen "$allow"; then $tm send-keys -t g Enter; sleep 1; fi
  screen "$done" && break
done
screen "$done" || { echo "the turn did not end with done" >&2; exit 92; }
$tm send-keys -t g "/quit" Enter
for _ in \$(seq 20); do sleep 0.5; [ "\$($tm display -p -t g '#{pane_dead}' 2>/dev/null)" = 0 ] || break; done
AGENT
  isolated "$d/agent.sh"
}

# What Gemini CLI itself records: checkpoints (`/restore`'s shadow commits and JSON), taken
# only in its interactive UI, before a file tool call it asks approval for. So, as
# capture_gemini_checkpoints.sh does: the scenario in the real `gemini` UI in tmux (checkpointing
# on, no rewind hooks), each call approved. Then Gemini's restore of its first checkpoint, as
# `/restore` does it: `git restore --source <the checkpoint's commit> .` and `git clean -f -d`
# in its shadow repository, with the environment it gives git. (`/restore` typed in the UI
# restores, then proposes the checkpoint's tool call again, which then runs: what it wrote
# cannot be read before that.) Then `rewind import gemini` of those records into a fresh home,
# and undo of the imported turn, against what the restore wrote. Installs tmux with apt-get
# when missing (as root), else SKIPs.
run_gemini_checkpoints() {
  local d="$TMP/gemini-restore"
  echo "== gemini-cli $AGENT_VER checkpoints (interactive UI in tmux), its restore, rewind import gemini"
  need_tmux || { skip "gemini /restore and import: tmux not found (apt-get install tmux)"; return 0; }
  mkdir -p "$d/home/.gemini"
  new_workspace "$d/ws"
  cat > "$d/home/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "checkpointing": {"enabled": true}}}
JSON
  tui_turn "$d" fake_gemini.py "Allow once" "✦ done" \
    "GEMINI_API_KEY=e2e-dummy GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT GEMINI_CLI_NO_RELAUNCH=true $AGENT_BIN"
  local rc=$?
  check "gemini in tmux: each call approved, the turn ends with done (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || { tail -30 "$d/screen.txt"; return 0; }
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  local first hist hash
  first=$(ls "$d"/home/.gemini/tmp/*/checkpoints/*.json 2>/dev/null | sort | head -1)
  hist=$(ls -d "$d"/home/.gemini/history/*/ 2>/dev/null | head -1)
  hash=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["commitHash"])' \
    "$first" 2>/dev/null)
  check "Gemini kept checkpoints and its shadow repository" test -n "$hash" -a -d "$hist/.git"
  [ -n "$hash" ] || return 0
  (cd "$d/ws" && env GIT_DIR="$hist/.git" GIT_WORK_TREE="$d/ws" \
     GIT_CONFIG_GLOBAL="$hist/.gitconfig" GIT_CONFIG_SYSTEM="$hist/.gitconfig_system_empty" \
     sh -c 'git restore --source "$1" . && git clean -f -d -q' sh "$hash")
  check "Gemini's restore of its first checkpoint (git restore --source, clean)" test $? = 0
  python3 "$HERE/check_import.py" save "$d/ws" "$d/own"
  import_check gemini "$d" WS="$d/ws" END="$d/end" BEFORE="$d/own" AGENT_HOME="$d/home"
}

# Issue 25, gap 1: rewind installed, `init gemini` run, then the binary removed (and none on
# the agent's PATH). The hooks must let every tool call proceed: Gemini calls the model and
# finishes the turn. (A bare `rewind hook gemini` exits 127 here, a deny for Gemini.)
run_gemini_without_rewind() {
  local d="$TMP/gemini-gone" path
  echo "== gemini-cli $AGENT_VER, rewind removed after init (gap 1)"
  path=$(agent_path_without_rewind) || { skip "gemini without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init gemini >/dev/null) \
    || { bad "rewind init gemini (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  SID_GEM=$(python3 -c 'import uuid; print(uuid.uuid4())')
  gemini_turn "$d" "$path"
  local rc=$?
  check "gemini -p exited 0 without rewind (rc=$rc)" test "$rc" = 0
  python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
try:
    out = json.load(open(f"{d}/out.json"))
except (OSError, ValueError) as e:
    out = {"error": str(e)}
tools = out.get("stats", {}).get("tools", {})
reqs = sum(1 for _ in open(f"{d}/requests.jsonl")) if __import__("os").path.exists(f"{d}/requests.jsonl") else 0
notes = open(f"{d}/ws/notes.txt").read() if __import__("os").path.exists(f"{d}/ws/notes.txt") else None
ok = out.get("response") == "done" and tools.get("totalSuccess") == 5 and reqs >= 6 \
    and notes == "ONE\nTWO\nuser line\n"
print(f"  {'PASS' if ok else 'FAIL'}  without rewind the hooks allow: the model is called "
      f"({reqs} requests), 5 tool calls succeed, the turn ends with `done`")
if not ok:
    print("        ", json.dumps(out)[:1500], notes)
open(f"{d}/pass", "w").write("1" if ok else "0")
open(f"{d}/fail", "w").write("0" if ok else "1")
PY
  tally "$d"
}

# agent_path_without_rewind: $PATH without the directories that hold a `rewind` (prints the
# reason and fails when none is left to run node and the agent's tools).
agent_path_without_rewind() {
  local out="" dir
  local IFS=:
  for dir in $PATH; do
    [ -n "$dir" ] && [ ! -e "$dir/rewind" ] && out="${out:+$out:}$dir"
  done
  if PATH="$out" command -v node >/dev/null; then echo "$out"; else echo "node is next to rewind on PATH"; return 1; fi
}

# --- OpenCode -------------------------------------------------------------------------
# opencode_turn <dir> <agent PATH> <out> <opencode run args…>: a scripted turn
# (fake_openai_chat.py) in <dir>/ws, its JSON events in <dir>/<out>, with HOME and the XDG
# dirs under <dir>/home, REWIND_HOME unset (the plugin carries the home).
opencode_turn() {
  local d=$1 path=$2 out=$3 cache="$ROOT/target/agents/opencode-$AGENT_VER/npm-cache"
  shift 3
  local args
  args=$(printf '%q ' "$@")
  mkdir -p "$d/home"
  # At start OpenCode installs @opencode-ai/plugin (its version) into every config directory
  # (the workspace's .opencode/, ~/.config/opencode/), through the npm registry: in the
  # loopback-only namespace that waits ~70 s for its retries. So the package and its
  # dependencies go into an npm cache under target/ once (outside the namespace), and the
  # agent's ~/.npmrc installs from that cache only.
  if [ ! -d "$cache" ]; then
    npm install --no-audit --no-fund --loglevel=error --prefix "$d/plugin-deps" --cache "$cache" \
      "@opencode-ai/plugin@$AGENT_VER" >"$TMP/npm-opencode-plugin.log" 2>&1 \
      || echo "   (could not cache @opencode-ai/plugin@$AGENT_VER: OpenCode will wait for the registry)"
  fi
  printf 'cache=%s\noffline=true\n' "$cache" > "$d/home/.npmrc"
  # The provider: `@ai-sdk/openai-compatible` at the fake server, added to the opencode.json
  # init wrote once the server's port is known. OpenCode keeps its data (opencode.db and its
  # own snapshot/ repos) under XDG_DATA_HOME; its cache (models, provider packages) under
  # target/agents/ with the install.
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_openai_chat.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
python3 - "$d/ws/opencode.json" "\$(cat "$d/port")" <<'PY'
import json, sys
path, port = sys.argv[1], sys.argv[2]
cfg = json.load(open(path))
cfg.update({
    "provider": {"e2e": {"npm": "@ai-sdk/openai-compatible", "name": "e2e",
                         "options": {"baseURL": f"http://127.0.0.1:{port}/v1",
                                     "apiKey": "e2e-dummy"},
                         "models": {"e2e-model": {"name": "e2e model"},
                                    "gpt-e2e": {"name": "a gpt- id: apply_patch"}}}},
    "model": "e2e/e2e-model", "small_model": "e2e/e2e-model",
    "permission": {"edit": "allow", "bash": "allow", "read": "allow"},
    "autoupdate": False, "share": "disabled",
})
json.dump(cfg, open(path, "w"), indent=2)
PY
cd "$d/ws" && env -u REWIND_HOME HOME="$d/home" PATH="$path" XDG_DATA_HOME="$d/home/.local/share" \
  XDG_CONFIG_HOME="$d/home/.config" XDG_STATE_HOME="$d/home/.local/state" \
  XDG_CACHE_HOME="$ROOT/target/agents/opencode-$AGENT_VER/cache" OPENCODE_DISABLE_AUTOUPDATE=1 \
  OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 \
  timeout 180 "$AGENT_BIN" run $args --format json >"$d/$out" 2>"$d/err.txt"
AGENT
  isolated "$d/agent.sh"
}

run_opencode() {
  npm_agent opencode opencode-ai opencode || return 0
  local ver=$AGENT_VER d="$TMP/opencode"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init opencode >/dev/null) \
    && ok "rewind init opencode" || { bad "rewind init opencode"; return 0; }
  shim_hooks "$d/ws/.opencode/plugins/rewind.js" "$d/ws/opencode.json"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/before"
  : > "$TMP/payloads.jsonl"
  opencode_turn "$d" "$PATH" out.json "create notes.txt, edit it, read it, uppercase with sed"
  local rc=$?
  check "opencode run exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out.json" "$d/err.txt"
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" RESULTS="$d" \
    REWIND_HOME="$d/rewind-home" python3 "$HERE/check_opencode.py"
  tally "$d"
  # A second turn of the same session with a `gpt-` model id, for which OpenCode offers
  # apply_patch (and not write/edit).
  cp "$d/ws/notes.txt" "$d/notes-before-patch"
  rm -f "$d/port"
  opencode_turn "$d" "$PATH" out-patch.json --session "$(cat "$d/sid")" -m e2e/gpt-e2e \
    "patch notes.txt"
  rc=$?
  check "opencode run --session <id> -m e2e/gpt-e2e exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out-patch.json" "$d/err.txt"
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out-patch.json" RESULTS="$d/patch" \
    REWIND_HOME="$d/rewind-home" SID="$(cat "$d/sid")" python3 "$HERE/check_opencode.py" --patch
  tally "$d/patch"
  # `/rw-undo` in that session (issue 45, item 3): the plugin's command.execute.before undoes
  # the session's last turn (the patch) and makes rewind's answer the command's prompt.
  rm -f "$d/port"
  opencode_turn "$d" "$PATH" out-undo.json --session "$(cat "$d/sid")" -m e2e/gpt-e2e --command rw-undo
  rc=$?
  check "opencode run --session <id> --command rw-undo exited 0 (rc=$rc)" test "$rc" = 0
  check "/rw-undo put notes.txt back as it was before the patch turn" \
    cmp -s "$d/ws/notes.txt" "$d/notes-before-patch"
  check "/rw-undo's prompt to the model names the session and the turn it undid" python3 - \
    "$d/requests.jsonl" "$(cat "$d/sid")" <<'PY'
import json, sys
sid = sys.argv[2]
bodies = [json.loads(l)["body"] for l in open(sys.argv[1]) if l.strip()]
said = [json.dumps(m.get("content")) for b in bodies for m in b.get("messages", [])
        if m.get("role") == "user" and "rewind undid turn" in json.dumps(m.get("content"))]
sys.exit(0 if said and f"of session {sid}" in said[-1] and '(\\"patch notes.txt\\")' in said[-1] else 1)
PY
  # What OpenCode itself recorded of the three turns (opencode.db, its snapshot trees),
  # imported into a fresh home and undone, against the workspace before the first turn.
  echo "   rewind import opencode of the run, against the workspace before it"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  import_check opencode "$d" WS="$d/ws" END="$d/end" BEFORE="$d/before" AGENT_HOME="$d/home"
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent opencode "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out opencode "$ver")"
    [ -n "$LATEST" ] || python3 "$HERE/keep_opencode_data.py" "$d/home/.local/share/opencode" "$d/ws" "$ver" \
      "$(cat "$d/sid")" "$ROOT/fixtures/opencode/real-$ver"
  fi
  run_opencode_without_rewind
}

# Issue 25, gap 1: the plugin of an `init opencode` whose binary is gone (and none on PATH)
# lets every tool call proceed and says once, in OpenCode's log, that rewind is unavailable.
run_opencode_without_rewind() {
  local d="$TMP/opencode-gone" path
  echo "== opencode $AGENT_VER, rewind removed after init (gap 1)"
  path=$(agent_path_without_rewind) || { skip "opencode without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init opencode >/dev/null) \
    || { bad "rewind init opencode (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  opencode_turn "$d" "$path" out.json "create notes.txt, edit it, read it, uppercase with sed"
  local rc=$?
  check "opencode run exited 0 without rewind (rc=$rc)" test "$rc" = 0
  python3 - "$d" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
events = [json.loads(l) for l in open(f"{d}/out.json") if l.startswith("{")] \
    if os.path.exists(f"{d}/out.json") else []
tools = [e["part"]["state"]["status"] for e in events if e.get("type") == "tool_use"]
texts = [e["part"]["text"] for e in events if e.get("type") == "text"]
notes = open(f"{d}/ws/notes.txt").read() if os.path.exists(f"{d}/ws/notes.txt") else None
ok = tools == ["completed"] * 6 and texts[-1:] == ["done"] and notes == "ONE\nTWO\nuser line\n"
print(f"  {'PASS' if ok else 'FAIL'}  without rewind the plugin lets all 6 tool calls complete")
logs = "".join(open(p, errors="replace").read()
               for p in glob.glob(f"{d}/home/.local/share/opencode/log/*"))
said = logs.count("rewind is unavailable")
print(f"  {'PASS' if said == 1 else 'FAIL'}  the plugin says once in OpenCode's log that rewind "
      f"is unavailable ({said}x)")
passed = int(ok) + int(said == 1)
open(f"{d}/pass", "w").write(str(passed))
open(f"{d}/fail", "w").write(str(2 - passed))
PY
  tally "$d"
}

# --- Codex ----------------------------------------------------------------------------
# Codex reads a custom model provider from config.toml in a scratch CODEX_HOME, pointed at
# fake_openai_responses.py. Its project hooks (.codex/hooks.json, written by `rewind init
# codex`) load only in a trusted project, and each hook only once trusted: the
# run follows the steps `rewind init codex` prints: a first `codex exec --trust` (no hook may
# run), then the hooks trusted as Codex's /hooks records it (codex_trust.py), then the scenario.
run_codex() {
  local ver cx ws home chome log
  npm_agent codex @openai/codex codex || return 0
  ver=$AGENT_VER cx=$AGENT_BIN

  ws="$TMP/cx/ws"; home="$TMP/cx/home"; chome="$TMP/cx/codex-home"; log="$TMP/cx/requests.jsonl"
  mkdir -p "$ws" "$home" "$chome" "$TMP/cx/rewind-home"
  export REWIND_HOME="$TMP/cx/rewind-home"
  (cd "$ws" && git init -q && git config user.email e2e@example.invalid && git config user.name e2e \
     && echo "# e2e" > README.md && echo old > old.txt && echo "move me" > move-me.txt \
     && git add README.md old.txt move-me.txt \
     && git commit -qm init)
  (cd "$ws" && PATH="$TMP/bin:$PATH" rewind init codex >"$TMP/cx/init.txt") \
    && ok "rewind init codex" || { bad "rewind init codex"; return 0; }
  shim_hooks "$ws/.codex/hooks.json"
  local before; before=$(cat "$TMP/payloads.jsonl" 2>/dev/null | wc -l)

  PROBE="rewind e2e: probe"
  cat > "$TMP/cx/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_openai_responses.py" "$ws" "$log" "$TMP/cx/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$TMP/cx/port" ] && break; sleep 0.1; done
[ -s "$TMP/cx/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cat > "$chome/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "e2e"
[model_providers.e2e]
name = "e2e"
base_url = "http://127.0.0.1:\$(cat "$TMP/cx/port")/v1"
wire_api = "responses"
TOML
cx() { env HOME="$home" CODEX_HOME="$chome" PATH="$TMP/bin:\$PATH" timeout 180 "$cx" "\$@"; }
cd "$ws" || exit 91
# The steps \`rewind init codex\` prints. 1: trust the project (\`--trust\`): no hook runs yet.
n0=\$(cat "$TMP/payloads.jsonl" 2>/dev/null | wc -l)
cx exec --json --trust --dangerously-bypass-approvals-and-sandbox "$PROBE" </dev/null \
  >"$TMP/cx/probe.jsonl" 2>"$TMP/cx/probe-err.txt" || echo "probe run failed" >&2
echo \$(( \$(cat "$TMP/payloads.jsonl" 2>/dev/null | wc -l) - n0 )) > "$TMP/cx/probe-hooks"
# 2: trust the hooks, as /hooks records it.
env HOME="$home" CODEX_HOME="$chome" python3 "$HERE/codex_trust.py" "$cx" "$ws" > "$TMP/cx/trust.json"
cat "$TMP/payloads.jsonl" 2>/dev/null | wc -l > "$TMP/cx/payloads-before"
cx exec --json --dangerously-bypass-approvals-and-sandbox \
    "create notes.txt, edit it, read it, uppercase with sed, patch through the shell" \
    </dev/null >"$TMP/cx/out.jsonl" 2>"$TMP/cx/err.txt"
AGENT
  python3 "$HERE/check_import.py" save "$ws" "$TMP/cx/before"
  local t0=$SECONDS
  if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
    echo "   agent and model server in a loopback-only network namespace"
    unshare -n sh -c 'ip link set lo up && exec bash "$1"' sh "$TMP/cx/agent.sh"
  else
    echo "   unshare -n unavailable: agent runs in the host network (pointed at 127.0.0.1)"
    bash "$TMP/cx/agent.sh"
  fi
  local rc=$?
  echo "   the Codex runs took $((SECONDS - t0)) s"
  check "codex exec exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || { head -c 2000 "$TMP/cx/out.jsonl" "$TMP/cx/err.txt"; }
  before=$(cat "$TMP/cx/payloads-before" 2>/dev/null || echo "$before")
  tail -n +"$((before + 1))" "$TMP/payloads.jsonl" > "$TMP/cx/payloads.jsonl" 2>/dev/null

  python3 "$HERE/check_import.py" save "$ws" "$TMP/cx/end"
  export WS="$ws" RW LOG="$log" TMPD="$TMP" CODEX="$cx" CODEX_VERSION="$ver" CHOME="$chome"
  python3 "$HERE/check_codex.py"
  local crc=$?
  PASS=$((PASS + $(cat "$TMP/cx/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$TMP/cx/fail" 2>/dev/null || echo 1)))
  # What Codex itself recorded (its session rollouts), imported into a fresh home and undone,
  # against the workspace before the run (Codex has no restore of its own).
  echo "   rewind import codex of the run, against the workspace before it"
  import_check codex "$TMP/cx" WS="$ws" END="$TMP/cx/end" BEFORE="$TMP/cx/before" \
    AGENT_HOME="$chome" || { [ "$crc" != 0 ] || crc=1; }
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent codex "$TMP/cx/payloads.jsonl" "$ws" "$home" \
      "$ver" "$(fixture_out codex "$ver")"
  fi
  return $crc
}


# --- pi -------------------------------------------------------------------------------
# pi_turn <dir> <agent PATH> <out> <pi args…>: pi -p in <dir>/ws against fake_openai_chat.py
# (FAKE_SCENARIO=pi) as a custom OpenAI-compatible provider (~/.pi/agent/models.json under
# the scratch HOME), REWIND_HOME unset (the extension carries the home), no network at start
# (PI_OFFLINE).
pi_turn() {
  local d=$1 path=$2 out=$3
  shift 3
  local args
  args=$(printf '%q ' "$@")
  mkdir -p "$d/home/.pi/agent"
  cat > "$d/agent.sh" <<AGENT
set -u
FAKE_SCENARIO=pi python3 "$HERE/fake_openai_chat.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cat > "$d/home/.pi/agent/models.json" <<JSON
{"providers": {"e2e": {"baseUrl": "http://127.0.0.1:\$(cat "$d/port")/v1", "api": "openai-completions",
  "apiKey": "e2e-dummy", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "e2e-model", "reasoning": false}]}}}
JSON
cd "$d/ws" && env -u REWIND_HOME HOME="$d/home" PATH="$path" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 \
  PI_TELEMETRY=0 timeout 180 "$AGENT_BIN" -p --provider e2e --model e2e-model $args \
  >"$d/$out" 2>"$d/$out.err"
AGENT
  isolated "$d/agent.sh"
}

run_pi() {
  npm_agent pi @mariozechner/pi-coding-agent pi || return 0
  local ver=$AGENT_VER d="$TMP/pi" sid PROMPT_PI="create notes.txt, edit it, read it, uppercase with sed"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && echo "AGENTS-E2E-ROOT: keep answers short" > AGENTS.md && git add AGENTS.md \
     && git commit -qm agents)
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init pi >/dev/null) \
    && ok "rewind init pi" || { bad "rewind init pi"; return 0; }
  shim_hooks "$d/ws/.pi/extensions/rewind/index.ts"
  : > "$TMP/payloads.jsonl"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/before"
  pi_turn "$d" "$PATH" out.txt "$PROMPT_PI"
  local rc=$?
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  check "pi -p exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out.txt" "$d/out.txt.err"
  local checks=(env WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.txt"
    SESSIONS="$d/home/.pi/agent/sessions" REWIND_HOME="$d/rewind-home")
  "${checks[@]}" RESULTS="$d" python3 "$HERE/check_pi.py"
  tally "$d"
  sid=$(cat "$d/sid" 2>/dev/null)
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent pi "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out pi "$ver")"
  fi
  # /rw-undo in that session (the extension's command, no model call): README.md without the
  # user's later line, so only the user's mid-turn line on notes.txt stands in the way.
  printf '# e2e edited\n' > "$d/ws/README.md"
  local nreq; nreq=$(wc -l < "$d/requests.jsonl")
  rm -f "$d/port"
  pi_turn "$d" "$PATH" undo.txt --session "$sid" "/rw-undo"
  check "pi -p --session <id> /rw-undo exited 0" test $? = 0
  check "/rw-undo refuses over the user's mid-turn line, names the session and the turn" \
    grep -q "did not undo turn 1 (\"$PROMPT_PI\") of session $sid: nothing was written" "$d/undo.txt.err"
  check "the refused /rw-undo wrote nothing" \
    sh -c "[ \"\$(cat '$d/ws/README.md')\" = '# e2e edited' ] && [ -e '$d/ws/notes.txt' ]"
  rm -f "$d/port"
  pi_turn "$d" "$PATH" undo-force.txt --session "$sid" "/rw-undo --force"
  check "pi -p --session <id> '/rw-undo --force' exited 0" test $? = 0
  check "/rw-undo --force names the session and the turn it undid" \
    grep -q "rewind undid turn 1 (\"$PROMPT_PI\") of session $sid" "$d/undo-force.txt.err"
  check "/rw-undo --force: README.md byte-exact the committed text, notes.txt gone" \
    sh -c "[ \"\$(cat '$d/ws/README.md')\" = '# e2e' ] && [ ! -e '$d/ws/notes.txt' ]"
  check "/rw-undo's answers are kept in pi's session file" python3 - "$d/home/.pi/agent/sessions" <<'PY'
import glob, json, sys
entries = [json.loads(l) for f in glob.glob(f"{sys.argv[1]}/**/*.jsonl", recursive=True) for l in open(f)]
said = [e["data"]["text"] for e in entries if e.get("customType") == "rewind-undo"]
sys.exit(0 if len(said) == 2 and said[1].startswith("rewind undid turn 1") else 1)
PY
  check "/rw-undo called no model" test "$(wc -l < "$d/requests.jsonl")" = "$nreq"
  # What pi itself recorded (its session file), imported into a fresh home and undone,
  # against the workspace before the run (pi has no restore of its own).
  echo "   rewind import pi of the run, against the workspace before it"
  import_check pi "$d" WS="$d/ws" END="$d/end" BEFORE="$d/before" AGENT_HOME="$d/home"
  run_pi_without_rewind
}

# The extension of an `init pi` whose binary is gone (and none on PATH) lets every tool call
# proceed, and says once on stderr that rewind is unavailable.
run_pi_without_rewind() {
  local d="$TMP/pi-gone" path
  echo "== pi $AGENT_VER, rewind removed after init"
  path=$(agent_path_without_rewind) || { skip "pi without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init pi >/dev/null) \
    || { bad "rewind init pi (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  pi_turn "$d" "$path" out.txt "create notes.txt, edit it, read it, uppercase with sed"
  check "pi -p exited 0 without rewind (rc=$?)" test $? = 0
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.txt" RESULTS="$d" \
    SESSIONS="$d/home/.pi/agent/sessions" REWIND_HOME="$d/rewind-home" \
    python3 "$HERE/check_pi.py" --without-rewind
  tally "$d"
  check "the extension says once that rewind is unavailable" \
    test "$(grep -c 'rewind is unavailable' "$d/out.txt.err")" = 1
}


# --- Cline CLI ------------------------------------------------------------------------
# cline_turn <dir> <agent PATH>: `cline --json` in <dir>/ws against fake_openai_chat.py as an
# `openai-compatible` provider (set by `cline auth`, under the scratch HOME's ~/.cline),
# REWIND_HOME unset (the hook scripts carry the home).
cline_turn() {
  local d=$1 path=$2
  mkdir -p "$d/home"
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_openai_chat.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
# Cline CLI 3.x leaves a "hub daemon" running for the directory after every run: stop it too.
trap 'kill \$srv 2>/dev/null; pkill -f -- "cline-hub-daemon --cwd $d/" 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cl() { env -u REWIND_HOME HOME="$d/home" PATH="$path" timeout 180 "$AGENT_BIN" "\$@"; }
cl auth -p openai-compatible -k e2e-dummy -m e2e-model -b "http://127.0.0.1:\$(cat "$d/port")/v1" \
  >"$d/auth.txt" 2>&1 || { echo "cline auth failed" >&2; exit 91; }
cd "$d/ws" && cl --json "create notes.txt, edit it, read it, uppercase with sed" \
  >"$d/out.json" 2>"$d/err.txt"
AGENT
  isolated "$d/agent.sh"
}

run_cline() {
  npm_agent cline cline cline || return 0
  local ver=$AGENT_VER d="$TMP/cline"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && echo "AGENTS-E2E-ROOT: keep answers short" > AGENTS.md && git add AGENTS.md \
     && git commit -qm agents)
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init cline >/dev/null) \
    && ok "rewind init cline" || { bad "rewind init cline"; return 0; }
  shim_hooks "$d/ws"/.clinerules/hooks/*
  python3 "$HERE/check_import.py" save "$d/ws" "$d/before"
  : > "$TMP/payloads.jsonl"
  cline_turn "$d" "$PATH"
  local rc=$?
  check "cline --json exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out.json" "$d/err.txt"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" PAYLOADS="$TMP/payloads.jsonl" \
    RESULTS="$d" REWIND_HOME="$d/rewind-home" python3 "$HERE/check_cline.py"
  tally "$d"
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent cline "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out cline "$ver")"
  fi
  cline_import "$d" "$ver"
  run_cline_without_rewind
}

# What Cline itself recorded: the session (manifest, messages) under its data directory and
# the checkpoint it took at the run's start in the workspace's own repository
# (refs/cline/checkpoints/<session>/1). Cline's own restore of that checkpoint, on the
# workspace as the agent left it: only its TUI offers one (`/undo`, "Restore chat and
# workspace"), so `cline --id <session>` is driven in tmux (cline_restore); without tmux, its
# git commands as @cline/core 3.0.65 runs them (`git reset --hard`, `git clean -fd` when the
# checkpoint has an untracked commit, `git stash apply <ref>`). What it wrote must be the
# workspace before the run. Then `rewind import cline` of the records as the agent left them
# (a copy: the restore starts a session of its own) into a fresh home, and undo of the
# imported run, against what the restore wrote.
cline_import() {
  local d=$1 ver=$2 sessions="$1/home/.cline/data/sessions" sid ref how
  echo "   rewind import cline of the run, against Cline's restore of its checkpoint"
  sid=$(ls "$sessions" 2>/dev/null | head -1)
  ref=$(git -C "$d/ws" rev-parse -q --verify "refs/cline/checkpoints/$sid/1")
  check "Cline kept the session and its run-1 checkpoint in the workspace's repository" \
    test -n "$sid" -a -n "$ref"
  [ -n "$ref" ] || return 0
  python3 "$HERE/check_import.py" put "$d/ws" "$d/end"
  mkdir -p "$d/recorded/.cline" && cp -a "$d/home/.cline/data" "$d/recorded/.cline/"
  if need_tmux; then
    how="its TUI's /undo, restore chat and workspace"
    cline_restore "$d" "$sid"
  else
    how="tmux not found: its git commands"
    (cd "$d/ws" && git reset -q --hard && { ! git cat-file -e "$ref^3^{commit}" 2>/dev/null \
       || git clean -fdq; } && git stash apply -q "$ref") >/dev/null
  fi
  check "Cline's restore of the checkpoint ($how)" test $? = 0
  python3 "$HERE/check_import.py" save "$d/ws" "$d/own"
  check "Cline's restore gave back the workspace before the run" diff -r "$d/before" "$d/own"
  import_check cline "$d" WS="$d/ws" END="$d/end" BEFORE="$d/own" AGENT_HOME="$d/recorded"
  if [ -n "${CAPTURE:-}" ] && [ -z "$LATEST" ]; then
    python3 "$HERE/keep_cline_data.py" "$d/recorded/.cline/data/sessions" "$d/ws" "$d/end" \
      "$d/home" "$sid" "$ROOT/fixtures/cline/real-$ver"
  fi
}

# cline_restore <dir> <session>: in tmux, `cline --id <session>` (its TUI, no model call), `/undo`,
# the run's checkpoint, "Restore chat and workspace"; done when the TUI is back at its start
# page ("What can I do for you?"), the conversation rewound. A notice it shows over the screen
# (a subscription offer) is closed with Escape.
cline_restore() {
  local d=$1 sid=$2 tm="tmux -L rwcline-$$"
  cat > "$d/restore.sh" <<AGENT
set -u
trap '$tm kill-server 2>/dev/null; pkill -f -- "cline-hub-daemon --cwd $d/" 2>/dev/null' EXIT
$tm new-session -d -s c -x 200 -y 50 "cd $d/ws && env -u REWIND_HOME -u CI -u GITHUB_ACTIONS HOME=$d/home $AGENT_BIN --id $sid" \; set-option -t c remain-on-exit on
screen() { $tm capture-pane -p -t c > "$d/restore-screen.txt"; grep -q "\$1" "$d/restore-screen.txt"; }
until_screen() {
  for _ in \$(seq 60); do
    screen "Press Enter to open, any other key to close" && $tm send-keys -t c Escape
    screen "\$1" && return 0
    sleep 0.5
  done
  echo "Cline's TUI never showed: \$1" >&2; cat "$d/restore-screen.txt" >&2; exit 94
}
until_screen "Ask anything"
$tm send-keys -t c -l "/undo"; sleep 1; $tm send-keys -t c Enter
until_screen "Restore to Checkpoint"
$tm send-keys -t c Enter
until_screen "Restore chat and workspace"
$tm send-keys -t c Down; sleep 0.5; $tm send-keys -t c Enter
until_screen "What can I do for you?"
AGENT
  isolated "$d/restore.sh"
}

# The hook scripts of an `init cline` whose binary is gone (and none on PATH) answer
# {"cancel": false}: every tool call proceeds.
run_cline_without_rewind() {
  local d="$TMP/cline-gone" path
  echo "== cline $AGENT_VER, rewind removed after init"
  path=$(agent_path_without_rewind) || { skip "cline without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init cline >/dev/null) \
    || { bad "rewind init cline (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  cline_turn "$d" "$path"
  check "cline --json exited 0 without rewind (rc=$?)" test $? = 0
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" RESULTS="$d" \
    REWIND_HOME="$d/rewind-home" python3 "$HERE/check_cline.py" --without-rewind
  tally "$d"
}


# --- Copilot CLI ----------------------------------------------------------------------
# copilot_turn <dir> <agent PATH>: `copilot -p` in <dir>/ws against fake_openai_chat.py as a
# BYOK provider (COPILOT_PROVIDER_BASE_URL) in offline mode (no GitHub sign-in, no network),
# COPILOT_ALLOW_ALL=true (trusts the folder, so its .github/hooks load in prompt mode),
# REWIND_HOME unset (the hooks carry the home).
copilot_turn() {
  local d=$1 path=$2
  mkdir -p "$d/home"
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_openai_chat.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cd "$d/ws" && env -u REWIND_HOME HOME="$d/home" PATH="$path" COPILOT_HOME="$d/home/.copilot" \
  COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:\$(cat "$d/port")/v1" \
  COPILOT_PROVIDER_API_KEY=e2e-dummy COPILOT_MODEL=e2e-model COPILOT_ALLOW_ALL=true \
  COPILOT_AUTO_UPDATE=false timeout 180 "$AGENT_BIN" --allow-all-tools \
  -p "create notes.txt, edit it, read it, uppercase with sed" >"$d/out.txt" 2>"$d/err.txt"
AGENT
  isolated "$d/agent.sh"
}

run_copilot() {
  npm_agent copilot @github/copilot copilot || return 0
  local ver=$AGENT_VER d="$TMP/copilot"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init copilot >/dev/null) \
    && ok "rewind init copilot" || { bad "rewind init copilot"; return 0; }
  shim_hooks "$d/ws/.github/hooks/rewind.json"
  : > "$TMP/payloads.jsonl"
  copilot_turn "$d" "$PATH"
  local rc=$?
  check "copilot -p exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out.txt" "$d/err.txt"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.txt" PAYLOADS="$TMP/payloads.jsonl" \
    RESULTS="$d" REWIND_HOME="$d/rewind-home" python3 "$HERE/check_copilot.py"
  tally "$d"
  # What Copilot CLI itself recorded (session events, its rewind snapshots), imported into a
  # fresh home and undone, against Copilot's own restore of the turn.
  import_check copilot "$d" WS="$d/ws" END="$d/end" AGENT_HOME="$d/home" COPILOT="$AGENT_BIN"
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent copilot "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out copilot "$ver")"
  fi
  run_copilot_without_rewind
}

# The hooks of an `init copilot` whose binary is gone (and none on PATH) exit 0 with nothing
# to say: every tool call proceeds.
run_copilot_without_rewind() {
  local d="$TMP/copilot-gone" path
  echo "== copilot $AGENT_VER, rewind removed after init"
  path=$(agent_path_without_rewind) || { skip "copilot without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init copilot >/dev/null) \
    || { bad "rewind init copilot (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  copilot_turn "$d" "$path"
  check "copilot -p exited 0 without rewind (rc=$?)" test $? = 0
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.txt" RESULTS="$d" \
    REWIND_HOME="$d/rewind-home" python3 "$HERE/check_copilot.py" --without-rewind
  tally "$d"
}


# --- Qwen Code ------------------------------------------------------------------------
# qwen_turn <dir> <agent PATH>: `qwen -p --yolo` in <dir>/ws against fake_openai_chat.py as an
# OpenAI-compatible provider (`--auth-type openai`, OPENAI_BASE_URL), no usage statistics or
# update checks (~/.qwen/settings.json under the scratch HOME), REWIND_HOME unset (the hooks
# carry the home).
# /rw-undo typed in the session the scripted turn ran in (`qwen --resume <id> -p`): rewind's
# UserPromptSubmit hook carries it out and answers `block`, so no model request is made. The
# checks before left the turn redone with a user line added to README.md after it: a plain
# /rw-undo refuses and writes nothing, /rw-undo --force puts both files back as before the
# turn (the user's line snapshotted first).
run_qwen_rw_undo() {
  local d=$1 sid n w start
  echo "   /rw-undo in the same session"
  sid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["session_id"])' \
    "$d/out.json" 2>/dev/null)
  [ -n "$sid" ] || { bad "qwen /rw-undo: no session id in out.json"; return 0; }
  start=$(cat "$d/ws/README.md" "$d/ws/notes.txt" | sha256sum)
  n=$(wc -l <"$d/requests.jsonl")
  windows() { (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" log --session "$sid" | grep '^  window'); }
  w=$(windows | wc -l)
  qwen_turn "$d" "$PATH" out-undo.json --resume "$sid" -p "/rw-undo"
  check "qwen --resume <id> -p /rw-undo exited 0" test $? = 0
  check "/rw-undo refused over the user's line and wrote nothing (no window, same bytes)" \
    test "$(cat "$d/ws/README.md" "$d/ws/notes.txt" | sha256sum) $(windows | wc -l)" = "$start $w"
  qwen_turn "$d" "$PATH" out-undo.json --resume "$sid" -p "/rw-undo --force"
  check "qwen --resume <id> -p '/rw-undo --force' exited 0" test $? = 0
  check "/rw-undo --force: notes.txt (created in the turn) is gone" test ! -e "$d/ws/notes.txt"
  check "/rw-undo --force: README.md is the committed text" \
    test "$(cat "$d/ws/README.md")" = "# e2e"
  check "/rw-undo --force is one undo window of the session's turn" \
    sh -c '[ "$1" = "$(($2 + 1))" ] && echo "$3" | grep -q "\[undo\] .* \"undo of window 1\""' sh \
    "$(windows | wc -l)" "$w" "$(windows | head -1)"
  check "/rw-undo made no model request (the hook answered block)" \
    test "$(wc -l <"$d/requests.jsonl")" = "$n"
  check "/rw-undo logged no hook failure" test ! -s "$d/rewind-home/logs/hook.log"
}

# What Qwen Code itself records: each session's chat and its file-history backups, kept only in
# its interactive UI (`qwen -p` keeps no backups). So, as for Gemini CLI: the scenario in the
# real `qwen` UI in tmux (no rewind hooks; the shell call approved, the others pass its Auto
# mode), then `rewind import qwen` of those records into a fresh home and undo of the imported
# turn, against the workspace before the run (Qwen Code's own restore is `/restore` of a tool
# call in its UI). Installs tmux as the Gemini check does, else SKIPs.
run_qwen_history() {
  local d="$TMP/qwen-history"
  echo "== qwen $AGENT_VER file history (interactive UI in tmux), rewind import qwen"
  need_tmux || { skip "qwen import: tmux not found (apt-get install tmux)"; return 0; }
  mkdir -p "$d/home/.qwen"
  new_workspace "$d/ws"
  cat > "$d/home/.qwen/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "checkpointing": {"enabled": true}}}
JSON
  python3 "$HERE/check_import.py" save "$d/ws" "$d/before"
  tui_turn "$d" fake_openai_chat.py "allow once" "◆.*done" \
    "OPENAI_API_KEY=e2e-dummy OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_MODEL=e2e-model $AGENT_BIN --auth-type openai"
  local rc=$?
  check "qwen in tmux: the shell call approved, the turn ends with done (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || { tail -30 "$d/screen.txt"; return 0; }
  check "Qwen Code kept the session's chat and a file-history backup" \
    sh -c 'ls "$1"/projects/*/chats/*.jsonl "$1"/file-history/*/*@v1 >/dev/null' sh "$d/home/.qwen"
  python3 "$HERE/check_import.py" save "$d/ws" "$d/end"
  import_check qwen "$d" WS="$d/ws" END="$d/end" BEFORE="$d/before" AGENT_HOME="$d/home"
}

# qwen_turn <dir> <PATH> [<out file> <qwen args>…]: by default the scripted prompt, into out.json.
qwen_turn() {
  local d=$1 path=$2 out=${3:-out.json} args
  if [ $# -gt 3 ]; then
    shift 3
    args=$(printf '%q ' "$@")
  else
    args='-p "create notes.txt, edit it, read it, uppercase with sed"'
  fi
  mkdir -p "$d/home/.qwen"
  cat > "$d/home/.qwen/settings.json" <<'JSON'
{"privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}
JSON
  cat > "$d/agent.sh" <<AGENT
set -u
python3 "$HERE/fake_openai_chat.py" "$d/ws" "$d/requests.jsonl" "$d/port" & srv=\$!
trap 'kill \$srv 2>/dev/null' EXIT
for _ in \$(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
[ -s "$d/port" ] || { echo "fake model server did not start" >&2; exit 90; }
cd "$d/ws" && env -u REWIND_HOME HOME="$d/home" PATH="$path" OPENAI_API_KEY=e2e-dummy \
  OPENAI_BASE_URL="http://127.0.0.1:\$(cat "$d/port")/v1" OPENAI_MODEL=e2e-model \
  QWEN_CODE_SUPPRESS_YOLO_WARNING=1 timeout 180 "$AGENT_BIN" --auth-type openai --yolo \
  --output-format json $args >"$d/$out" 2>"$d/err.txt"
AGENT
  isolated "$d/agent.sh"
}

run_qwen() {
  npm_agent qwen @qwen-code/qwen-code qwen || return 0
  local ver=$AGENT_VER d="$TMP/qwen"
  mkdir -p "$d/rewind-home"
  new_workspace "$d/ws"
  (cd "$d/ws" && echo "AGENTS-E2E-ROOT: keep answers short" > AGENTS.md && git add AGENTS.md \
     && git commit -qm agents)
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$RW" init qwen >/dev/null) \
    && ok "rewind init qwen" || { bad "rewind init qwen"; return 0; }
  shim_hooks "$d/ws/.qwen/settings.json"
  : > "$TMP/payloads.jsonl"
  qwen_turn "$d" "$PATH"
  local rc=$?
  check "qwen -p exited 0 (rc=$rc)" test "$rc" = 0
  [ "$rc" = 0 ] || tail -c 2000 "$d/out.json" "$d/err.txt"
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" PAYLOADS="$TMP/payloads.jsonl" \
    RESULTS="$d" REWIND_HOME="$d/rewind-home" python3 "$HERE/check_qwen.py"
  tally "$d"
  run_qwen_rw_undo "$d"
  run_qwen_history
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" --agent qwen "$TMP/payloads.jsonl" "$d/ws" \
      "$d/home" "$ver" "$(fixture_out qwen "$ver")"
  fi
  run_qwen_without_rewind
}

# The hooks of an `init qwen` whose binary is gone (and none on PATH) exit 0 with nothing to
# say: every tool call proceeds.
run_qwen_without_rewind() {
  local d="$TMP/qwen-gone" path
  echo "== qwen $AGENT_VER, rewind removed after init"
  path=$(agent_path_without_rewind) || { skip "qwen without rewind: $path"; return 0; }
  mkdir -p "$d/bin" "$d/rewind-home"
  new_workspace "$d/ws"
  cp "$RW" "$d/bin/rewind"
  (cd "$d/ws" && REWIND_HOME="$d/rewind-home" "$d/bin/rewind" init qwen >/dev/null) \
    || { bad "rewind init qwen (from a copy of the binary)"; return 0; }
  rm "$d/bin/rewind"
  qwen_turn "$d" "$path"
  check "qwen -p exited 0 without rewind (rc=$?)" test $? = 0
  WS="$d/ws" RW="$RW" LOG="$d/requests.jsonl" OUT="$d/out.json" RESULTS="$d" \
    REWIND_HOME="$d/rewind-home" python3 "$HERE/check_qwen.py" --without-rewind
  tally "$d"
}


want claude-code && run_claude_code
want gemini-cli && run_gemini
want opencode && run_opencode
want codex && run_codex
want pi && run_pi
want cline && run_cline
want copilot && run_copilot
want qwen && run_qwen
if [ -n "$LATEST" ]; then
  echo
  echo "== hook payloads of the newest releases against the recorded fixtures"
  for d in "$TMP"/latest/*/; do
    [ -d "$d" ] || continue
    a=$(basename "$d")
    python3 "$HERE/compare_fixtures.py" "$a" "$d" "$ROOT/fixtures/hooks/$a"
  done
fi
echo
echo "$PASS passed, $FAIL failed$([ "$SKIPPED" = 0 ] || echo ", $SKIPPED skipped (agents or the browser test)")"
[ "$FAIL" = 0 ]
