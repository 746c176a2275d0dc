#!/usr/bin/env python3
"""Checks after the Qwen Code scenario of tests/agents/run.sh (fake_openai_chat.py: the same
turn as OpenCode's, in Qwen Code's tools write_file / read_file / edit / run_shell_command).
Env: WS, RW, LOG (request log of the fake server), OUT (`qwen -p --output-format json`
stdout), PAYLOADS (the hook payloads of the run, one JSON a line), REWIND_HOME, RESULTS.
Exits 1 when a check failed.

`--without-rewind`: the run whose rewind binary was removed after init: every tool call must
still succeed and the turn end with `done`."""
import json
import os
import sys

from common import (check, content, finish, no_hook_failures, requests, scripted_turn,
                    undo_redo_refused)

WS, LOG, OUT, RESULTS = (os.environ[k] for k in ("WS", "LOG", "OUT", "RESULTS"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
NOTES_END, README_END = b"ONE\nTWO\nuser line\n", b"# e2e edited\n"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
AGENTS_ROOT = "AGENTS-E2E-ROOT: keep answers short"


def ran_the_turn():
    try:
        out = json.load(open(OUT))
    except (OSError, ValueError) as e:
        out = [{"error": str(e)}]
    result = [e for e in out if isinstance(e, dict) and e.get("type") == "result"] \
        if isinstance(out, list) else []
    tools = (result[0].get("stats") or {}).get("tools", {}).get("byName", {}) if result else {}
    done = [(t, v.get("success")) for t, v in sorted(tools.items())]
    check("qwen -p ran the 6 tool calls, all succeeded, and ended with `done`",
          bool(result) and result[0].get("result") == "done" and done == [
              ("edit", 2), ("read_file", 2), ("run_shell_command", 1), ("write_file", 1)],
          (result[0].get("result") if result else out, done))
    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))


def main():
    payloads = [json.loads(line) for line in open(os.environ["PAYLOADS"]) if line.strip()]
    sids = {p.get("session_id") for p in payloads}
    sid = next(iter(sids)) if len(sids) == 1 else None
    check("every hook payload names one session (session_id)", sid is not None, sids)
    empty = [p for p in payloads if p.get("hook_event_name") == "UserPromptSubmit"
             and not p.get("prompt")]
    check("Qwen Code sends UserPromptSubmit with an empty prompt after tool results "
          "(rewind must not open a window on it)", len(empty) >= 6, len(empty))
    ran_the_turn()
    # Qwen Code's tool_call_id is the model's call id.
    scripted_turn(sid, PROMPT, [
        ("notes.txt", "write_file", "call_e2e_00", True, "exact"),
        ("README.md", "edit", "call_e2e_02", False, "exact"),
        ("notes.txt", "edit", "call_e2e_03", False, "exact"),
        ("notes.txt", "run_shell_command", "call_e2e_05", False, "exact")], LOG,
        offered="write_file")
    # Qwen Code loads the root AGENTS.md itself; rewind gives no second copy.
    reqs = [r for r in requests(LOG) if "write_file" in json.dumps(r["body"].get("tools", []))]
    counts = [json.dumps(r["body"]).count(AGENTS_ROOT) for r in reqs]
    check("every request carries the root AGENTS.md exactly once (Qwen Code loads it itself)",
          counts != [] and all(c == 1 for c in counts), counts)
    no_hook_failures()
    undo_redo_refused(sid or "", NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(RESULTS)


def without_rewind():
    ran_the_turn()
    return finish(RESULTS)


if __name__ == "__main__":
    raise SystemExit(without_rewind() if sys.argv[1:] == ["--without-rewind"] else main())
