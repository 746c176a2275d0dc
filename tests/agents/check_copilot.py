#!/usr/bin/env python3
"""Checks after the Copilot CLI scenario of tests/agents/run.sh (fake_openai_chat.py: the same
turn as OpenCode's, in Copilot's tools create / view / edit / bash). Env: WS, RW, LOG
(request log of the fake server), OUT (`copilot -p` stdout), PAYLOADS (the hook payloads of
the run, one JSON a line), REWIND_HOME, RESULTS. Exits 1 when a check failed.

`--without-rewind`: the run whose rewind binary was removed after init: every tool call must
still succeed and the turn end with `done`."""
import json
import os
import sys

from common import (check, content, finish, no_hook_failures, scripted_turn,
                    undo_redo_refused)

WS, LOG, OUT, RESULTS = (os.environ[k] for k in ("WS", "LOG", "OUT", "RESULTS"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
NOTES_END, README_END = b"ONE\nTWO\nuser line\n", b"# e2e edited\n"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"


def ran_the_turn():
    out = (content(OUT) or b"").decode(errors="replace")
    check("copilot -p ran the 6 tool calls and ended with `done`",
          "\ndone\n" in out and out.count("● ") == 6, out[-1500:])
    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))


def main():
    payloads = [json.loads(line) for line in open(os.environ["PAYLOADS"]) if line.strip()]
    sids = {p.get("sessionId") for p in payloads}
    sid = next(iter(sids)) if len(sids) == 1 else None
    check("every hook payload names one session (sessionId)", sid is not None, sids)
    ran_the_turn()
    # Copilot CLI sends no tool-call id.
    scripted_turn(sid, PROMPT, [
        ("notes.txt", "create", None, True, "exact"),
        ("README.md", "edit", None, False, "exact"),
        ("notes.txt", "edit", None, False, "exact"),
        ("notes.txt", "bash", None, False, "exact")], LOG, offered="create",
        hint_in_result=False)
    reqs = [json.loads(line)["body"] for line in open(LOG) if line.strip()]
    said = [m for b in reqs for m in b.get("messages", []) if "changed outside" in json.dumps(m)]
    check("the hint reaches the model as Copilot's \"Additional context from preToolUse hook\"",
          said != [] and all("Additional context from preToolUse hook" in json.dumps(m)
                             for m in said), said)
    no_hook_failures()
    undo_redo_refused(sid or "", NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(RESULTS)


def without_rewind():
    ran_the_turn()
    return finish(RESULTS)


if __name__ == "__main__":
    raise SystemExit(without_rewind() if sys.argv[1:] == ["--without-rewind"] else main())
