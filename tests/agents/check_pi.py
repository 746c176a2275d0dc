#!/usr/bin/env python3
"""Checks after the pi scenario of tests/agents/run.sh (fake_openai_chat.py with
FAKE_SCENARIO=pi: the same turn as OpenCode's, in pi's tool arguments). Env: WS (workspace),
RW (rewind binary), LOG (request log of the fake server), OUT (pi's `-p` stdout), SESSIONS
(pi's session directory), REWIND_HOME, RESULTS (where the pass/fail counts and the session id
go). Exits 1 when a check failed.

`--without-rewind`: the run whose rewind binary was removed after init: every tool call must
still succeed and the turn end with `done`."""
import glob
import json
import os
import sys

from common import (check, content, finish, no_hook_failures, requests, scripted_turn,
                    undo_redo_refused)

WS, LOG, OUT, RESULTS, SESSIONS = (os.environ[k] for k in ("WS", "LOG", "OUT", "RESULTS", "SESSIONS"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
NOTES_END, README_END = b"ONE\nTWO\nuser line\n", b"# e2e edited\n"


def session():
    """(session id, entries) of the one pi session file."""
    files = glob.glob(os.path.join(SESSIONS, "**", "*.jsonl"), recursive=True)
    if len(files) != 1:
        return None, []
    with open(files[0]) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    head = entries[0] if entries else {}
    return head.get("id") if head.get("type") == "session" else None, entries


def tool_results(entries):
    return [(e["message"].get("toolName"), e["message"].get("isError")) for e in entries
            if e.get("type") == "message" and e["message"].get("role") == "toolResult"]


def ran_the_turn(sid, entries):
    out = content(OUT) or b""
    results = tool_results(entries)
    check("pi -p used one session and ended with `done`",
          sid is not None and out.strip().endswith(b"done"), (sid, out[-300:]))
    check("all 6 tool calls succeeded (none blocked or failed)",
          len(results) == 6 and not any(err for _, err in results), results)
    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))


def main():
    sid, entries = session()
    with open(os.path.join(RESULTS, "sid"), "w") as f:
        f.write(sid or "")
    ran_the_turn(sid, entries)

    scripted_turn(sid, PROMPT, [
        ("notes.txt", "write", "call_e2e_00", True, "exact"),
        ("README.md", "edit", "call_e2e_02", False, "exact"),
        ("notes.txt", "edit", "call_e2e_03", False, "exact"),
        ("notes.txt", "bash", "call_e2e_05", False, "exact")], LOG)
    reqs = [r for r in requests(LOG) if "write" in json.dumps(r["body"].get("tools", []))]
    # pi loads the root AGENTS.md itself: rewind must not give it a second time.
    check("the root AGENTS.md reaches the model once (pi's own system prompt, not rewind's)",
          all(json.dumps(r["body"]).count("AGENTS-E2E-ROOT") == 1 for r in reqs),
          [json.dumps(r["body"]).count("AGENTS-E2E-ROOT") for r in reqs])

    no_hook_failures()
    undo_redo_refused(sid or "", NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(RESULTS)


def without_rewind():
    sid, entries = session()
    ran_the_turn(sid, entries)
    return finish(RESULTS)


if __name__ == "__main__":
    raise SystemExit(without_rewind() if sys.argv[1:] == ["--without-rewind"] else main())
