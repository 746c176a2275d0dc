#!/usr/bin/env python3
"""Checks after the Gemini CLI scenario of tests/agents/run.sh (see fake_gemini.py for the
scripted turns). Env: WS (workspace), SID (session id), RW (rewind binary), LOG (request
log of the fake server), OUT (the agent's --output-format json), REWIND_HOME, RESULTS (where
the pass/fail counts go). Exits 1 when a check failed."""
import json
import os

from common import (check, content, finish, no_hook_failures, requests, session_windows,
                    undo_redo_refused)

WS, SID, LOG, OUT = (os.environ[k] for k in ("WS", "SID", "LOG", "OUT"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
HINT = "rewind: notes.txt was changed outside the agent"
AGENTS_ROOT = "AGENTS-E2E-ROOT: keep answers short"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
NOTES_END, README_END = b"ONE\nTWO\nuser line\n", b"# e2e edited\n"


def main():
    try:
        out = json.load(open(OUT))
    except (OSError, ValueError) as e:
        out = {"error": str(e)}
    tools = out.get("stats", {}).get("tools", {})
    check("gemini answers `done` for our session id",
          out.get("session_id") == SID and out.get("response") == "done", out)
    check("all 5 tool calls succeeded (none denied or failed)",
          tools.get("totalCalls") == 5 and tools.get("totalSuccess") == 5, tools)

    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == NOTES_END, content(NOTES))
    check("README.md after the run is the agent's edit", content(README) == README_END,
          content(README))

    windows = session_windows(SID)
    turn = [w for w in windows
            if w.get("kind") == "agent" and (w.get("label") or "").startswith(PROMPT)]
    check("one agent window labelled with the prompt", len(turn) == 1,
          json.dumps(windows, indent=1))
    changes = sorted(turn[0]["changes"], key=lambda c: c["id"]) if turn else []
    got = [(c["path"], c["tool"], c["before"] is None, c["proof"]) for c in changes]
    want = [("notes.txt", "write_file", True, "exact"),
            ("README.md", "replace", False, "exact"),
            ("notes.txt", "replace", False, "exact"),
            ("notes.txt", "run_shell_command", False, "exact")]
    check("the window holds exactly write_file, replace, replace, run_shell_command(sed)",
          got == want, f"got  {got}\nwant {want}")
    ids = [c["tool_call"] for c in changes]
    check("each change has its own derived tool-call id (gemini-…)",
          len(set(ids)) == len(ids) and all((i or "").startswith("gemini-") for i in ids), ids)
    if len(changes) == 4:
        check("the replace of notes.txt starts from the write_file's bytes",
              changes[2]["before"] == changes[0]["after"], changes)
    ext = [w for w in windows if w.get("kind") == "external"]
    ext_ch = [c for w in ext for c in w["changes"]]
    ok = (len(ext_ch) == 1 and ext_ch[0]["path"] == "notes.txt" and len(changes) == 4
          and ext_ch[0]["before"] == changes[2]["after"]
          and ext_ch[0]["after"] == changes[3]["before"])
    check("the user's edit is one external change between the replace and the sed", ok,
          json.dumps(ext, indent=1))
    check("no change recorded in any other window",
          all(not w["changes"] for w in windows if w not in turn and w not in ext),
          json.dumps(windows, indent=1))

    # The hint: Gemini appends an AfterTool hook's additionalContext to the tool's result,
    # inside <hook_context>, in the functionResponse of the next request.
    reqs = [r for r in requests(LOG) if "write_file" in json.dumps(r["body"].get("tools", []))]
    def read_done(r):
        return any("functionResponse" in p and p["functionResponse"].get("name") == "read_file"
                   for c in r["body"].get("contents", []) for p in c.get("parts", []))
    after = [r for r in reqs if read_done(r)]
    responses = [json.dumps(p["functionResponse"]) for c in (after[0]["body"]["contents"] if after else [])
                 for p in c.get("parts", []) if p.get("functionResponse", {}).get("name") == "read_file"]
    check("the request after read_file of notes.txt carries rewind's hint in <hook_context>",
          any(HINT in r and "<hook_context>" in r for r in responses), responses)
    check("no request before that read carries the hint",
          not any(HINT in json.dumps(r["body"]) for r in reqs if not read_done(r)))

    # AGENTS.md through the hooks: the session start's additionalContext goes before the
    # prompt (in <hook_context>), so the first request carries it; the read of notes.txt,
    # at the root too, does not give it again.
    first = json.dumps(reqs[0]["body"]) if reqs else ""
    check("the first request carries the root AGENTS.md in <hook_context> (SessionStart)",
          first.count(AGENTS_ROOT) == 1 and "<hook_context>" in first, first[:3000])
    check("no later request carries AGENTS.md twice",
          all(json.dumps(r["body"]).count(AGENTS_ROOT) == 1 for r in reqs),
          [json.dumps(r["body"]).count(AGENTS_ROOT) for r in reqs])

    no_hook_failures()
    undo_redo_refused(SID, NOTES, README, NOTES_END, README_END, b"# e2e\n")
    return finish(os.environ["RESULTS"])


if __name__ == "__main__":
    raise SystemExit(main())
