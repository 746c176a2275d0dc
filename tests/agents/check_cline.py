#!/usr/bin/env python3
"""Checks after the Cline CLI scenario of tests/agents/run.sh (fake_openai_chat.py: the same
turn as OpenCode's, in Cline 3's tools editor / read_files / run_commands). Env: WS, RW, LOG
(request log of the fake server), OUT (`cline --json` event stream), PAYLOADS (the hook
payloads of the run, one JSON a line), REWIND_HOME, RESULTS. Exits 1 when a check failed.

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


def events():
    try:
        with open(OUT) as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    except (OSError, ValueError):
        return []


def ran_the_turn():
    evs = events()
    result = [e for e in evs if e.get("type") == "run_result"]
    ends = [e["event"] for e in evs if e.get("type") == "agent_event"
            and e["event"].get("type") == "done"]
    check("cline --json completed the task with `done`",
          result[-1:] and result[-1].get("finishReason") == "completed"
          and result[-1].get("text") == "done", (result, ends))
    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))


def main():
    payloads = [json.loads(line) for line in open(os.environ["PAYLOADS"]) if line.strip()]
    sids = {(p.get("sessionContext") or {}).get("rootSessionId") for p in payloads}
    sid = next(iter(sids)) if len(sids) == 1 else None
    check("every hook payload names one session (sessionContext.rootSessionId)",
          sid is not None, sids)
    with open(os.path.join(RESULTS, "sid"), "w") as f:
        f.write(sid or "")
    ran_the_turn()
    # agent_start carries no prompt: the window has no label.
    scripted_turn(sid, None, [
        ("notes.txt", "editor", "call_e2e_00", True, "exact"),
        ("README.md", "editor", "call_e2e_02", False, "exact"),
        ("notes.txt", "editor", "call_e2e_03", False, "exact"),
        ("notes.txt", "run_commands", "call_e2e_05", False, "exact")], LOG, offered="editor",
        hint_in_result=False)
    # Cline 3 puts a hook's context into the conversation as a user message of its own.
    reqs = [json.loads(line)["body"] for line in open(LOG) if line.strip()]
    said = [m for b in reqs for m in b.get("messages", []) if "changed outside" in json.dumps(m)]
    check("the hint reaches the model as Cline's <hook_context source=\"PreToolUse\">",
          said != [] and all('<hook_context source=\\"PreToolUse\\"' in json.dumps(m)
                             for m in said), said)
    # Cline loads the workspace root's AGENTS.md itself (a rule): rewind must not add a copy.
    counts = [json.dumps(b).count("AGENTS-E2E-ROOT") for b in reqs]
    check("the root AGENTS.md reaches the model once a request (Cline's own rule, not rewind's)",
          counts != [] and all(n == 1 for n in counts), counts)
    no_hook_failures()
    undo_redo_refused(sid or "", NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(RESULTS)


def without_rewind():
    ran_the_turn()
    return finish(RESULTS)


if __name__ == "__main__":
    raise SystemExit(without_rewind() if sys.argv[1:] == ["--without-rewind"] else main())
