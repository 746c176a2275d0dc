#!/usr/bin/env bash
# End-to-end suite against the real agents (issue 25). Claude Code only so far.
# Usage: tests/agents/run.sh            (from anywhere; see tests/agents/README.md)
# Env:   REWIND_BIN=<path>  use this rewind binary instead of building one
#        KEEP=1             keep the scratch directory and print its path
#        CAPTURE=1          save the hook payloads as fixtures/hooks/claude-code/real-<version>/
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/tests/agents"
PASS=0 FAIL=0 SKIPPED=0
ok()   { PASS=$((PASS+1)); echo "  PASS  $*"; }
bad()  { FAIL=$((FAIL+1)); echo "  FAIL  $*"; }
skip() { SKIPPED=$((SKIPPED+1)); echo "SKIP  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

# --- rewind ---------------------------------------------------------------------------
if [ -n "${REWIND_BIN:-}" ]; then
  RW=$REWIND_BIN
else
  TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
  RW="$ROOT/target/$TRIPLE/release/rewind"
  echo "== building rewind (cargo build --release --locked)"
  (cd "$ROOT" && cargo build --release --locked -q) || { echo "FAIL  cargo build"; exit 1; }
fi
[ -x "$RW" ] || { echo "FAIL  no rewind binary at $RW"; exit 1; }

command -v python3 >/dev/null || { skip "python3 not found (the fake model server needs it)"; exit 0; }

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

version_of() { awk -v a="$1" '$1 == a { print $2 }' "$HERE/versions"; }

# --- Claude Code ----------------------------------------------------------------------
run_claude_code() {
  local ver dir cc ws home log sid
  ver=$(version_of claude-code)
  echo "== claude-code $ver"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "claude-code: node/npm not found"; return 0
  fi
  dir="$ROOT/target/agents/claude-code-$ver"
  cc="$dir/node_modules/.bin/claude"
  if [ ! -x "$cc" ]; then
    echo "   installing @anthropic-ai/claude-code@$ver into $dir"
    mkdir -p "$dir"
    if ! npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
        "@anthropic-ai/claude-code@$ver" >"$TMP/npm.log" 2>&1; then
      skip "claude-code: npm install failed (see below)"; tail -5 "$TMP/npm.log"; return 0
    fi
  fi
  if ! "$cc" --version >/dev/null 2>&1; then
    skip "claude-code $ver does not run here ($(node --version)): $("$cc" --version 2>&1 | head -2)"
    return 0
  fi

  ws="$TMP/cc/ws"; home="$TMP/cc/home"; log="$TMP/cc/requests.jsonl"
  mkdir -p "$ws" "$home" "$TMP/cc/rewind-home"
  export REWIND_HOME="$TMP/cc/rewind-home"
  (cd "$ws" && git init -q && git config user.email e2e@example.invalid && git config user.name e2e \
     && echo "# e2e" > README.md && git add README.md && git commit -qm init)
  (cd "$ws" && PATH="$TMP/bin:$PATH" rewind init claude-code >/dev/null) \
    && ok "rewind init claude-code" || { bad "rewind init claude-code"; return 0; }

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
  DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_ENABLE_TELEMETRY=0 \
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

  export WS="$ws" SID="$sid" RW LOG="$log" TMPD="$TMP"
  python3 "$HERE/check_claude_code.py"
  local crc=$?
  PASS=$((PASS + $(cat "$TMP/cc/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$TMP/cc/fail" 2>/dev/null || echo 1)))
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" "$TMP/payloads.jsonl" "$TMP" "$ver" \
      "$ROOT/fixtures/hooks/claude-code/real-$ver"
  fi
  return $crc
}

# --- Codex ----------------------------------------------------------------------------
# Codex reads a custom model provider from config.toml in a scratch CODEX_HOME, pointed at
# fake_openai_responses.py. Its project hooks (.codex/hooks.json, written by `rewind init
# codex`) load only in a trusted project, and each hook only once trusted: the
# run follows the steps `rewind init codex` prints: a first `codex exec --trust` (no hook may
# run), then the hooks trusted as Codex's /hooks records it (codex_trust.py), then the scenario.
run_codex() {
  local ver dir cx ws home chome log
  ver=$(version_of codex)
  echo "== codex $ver"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "codex: node/npm not found"; return 0
  fi
  dir="$ROOT/target/agents/codex-$ver"
  cx="$dir/node_modules/.bin/codex"
  if [ ! -x "$cx" ]; then
    echo "   installing @openai/codex@$ver into $dir"
    mkdir -p "$dir"
    if ! npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
        "@openai/codex@$ver" >"$TMP/npm-codex.log" 2>&1; then
      skip "codex: npm install failed (see below)"; tail -5 "$TMP/npm-codex.log"; return 0
    fi
  fi
  if ! "$cx" --version >/dev/null 2>&1; then
    skip "codex $ver does not run here ($(node --version)): $("$cx" --version 2>&1 | head -2)"
    return 0
  fi

  ws="$TMP/cx/ws"; home="$TMP/cx/home"; chome="$TMP/cx/codex-home"; log="$TMP/cx/requests.jsonl"
  mkdir -p "$ws" "$home" "$chome" "$TMP/cx/rewind-home"
  export REWIND_HOME="$TMP/cx/rewind-home"
  (cd "$ws" && git init -q && git config user.email e2e@example.invalid && git config user.name e2e \
     && echo "# e2e" > README.md && echo old > old.txt && echo "move me" > move-me.txt \
     && git add README.md old.txt move-me.txt \
     && git commit -qm init)
  (cd "$ws" && PATH="$TMP/bin:$PATH" rewind init codex >"$TMP/cx/init.txt") \
    && ok "rewind init codex" || { bad "rewind init codex"; return 0; }
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

  export WS="$ws" RW LOG="$log" TMPD="$TMP" CODEX="$cx" CODEX_VERSION="$ver" CHOME="$chome"
  python3 "$HERE/check_codex.py"
  local crc=$?
  PASS=$((PASS + $(cat "$TMP/cx/pass" 2>/dev/null || echo 0)))
  FAIL=$((FAIL + $(cat "$TMP/cx/fail" 2>/dev/null || echo 1)))
  if [ -n "${CAPTURE:-}" ]; then
    python3 "$HERE/capture_fixtures.py" "$TMP/cx/payloads.jsonl" "$TMP" "$ver" \
      "$ROOT/fixtures/hooks/codex/real-$ver" codex
  fi
  return $crc
}

run_claude_code
run_codex
echo
echo "$PASS passed, $FAIL failed$([ "$SKIPPED" = 0 ] || echo ", $SKIPPED agent(s) skipped")"
[ "$FAIL" = 0 ]
