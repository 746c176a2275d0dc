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

from common import (check, content, finish, no_hook_failures, requests, session_windows,
                    undo_redo_refused)

WS, LOG, OUT, RESULTS, SESSIONS = (os.environ[k] for k in ("WS", "LOG", "OUT", "RESULTS", "SESSIONS"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
HINT = "rewind: notes.txt was changed outside the agent"
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

    windows = session_windows(sid or "")
    turn = [w for w in windows if w.get("kind") == "agent" and w.get("label") == PROMPT]
    check("one agent window labelled with the prompt", len(turn) == 1,
          json.dumps(windows, indent=1))
    changes = sorted(turn[0]["changes"], key=lambda c: c["id"]) if turn else []
    got = [(c["path"], c["tool"], c["tool_call"], c["before"] is None, c["proof"]) for c in changes]
    want = [("notes.txt", "write", "call_e2e_00", True, "exact"),
            ("README.md", "edit", "call_e2e_02", False, "exact"),
            ("notes.txt", "edit", "call_e2e_03", False, "exact"),
            ("notes.txt", "bash", "call_e2e_05", False, "exact")]
    check("the window holds exactly write, edit, edit, bash(sed) with their call ids",
          got == want, f"got  {got}\nwant {want}")
    if len(changes) == 4:
        check("the edit of notes.txt starts from the write's bytes",
              changes[2]["before"] == changes[0]["after"], changes)
    ext = [w for w in windows if w.get("kind") == "external"]
    ext_ch = [c for w in ext for c in w["changes"]]
    ok = (len(ext_ch) == 1 and ext_ch[0]["path"] == "notes.txt" and len(changes) == 4
          and ext_ch[0]["before"] == changes[2]["after"]
          and ext_ch[0]["after"] == changes[3]["before"])
    check("the user's edit is one external change between the edit and the sed", ok,
          json.dumps(ext, indent=1))
    check("no change recorded in any other window",
          all(not w["changes"] for w in windows if w not in turn and w not in ext),
          json.dumps(windows, indent=1))

    # The hint: rewind's extension adds it to the read tool's result (pi's tool_result).
    reqs = [r for r in requests(LOG) if "write" in json.dumps(r["body"].get("tools", []))]

    def read_result(r):
        return [m.get("content") for m in r["body"].get("messages", [])
                if m.get("role") == "tool" and m.get("tool_call_id") == "call_e2e_04"]
    after = [r for r in reqs if read_result(r)]
    results = read_result(after[0]) if after else []
    check("the request after the read of notes.txt carries rewind's hint in the read result",
          any(HINT in json.dumps(c) for c in results), results)
    check("no request before that read carries the hint",
          not any(HINT in json.dumps(r["body"]) for r in reqs if not read_result(r)))
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
