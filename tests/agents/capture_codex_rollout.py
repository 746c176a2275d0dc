#!/usr/bin/env python3
"""Capture a real Codex session rollout for `rewind import codex`'s tests.

Usage: capture_codex_rollout.py <codex binary> <out dir>   (e.g. fixtures/codex/real-0.169.0)

Runs the real Codex headless (`codex exec`, then `codex exec resume <thread id>`) against a
scripted fake OpenAI Responses server on 127.0.0.1 (this script serves it itself), in a scratch
git workspace with a scratch CODEX_HOME, no rewind hooks (an import is of sessions rewind did
not record live). The turns (see TURNS below):

  turn 1: apply_patch add notes.txt; apply_patch update README.md (committed); apply_patch
          update notes.txt (its own create); exec_command with a heredoc apply_patch
          (README.md again, add extra.txt)
  (the user appends `user line` to the committed old.txt between the turns)
  turn 2: apply_patch update keep.txt (committed, first touched here); apply_patch update
          old.txt (after the user's line); apply_patch delete gone.txt (committed);
          exec_command `sed -i` of shell.txt

Keeps, under <out dir>: `sessions/` (the rollout files, the workspace path replaced by
/REWIND_FIXTURE_WS), `dot-git/` (the workspace's .git: HEAD, refs and objects, so a test can
put it back as `.git`), `workspace/` (the files at the end) and a README that lists it.
`KEEP=1` keeps the scratch dir."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_server import Handler, _Server  # noqa: E402

PLACEHOLDER = "/REWIND_FIXTURE_WS"
PROMPT1 = "rewind import fixture: turn one"
PROMPT2 = "rewind import fixture: turn two"
HEREDOC = """apply_patch <<'EOF'
*** Begin Patch
*** Update File: README.md
@@
-# e2e edited
+# e2e patched
*** Add File: extra.txt
+extra
*** End Patch
EOF"""
TURNS = {
    PROMPT1: [
        ("apply_patch", "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Update File: README.md\n@@\n-# e2e\n+# e2e edited\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n"),
        ("exec_command", {"cmd": HEREDOC}),
    ],
    PROMPT2: [
        ("apply_patch", "*** Begin Patch\n*** Update File: keep.txt\n@@\n-keep\n+kept\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Update File: old.txt\n@@\n-old\n+new\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n"),
        ("exec_command", {"cmd": "sed -i 's/shell/SHELL/' shell.txt"}),
    ],
}
COMMITTED = {"README.md": "# e2e\n", "old.txt": "old\n", "gone.txt": "gone\n", "keep.txt": "keep\n",
             "shell.txt": "shell\n"}


def text_of(item):
    c = item.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def next_item(body):
    """The next scripted item: the current turn is the last user message naming a prompt;
    its step is the number of tool calls after that message."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    turn, start = None, 0
    for i, it in enumerate(items):
        if isinstance(it, dict) and it.get("role") == "user":
            for p in TURNS:
                if p in text_of(it):
                    turn, start = p, i
    if turn is None:
        return text_item("ok")
    n = sum(1 for it in items[start:] if isinstance(it, dict)
            and it.get("type") in ("function_call", "custom_tool_call"))
    steps = TURNS[turn]
    if n >= len(steps):
        return text_item("done")
    name, arg = steps[n]
    call_id = f"call_{'a' if turn == PROMPT1 else 'b'}{n:02d}"
    if name == "apply_patch":
        return {"type": "custom_tool_call", "id": f"ctc_{call_id}", "status": "completed",
                "call_id": call_id, "name": name, "input": arg}
    return {"type": "function_call", "id": f"fc_{call_id}", "status": "completed",
            "call_id": call_id, "name": name, "arguments": json.dumps(arg)}


def text_item(text):
    return {"type": "message", "id": "msg_fixture", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def sse(data):
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class H(Handler):
    def do_GET(self):
        self._send(404, "application/json", b'{"error": {"message": "not here"}}')

    def do_POST(self):
        body = self.json_body()
        tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
        item = next_item(body) if "apply_patch" in tools else text_item("ok")
        out = sse({"type": "response.created", "response": {"id": "resp_fixture"}})
        out += sse({"type": "response.output_item.added", "output_index": 0, "item": item})
        out += sse({"type": "response.output_item.done", "output_index": 0, "item": item})
        out += sse({"type": "response.completed", "response": {"id": "resp_fixture", "usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15}}})
        self._send(200, "text/event-stream", out)


def main():
    codex, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="rewind-codex-capture.")
    ws, home, chome = (os.path.join(tmp, d) for d in ("ws", "home", "codex-home"))
    for d in (ws, home, chome):
        os.makedirs(d)
    ws = os.path.realpath(ws)
    git = ["git", "-C", ws]
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(git + ["config", "user.email", "e2e@example.invalid"], check=True)
    subprocess.run(git + ["config", "user.name", "e2e"], check=True)
    for name, text in COMMITTED.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    subprocess.run(git + ["add", *COMMITTED], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)

    srv = _Server(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with open(os.path.join(chome, "config.toml"), "w") as f:
        f.write(f"""model = "gpt-5.5"
model_provider = "fixture"
[model_providers.fixture]
name = "fixture"
base_url = "http://127.0.0.1:{srv.server_address[1]}/v1"
wire_api = "responses"
[projects."{ws}"]
trust_level = "trusted"
""")
    env = dict(os.environ, HOME=home, CODEX_HOME=chome)

    def run(*args):
        r = subprocess.run([codex, *args], cwd=ws, env=env, capture_output=True, text=True,
                           timeout=180, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.exit(f"codex {' '.join(args)} failed ({r.returncode}): {r.stdout} {r.stderr}")
        return [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]

    events = run("exec", "--json", "--dangerously-bypass-approvals-and-sandbox", PROMPT1)
    tid = next(e["thread_id"] for e in events if e.get("type") == "thread.started")
    with open(os.path.join(ws, "old.txt"), "a") as f:
        f.write("user line\n")
    run("exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "resume", tid, PROMPT2)
    srv.shutdown()

    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    sessions = os.path.join(chome, "sessions")
    for d, _, names in os.walk(sessions):
        for n in names:
            src = os.path.join(d, n)
            dst = os.path.join(out, "sessions", os.path.relpath(src, sessions))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(src) as f:
                text = f.read()
            with open(dst, "w") as f:
                f.write(text.replace(ws, PLACEHOLDER).replace(tmp, "/REWIND_FIXTURE_TMP"))
    dot_git = os.path.join(out, "dot-git")
    shutil.copytree(os.path.join(ws, ".git"), dot_git,
                    ignore=shutil.ignore_patterns("hooks", "logs", "index", "COMMIT_EDITMSG",
                                                  "description", "info"))
    shutil.copytree(ws, os.path.join(out, "workspace"), ignore=shutil.ignore_patterns(".git"))
    version = subprocess.run([codex, "--version"], capture_output=True, text=True).stdout.strip()
    listing = sorted(os.path.relpath(os.path.join(d, n), chome)
                     for d, _, ns in os.walk(chome) for n in ns)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# {version}: one session's rollout

Captured by `tests/agents/capture_codex_rollout.py` (regenerate: run it with the pinned Codex
binary, `target/agents/codex-<version>/node_modules/.bin/codex`, and this directory): thread
`{tid}`, `codex exec` then `codex exec resume`, against the script's own fake OpenAI Responses
server (model `gpt-5.5`: the freeform `apply_patch` tool and `exec_command`), no rewind hooks.

- turn 1 (`{PROMPT1}`): apply_patch add notes.txt; apply_patch update README.md (committed);
  apply_patch update notes.txt; exec_command with a heredoc `apply_patch` (README.md again,
  add extra.txt);
- the user appends `user line` to old.txt (committed);
- turn 2 (`{PROMPT2}`): apply_patch update keep.txt (committed, first touched here);
  apply_patch update old.txt (after the user's line); apply_patch delete gone.txt
  (committed); exec_command `sed -i 's/shell/SHELL/' shell.txt`.

- `sessions/`: the rollout(s) as Codex wrote them under `$CODEX_HOME/sessions/`.
- `dot-git/`: the workspace's `.git` (HEAD, refs, objects; no hooks, logs or index).
- `workspace/`: the workspace files at the end of the run.

The scratch workspace path is replaced by `{PLACEHOLDER}` everywhere (the scratch dir above
it by `/REWIND_FIXTURE_TMP`). Nothing else changed; nothing secret (a dummy provider on
127.0.0.1).

Everything Codex wrote under its CODEX_HOME during the run:
""" + "".join(f"- `{p}`\n" for p in listing))
    print(f"captured thread {tid} into {out}")
    if os.environ.get("KEEP"):
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
