#!/usr/bin/env python3
"""Checks after the Claude Code scenario of tests/agents/run.sh (see fake_anthropic.py for
the scripted turns). Env: WS (workspace), SID (session id), RW (rewind binary), LOG
(request log of the fake server), TMPD (scratch dir). Writes pass/fail counts to
$TMPD/cc/pass and $TMPD/cc/fail; exits 1 when a check failed."""
import json
import os
import subprocess

WS, SID, RW, LOG, TMPD = (os.environ[k] for k in ("WS", "SID", "RW", "LOG", "TMPD"))
NOTES, README = os.path.join(WS, "notes.txt"), os.path.join(WS, "README.md")
HINT = "rewind: notes.txt was changed outside the agent"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
AGENTS_ROOT = "AGENTS-E2E-ROOT: keep answers short"
AGENTS_CHANGED = "AGENTS-E2E-CHANGED: the rules changed"
counts = {"pass": 0, "fail": 0}


def check(what, cond, detail=""):
    counts["pass" if cond else "fail"] += 1
    print(f"  {'PASS' if cond else 'FAIL'}  {what}")
    if not cond and detail:
        print("        " + str(detail)[:3000].replace("\n", "\n        "))
    return cond


def rewind(*args):
    r = subprocess.run([RW, *args], cwd=WS, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def content(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main():
    try:
        out = json.load(open(os.path.join(TMPD, "cc", "out.json")))
    except (OSError, ValueError) as e:
        out = {"error": str(e)}
    check("claude reports success and our session id",
          out.get("is_error") is False and out.get("session_id") == SID, out)

    # What the agent's tools did to the files.
    check("notes.txt after the run is create+edit+user line+sed",
          content(NOTES) == b"ONE\nTWO\nuser line\n", content(NOTES))
    check("README.md after the run is the agent's edit",
          content(README) == b"# e2e edited\n", content(README))

    # rewind --json log
    rc, so, se = rewind("--json", "log", "--session", SID)
    try:
        log = json.loads(so)
    except ValueError:
        log = {}
    check("rewind --json log --session <id> answers", rc == 0 and log, (rc, so, se))
    sessions = [s for s in log.get("sessions", []) if s.get("session") == SID]
    windows = sessions[0]["windows"] if sessions else []
    turn = [w for w in windows if w.get("kind") == "agent" and (w.get("label") or "").startswith(PROMPT)]
    check("one agent window labelled with the prompt", len(turn) == 1, json.dumps(windows, indent=1))
    changes = sorted(turn[0]["changes"], key=lambda c: c["id"]) if turn else []
    got = [(c["path"], c["tool"], c["tool_call"], c["before"] is None, c["proof"]) for c in changes]
    want = [("notes.txt", "Write", "toolu_e2e_00", True, "exact"),
            ("README.md", "Edit", "toolu_e2e_02", False, "exact"),
            ("notes.txt", "Edit", "toolu_e2e_03", False, "exact"),
            ("notes.txt", "Bash", "toolu_e2e_05", False, "exact")]
    check("the window holds exactly Write, Edit, Edit, Bash(sed) with their tool-call ids", got == want,
          f"got  {got}\nwant {want}")
    if len(changes) == 4:
        check("the Edit of notes.txt starts from the Write's bytes",
              changes[2]["before"] == changes[0]["after"], changes)
    ext = [w for w in windows if w.get("kind") == "external"]
    # The server's line added to AGENTS.md (with the user's) is an external change too.
    ext_ch = [c for w in ext for c in w["changes"] if c["path"] != "AGENTS.md"]
    ok = (len(ext_ch) == 1 and ext_ch[0]["path"] == "notes.txt" and len(changes) == 4
          and ext_ch[0]["before"] == changes[2]["after"] and ext_ch[0]["after"] == changes[3]["before"])
    check("the user's edit is one external change between the Edit and the sed", ok, json.dumps(ext, indent=1))
    check("no change recorded in any other window",
          all(not w["changes"] for w in windows if w not in turn and w not in ext), json.dumps(windows, indent=1))

    # The hint in the next request body the agent sent.
    reqs = [json.loads(l) for l in open(LOG)]
    def has_result(r, tid):
        return f'"tool_use_id": "{tid}"' in json.dumps(r["body"])
    after_read = [i for i, r in enumerate(reqs) if has_result(r, "toolu_e2e_04")]
    before_read = [i for i, r in enumerate(reqs) if not has_result(r, "toolu_e2e_04")
                   and "Write" in json.dumps(r["body"].get("tools", []))]
    check("the request after the Read of notes.txt carries rewind's hint",
          bool(after_read) and HINT in json.dumps(reqs[after_read[0]]["body"]),
          f"{len(reqs)} requests; first after the Read: {after_read[:1]}")
    check("no request before that Read carries the hint",
          not any(HINT in json.dumps(reqs[i]["body"]) for i in before_read))

    # AGENTS.md: the first request carries it once (rewind's SessionStart before Claude Code
    # 2.1.277; from then on Claude Code loads it itself and rewind gives no second copy), the
    # Read of README.md does not give it again, and once the server changed it (with the
    # user's edit), the Read of notes.txt gives it again (rewind: Claude Code does not give a
    # changed one): the next request has the new line, no request before it.
    tool_reqs = [r for r in reqs if "Write" in json.dumps(r["body"].get("tools", []))]
    def count(r, text):
        return json.dumps(r["body"]).count(text)
    check("the first request carries the root AGENTS.md exactly once",
          bool(tool_reqs) and count(tool_reqs[0], AGENTS_ROOT) == 1,
          json.dumps(tool_reqs[0]["body"])[:3000] if tool_reqs else "no request")
    after_readme = [r for r in tool_reqs if has_result(r, "toolu_e2e_01")]
    check("the Read of README.md does not give AGENTS.md again",
          bool(after_readme) and count(after_readme[0], AGENTS_ROOT) == 1,
          [count(r, AGENTS_ROOT) for r in tool_reqs])
    check("the request after the Read of notes.txt carries the changed AGENTS.md, none before",
          bool(after_read) and count(reqs[after_read[0]], AGENTS_CHANGED) == 1
          and not any(count(reqs[i], AGENTS_CHANGED) for i in before_read),
          [count(r, AGENTS_CHANGED) for r in reqs])

    # Hooks never fail the agent call; their internal failures go to <home>/logs/hook.log.
    hook_log = os.path.join(os.environ["REWIND_HOME"], "logs", "hook.log")
    text = open(hook_log, errors="replace").read() if os.path.exists(hook_log) else ""
    check("no hook failure logged in REWIND_HOME/logs/hook.log", text.strip() == "", text)

    # undo / redo / refused undo, by the agent's session id. The user's line came between
    # the turn's changes of notes.txt: a plain undo refuses rather than drop it.
    rc, so, se = rewind("--json", "undo", "--session", SID)
    check("undo refuses over the user's edit made during the turn (exit 3, later-change)",
          rc == 3 and '"later-change"' in so and content(NOTES) == b"ONE\nTWO\nuser line\n",
          (rc, so, se))
    rc, so, se = rewind("--json", "undo", "--session", SID, "--force")
    check("rewind undo --session <id> --force exits 0", rc == 0, (rc, so, se))
    check("undo: notes.txt (created in the turn) is gone", content(NOTES) is None, content(NOTES))
    check("undo: README.md is byte-exact the committed text", content(README) == b"# e2e\n", content(README))
    rc, so, se = rewind("--json", "redo", "--session", SID)
    check("rewind redo --session <id> exits 0", rc == 0, (rc, so, se))
    check("redo: both files are back byte-exact",
          content(NOTES) == b"ONE\nTWO\nuser line\n" and content(README) == b"# e2e edited\n",
          (content(NOTES), content(README)))
    with open(README, "ab") as f:
        f.write(b"a user edit after the turn\n")
    rc, so, se = rewind("--json", "undo", "--session", SID)
    check("after a user edit, rewind undo refuses with exit 3", rc == 3, (rc, so, se))
    check("the refused undo wrote nothing",
          content(README) == b"# e2e edited\na user edit after the turn\n"
          and content(NOTES) == b"ONE\nTWO\nuser line\n", (content(NOTES), content(README)))
    for k, v in counts.items():
        with open(os.path.join(TMPD, "cc", k), "w") as f:
            f.write(str(v))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
