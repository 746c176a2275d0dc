#!/usr/bin/env python3
"""Checks after the OpenCode scenario of tests/agents/run.sh (see fake_openai_chat.py for the
scripted turns). Env: WS (workspace), RW (rewind binary), LOG (request log of the fake
server), OUT (the agent's `--format json` event stream), REWIND_HOME, RESULTS (where the
pass/fail counts and the session id go). Exits 1 when a check failed."""
import json
import os

from common import (check, content, finish, no_hook_failures, requests, rewind,
                    session_windows, undo_redo_refused)

WS, LOG, OUT, RESULTS = (os.environ[k] for k in ("WS", "LOG", "OUT", "RESULTS"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
HINT = "rewind: notes.txt was changed outside the agent"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
NOTES_END, README_END = b"ONE\nTWO\nuser line\n", b"# e2e edited\n"


def events():
    try:
        with open(OUT) as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    except (OSError, ValueError):
        return []


def main():
    evs = events()
    sids = {e.get("sessionID") for e in evs if e.get("sessionID")}
    sid = next(iter(sids)) if len(sids) == 1 else None
    with open(os.path.join(RESULTS, "sid"), "w") as f:
        f.write(sid or "")
    tools = [(e["part"]["tool"], e["part"]["state"]["status"]) for e in evs
             if e.get("type") == "tool_use"]
    texts = [e["part"]["text"] for e in evs if e.get("type") == "text"]
    check("opencode run used one session and ended with `done`",
          sid is not None and texts[-1:] == ["done"], (sids, texts))
    check("all 6 tool calls completed (none blocked or failed)",
          len(tools) == 6 and all(s == "completed" for _, s in tools), tools)

    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))

    windows = session_windows(sid or "")
    # `opencode run` hands the model (and the chat.message hook) the prompt in quotes.
    turn = [w for w in windows if w.get("kind") == "agent" and PROMPT in (w.get("label") or "")]
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

    # The hint: rewind's plugin appends it to the read tool's output.
    reqs = [r for r in requests(LOG) if "write" in json.dumps(r["body"].get("tools", []))]
    def read_result(r):
        return [m.get("content") for m in r["body"].get("messages", [])
                if m.get("role") == "tool" and m.get("tool_call_id") == "call_e2e_04"]
    after = [r for r in reqs if read_result(r)]
    results = read_result(after[0]) if after else []
    check("the request after the read of notes.txt carries rewind's hint in the read output",
          any(HINT in json.dumps(c) for c in results), results)
    check("no request before that read carries the hint",
          not any(HINT in json.dumps(r["body"]) for r in reqs if not read_result(r)))

    no_hook_failures()
    undo_redo_refused(sid or "", NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(RESULTS)


def main_patch():
    """The second turn: `opencode run --session <id> -m e2e/gpt-e2e "patch notes.txt"`."""
    sid = os.environ["SID"]
    evs = events()
    tools = [(e["part"]["tool"], e["part"]["state"]["status"]) for e in evs
             if e.get("type") == "tool_use"]
    texts = [e["part"]["text"] for e in evs if e.get("type") == "text"]
    check("the gpt- model turn ran read + apply_patch, completed, in the same session",
          tools == [("read", "completed"), ("apply_patch", "completed")]
          and texts[-1:] == ["patched"]
          and {e.get("sessionID") for e in evs} == {sid}, (tools, texts))
    patched = b"ONE\nTWO, patched\nuser line\n"
    check("notes.txt holds the patch", content(NOTES) == patched, content(NOTES))
    windows = session_windows(sid)
    turn = [w for w in windows if w.get("kind") == "agent" and "patch notes.txt" in (w.get("label") or "")]
    changes = [c for w in turn for c in w["changes"]]
    got = [(c["path"], c["tool"], c["tool_call"], c["proof"]) for c in changes]
    check("a new agent window holds exactly the apply_patch of notes.txt (exact, its call id)",
          len(turn) == 1 and got == [("notes.txt", "apply_patch", "call_e2e_patch", "exact")],
          json.dumps(windows, indent=1))
    readme = content(README)
    rc, so, se = rewind("--json", "undo", "--session", sid)
    check("undo --session <id> undoes the patch: notes.txt back byte-exact, README.md untouched",
          rc == 0 and content(NOTES) == NOTES_END and content(README) == readme, (rc, so, se))
    rc, so, se = rewind("--json", "redo", "--session", sid)
    check("redo --session <id> puts the patch back byte-exact",
          rc == 0 and content(NOTES) == patched, (rc, so, se))
    return finish(RESULTS)


if __name__ == "__main__":
    import sys
    raise SystemExit(main_patch() if sys.argv[1:] == ["--patch"] else main())
