#!/usr/bin/env python3
"""Capture a real pi session file for `rewind import pi`'s tests.

Usage: capture_pi_session.py <pi binary> <out dir>   (e.g. fixtures/pi/real-0.73.1)

Runs the real pi headless (`pi -p`, then `pi -p --session <id>`) against a scripted fake
OpenAI chat-completions server on 127.0.0.1 (this script serves it itself) as a custom
provider, in a scratch workspace with a scratch HOME, no rewind extension (an import is of
sessions rewind did not record live). The turns (see TURNS below; one assistant message per
line, its calls run concurrently by pi):

  turn 1: read README.md and read crlf.txt (committed; one message); write notes.txt (never
          read: its before is not recorded); read new.txt (not there: ENOENT); write new.txt;
          edit README.md with two edits; edit notes.txt (two -> TWO); an edit of notes.txt
          whose oldText is not there (pi refuses it); edit crlf.txt (LF text in a CRLF file)
  (the user appends `user line` to notes.txt between the turns)
  turn 2: read notes.txt (shows the user's line); edit notes.txt; bash `sed -i` of
          shell.txt; edit README.md after the shell command, without reading it again

Keeps, under <out dir>: `sessions/` (pi's sessions directory, the workspace path replaced by
/REWIND_FIXTURE_WS everywhere, also in the directory's name), `before/` (the workspace files
before the run), `workspace/` (at the end) and a README that lists it. `KEEP=1` keeps the
scratch dir."""
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
# What the fixture's README says pi records (from its package's source, checked on this run).
FINDINGS = """What pi records (read from its package, `dist/core/session-manager.js`, `dist/core/tools/*.js`,
`@mariozechner/pi-agent-core`'s `agent-loop.js`):

- Where: `<agent dir>/sessions/--<cwd with / as ->--/<ISO time>_<uuid>.jsonl`; the agent dir is
  `$PI_CODING_AGENT_DIR` (a leading `~` expanded), else `~/.pi/agent`.
- What: a header line (`type: session`, `version: 3`, `id`, `timestamp`, `cwd`,
  `parentSession` for a fork), then entries appended as they happen: `message` (`user`,
  `assistant` with `toolCall` parts `{id, name, arguments}` as the model sent them, `toolResult`
  `{toolCallId, toolName, content[], details, isError}`, `bashExecution` for the user's `!`),
  `model_change`, `thinking_level_change`, `compaction`, `branch_summary`, `custom` (extension
  state; rewind's `/rw-undo` leaves `rewind-undo`), `custom_message`, `label`, `session_info`.
- Tool results: a whole `read` (no `offset`/`limit`) under 2000 lines and 50 KB is the file's
  text verbatim (`buffer.toString("utf-8")`: CR and BOM kept, invalid UTF-8 replaced by U+FFFD),
  one text part, no `details`; truncated ones carry `details.truncation` and a `[Showing lines
  …]` notice; an extension may append parts (rewind's read hint is a second text part). `write`
  answers `Successfully wrote <UTF-16 length> bytes to <path>` (nothing about whether the file
  existed); `edit` `Successfully replaced <n> block(s) in <path>.` with `details.diff`, a
  numbered diff (`-<n> line`, `+<n> line`, ` <n> line`, ` <pad> ...`) of the LF-normalized
  texts. pi keeps no copy of any file, and no file mode.
- `edit` semantics: BOM stripped and restored, CRLF/LF normalized to LF and restored to the
  file's first line ending, every `oldText` matched against the original (not incrementally),
  exact first, else a fuzzy match (NFKC, trailing whitespace, smart quotes, dashes, special
  spaces) over the whole file; unique (counted fuzzily), no overlaps, some change.
- Order: one assistant message's calls run concurrently; writes and edits of one file are
  queued in call order; reads are not queued. Results are appended in call order after it.

"""
PROMPT1 = "rewind import fixture: turn one"
PROMPT2 = "rewind import fixture: turn two"
FILES = {"README.md": b"# e2e\n\nintro\n", "crlf.txt": b"a\r\nb\r\nc\r\n", "shell.txt": b"shell\n"}
TURNS = {
    PROMPT1: [
        [("read", {"path": "README.md"}), ("read", {"path": "crlf.txt"})],
        [("write", {"path": "notes.txt", "content": "one\ntwo\n"})],
        [("read", {"path": "new.txt"})],
        [("write", {"path": "new.txt", "content": "fresh\n"})],
        [("edit", {"path": "README.md", "edits": [{"oldText": "# e2e", "newText": "# e2e edited"},
                                                  {"oldText": "intro", "newText": "outro"}]})],
        [("edit", {"path": "notes.txt", "edits": [{"oldText": "two", "newText": "TWO"}]})],
        [("edit", {"path": "notes.txt", "edits": [{"oldText": "three", "newText": "3"}]})],
        [("edit", {"path": "crlf.txt", "edits": [{"oldText": "b\n", "newText": "B\nb2\n"}]})],
    ],
    PROMPT2: [
        [("read", {"path": "notes.txt"})],
        [("edit", {"path": "notes.txt", "edits": [{"oldText": "user line", "newText": "user line, seen"}]})],
        [("bash", {"command": "sed -i 's/shell/SHELL/' shell.txt"})],
        [("edit", {"path": "README.md", "edits": [{"oldText": "outro", "newText": "outro, again"}]})],
    ],
}


def next_step(body):
    """The scripted answer to a request: the next batch of the prompt's turn, else text."""
    msgs = body.get("messages") or []
    users = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
    if not users:
        return None
    prompt = json.dumps(msgs[users[-1]].get("content"))
    script = next((s for p, s in TURNS.items() if p in prompt), None)
    if script is None:
        return None
    n = sum(1 for m in msgs[users[-1]:] if m.get("role") == "assistant" and m.get("tool_calls"))
    return script[n] if n < len(script) else None


def sse(data):
    return f"data: {json.dumps(data)}\n\n".encode()


class H(Handler):
    calls = 0

    def do_GET(self):
        self._send(200, "application/json", b'{"object": "list", "data": []}')

    def do_POST(self):
        body = self.json_body()
        step = next_step(body)
        chunk = {"id": "chatcmpl-fixture", "object": "chat.completion.chunk", "created": 0,
                 "model": body.get("model", "fixture")}
        if step:
            calls = []
            for i, (name, args) in enumerate(step):
                H.calls += 1
                calls.append({"index": i, "id": f"call_fx_{H.calls:02d}", "type": "function",
                              "function": {"name": name, "arguments": json.dumps(args)}})
            delta, finish = {"role": "assistant", "tool_calls": calls}, "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": "done"}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        out = sse(dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
        out += sse(dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                        usage=usage))
        out += b"data: [DONE]\n\n"
        self._send(200, "text/event-stream", out)


def files(root):
    out = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


def put(root, tree):
    for rel, data in sorted(tree.items()):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)


def main():
    pi, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="rewind-pi-capture.")
    ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "home")
    put(ws, FILES)
    before = files(ws)
    srv = _Server(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    agent = os.path.join(home, ".pi", "agent")
    os.makedirs(agent)
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"fx": {
            "baseUrl": f"http://127.0.0.1:{srv.server_address[1]}/v1",
            "api": "openai-completions", "apiKey": "fixture-dummy",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "fx-model", "reasoning": False}]}}}, f)
    env = dict(os.environ, HOME=home, PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
    env.pop("PI_CODING_AGENT_DIR", None)

    def run(*args):
        r = subprocess.run([pi, "-p", "--provider", "fx", "--model", "fx-model", *args], cwd=ws,
                           env=env, capture_output=True, text=True, timeout=180,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0 or not r.stdout.strip().endswith("done"):
            raise SystemExit(f"pi {args}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")

    run(PROMPT1)
    sessions = os.path.join(agent, "sessions")
    found = [os.path.join(d, n) for d, _, ns in os.walk(sessions) for n in ns if n.endswith(".jsonl")]
    if len(found) != 1:
        raise SystemExit(f"expected one session file, found {found}")
    with open(found[0]) as f:
        sid = json.loads(f.readline())["id"]
    with open(os.path.join(ws, "notes.txt"), "a") as f:
        f.write("user line\n")
    run("--session", sid, PROMPT2)
    version = subprocess.run([pi, "--version"], capture_output=True, text=True, env=env).stdout.strip()

    if os.path.exists(out):
        shutil.rmtree(out)
    escaped = "--" + ws.lstrip("/").replace("/", "-") + "--"
    placeholder_dir = "--" + PLACEHOLDER.lstrip("/").replace("/", "-") + "--"
    for d, _, names in os.walk(sessions):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), sessions).replace(escaped, placeholder_dir)
            with open(os.path.join(d, n)) as f:
                text = f.read().replace(ws, PLACEHOLDER).replace(tmp, "/REWIND_FIXTURE_TMP")
            os.makedirs(os.path.join(out, "sessions", os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(out, "sessions", rel), "w") as f:
                f.write(text)
    put(os.path.join(out, "before"), before)
    put(os.path.join(out, "workspace"), files(ws))
    listed = sorted(os.path.relpath(os.path.join(d, n), home)
                    for d, _, ns in os.walk(home) for n in ns)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# pi {version}: one session, two turns

Captured by `tests/agents/capture_pi_session.py` (regenerate: run it with the pinned pi binary,
`target/agents/pi-<version>/node_modules/.bin/pi`, and this directory): session `{sid}`,
`pi -p` then `pi -p --session <id>`, against the script's own fake OpenAI chat-completions
server (a custom provider in `~/.pi/agent/models.json`), no rewind extension. The turns are
listed in the script's doc string (TURNS).

""" + FINDINGS + f"""- `sessions/`: pi's sessions directory (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`).
- `before/`: the workspace files before the run; `workspace/`: at the end.

The scratch workspace path is replaced by `{PLACEHOLDER}` everywhere, also in the session
directory's name (the scratch dir above it by `/REWIND_FIXTURE_TMP`). Nothing else changed;
nothing secret (a dummy provider on 127.0.0.1).

Everything pi wrote under its HOME during the run:
""" + "".join(f"- `{p}`\n" for p in listed))
    if os.environ.get("KEEP"):
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
