#!/usr/bin/env python3
"""Checks after the Codex scenario of tests/agents/run.sh (see fake_openai_responses.py for
the scripted turns). Env: WS (workspace), RW (rewind binary), LOG (request log of the fake
server), TMPD (scratch dir), REWIND_HOME. Writes pass/fail counts to $TMPD/cx/pass and
$TMPD/cx/fail; exits 1 when a check failed."""
import json
import os
import subprocess

WS, RW, LOG, TMPD = (os.environ[k] for k in ("WS", "RW", "LOG", "TMPD"))
CX = os.path.join(TMPD, "cx")
HINT = "rewind: notes.txt was changed outside the agent"
PROMPT = "create notes.txt, edit it, read it, uppercase with sed, patch through the shell"
counts = {"pass": 0, "fail": 0}

# What the workspace holds after the run: the heredoc patch edited README.md again, added
# extra.txt, deleted old.txt and moved move-me.txt (edited) to moved.txt.
AFTER = {
    "README.md": b"# e2e patched\n",
    "notes.txt": b"ONE\nTWO\nuser line\n",
    "extra.txt": b"extra\n",
    "old.txt": None,
    "move-me.txt": None,
    "moved.txt": b"moved\n",
}
# What undo of the whole turn gives back: the committed files, nothing the agent created.
BEFORE = {"README.md": b"# e2e\n", "notes.txt": None, "extra.txt": None, "old.txt": b"old\n",
          "move-me.txt": b"move me\n", "moved.txt": None}


def check(what, cond, detail=""):
    counts["pass" if cond else "fail"] += 1
    print(f"  {'PASS' if cond else 'FAIL'}  {what}")
    if not cond and detail:
        print("        " + str(detail)[:3000].replace("\n", "\n        "))
    return cond


def rewind(*args):
    r = subprocess.run([RW, *args], cwd=WS, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def content(name):
    try:
        with open(os.path.join(WS, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def files():
    return {name: content(name) for name in AFTER}


def jsonl(path):
    out = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def trust_steps():
    """The steps `rewind init codex` prints, as run.sh followed them in the real Codex."""
    init = open(os.path.join(CX, "init.txt")).read()
    check("rewind init codex prints the trust steps (project, then /hooks)",
          "codex exec --trust" in init and "/hooks" in init and "hook codex" in init, init)
    probe = jsonl(os.path.join(CX, "probe.jsonl"))
    fired = open(os.path.join(CX, "probe-hooks")).read().strip()
    check("step 1 alone (codex exec --trust): the turn runs and not one hook fires",
          any(e.get("type") == "turn.completed" for e in probe) and fired == "0",
          f"hooks fired: {fired}; events: {[e.get('type') for e in probe]}")
    config = open(os.path.join(os.environ["CHOME"], "config.toml")).read()
    check("--trust recorded the project as trusted in CODEX_HOME/config.toml",
          f'[projects."{WS}"]' in config and 'trust_level = "trusted"' in config, config)
    try:
        trust = json.load(open(os.path.join(CX, "trust.json")))
    except (OSError, ValueError) as e:
        trust = {"error": str(e)}
    listed = trust.get("listed", [])
    check("step 2: Codex lists rewind's 5 hooks as untrusted until /hooks trusts them",
          len(listed) == 5 and all(s == "untrusted" for _, _, s in listed)
          and trust.get("trusted") == 5, trust)


def main():
    trust_steps()
    events = jsonl(os.path.join(CX, "out.jsonl"))
    sid = next((e.get("thread_id") for e in events if e.get("type") == "thread.started"), None)
    check("codex exec --json reports a thread and a completed turn",
          sid is not None and any(e.get("type") == "turn.completed" for e in events),
          [e.get("type") for e in events])
    payloads = jsonl(os.path.join(CX, "payloads.jsonl"))
    check("every hook payload carries the thread id as session_id",
          payloads and all(p.get("session_id") == sid for p in payloads),
          {p.get("session_id") for p in payloads})
    fired = {p.get("hook_event_name") for p in payloads}
    check("after step 2 every hook fires without --dangerously-bypass-hook-trust",
          fired == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"},
          fired)
    heredoc = [p["hook_event_name"] for p in payloads if p.get("tool_use_id") == "call_e2e_05"]
    print(f"  note  hooks Codex sent for the shell-heredoc apply_patch: {heredoc}")

    check("the files after the run are what the agent's tools made", files() == AFTER, files())

    # rewind --json log
    rc, so, se = rewind("--json", "log", "--session", sid or "?")
    try:
        log = json.loads(so)
    except ValueError:
        log = {}
    check("rewind --json log --session <thread id> answers", rc == 0 and log, (rc, so, se))
    sessions = [s for s in log.get("sessions", []) if s.get("session") == sid]
    windows = sessions[0]["windows"] if sessions else []
    turn = [w for w in windows if w.get("kind") == "agent" and (w.get("label") or "").startswith(PROMPT)]
    check("one agent window labelled with the prompt", len(turn) == 1, json.dumps(windows, indent=1))
    changes = sorted(turn[0]["changes"], key=lambda c: c["id"]) if turn else []
    got = [(c["path"], c["tool"], c["tool_call"], c["before"] is None, c["after"] is None, c["proof"])
           for c in changes]
    # The heredoc's changes are compared as a set: their order is the patch's when rewind
    # parsed it, the scan's otherwise.
    head = [g for g in got if g[2] != "call_e2e_05"]
    tail = sorted(g for g in got if g[2] == "call_e2e_05")
    want_head = [("notes.txt", "apply_patch", "call_e2e_00", True, False, "exact"),
                 ("README.md", "apply_patch", "call_e2e_01", False, False, "exact"),
                 ("notes.txt", "apply_patch", "call_e2e_02", False, False, "exact"),
                 ("notes.txt", "Bash", "call_e2e_04", False, False, "exact")]
    want_tail = sorted([("README.md", "Bash", "call_e2e_05", False, False, "exact"),
                        ("extra.txt", "Bash", "call_e2e_05", True, False, "exact"),
                        ("move-me.txt", "Bash", "call_e2e_05", False, True, "exact"),
                        ("moved.txt", "Bash", "call_e2e_05", True, False, "exact"),
                        ("old.txt", "Bash", "call_e2e_05", False, True, "exact")])
    check("apply_patch create/edit/edit and the sed are in the window with their call ids",
          head == want_head, f"got  {head}\nwant {want_head}")
    check("the shell-heredoc apply_patch (no PostToolUse) is in the window under its call id",
          tail == want_tail, f"got  {tail}\nwant {want_tail}")
    by_call = {c["tool_call"]: c for c in changes if c["path"] == "notes.txt"}
    if all(k in by_call for k in ("call_e2e_00", "call_e2e_02")):
        check("the edit of notes.txt starts from the create's bytes",
              by_call["call_e2e_02"]["before"] == by_call["call_e2e_00"]["after"], changes)
    ext = [w for w in windows if w.get("kind") == "external"]
    ext_ch = [c for w in ext for c in w["changes"]]
    ok = (len(ext_ch) == 1 and ext_ch[0]["path"] == "notes.txt"
          and "call_e2e_02" in by_call and "call_e2e_04" in by_call
          and ext_ch[0]["before"] == by_call["call_e2e_02"]["after"]
          and ext_ch[0]["after"] == by_call["call_e2e_04"]["before"])
    check("the user's edit is one external change between the edit and the sed", ok,
          json.dumps(ext, indent=1))
    check("no change recorded in any other window",
          all(not w["changes"] for w in windows if w not in turn and w not in ext),
          json.dumps(windows, indent=1))

    # The hint in the next request body the agent sent: Codex reads through the shell.
    reqs = jsonl(LOG)

    def has_output(r, call):
        return any(isinstance(i, dict) and i.get("call_id") == call and i.get("type", "").endswith("_output")
                   for i in r.get("body", {}).get("input", []) or [])

    after_read = [i for i, r in enumerate(reqs) if has_output(r, "call_e2e_03")]
    check("the request after `cat notes.txt` carries rewind's hint",
          bool(after_read) and HINT in json.dumps(reqs[after_read[0]]["body"]),
          f"{len(reqs)} requests; first after the read: {after_read[:1]}")
    check("no request before that read carries the hint",
          not any(HINT in json.dumps(r.get("body")) for r in reqs if not has_output(r, "call_e2e_03")))

    hook_log = os.path.join(os.environ["REWIND_HOME"], "logs", "hook.log")
    text = open(hook_log, errors="replace").read() if os.path.exists(hook_log) else ""
    check("no hook failure logged in REWIND_HOME/logs/hook.log", text.strip() == "", text)

    # undo / redo / refused undo by the thread id. The user's line came between the turn's
    # changes of notes.txt: a plain undo refuses rather than drop it.
    rc, so, se = rewind("--json", "undo", "--session", sid or "?")
    check("undo refuses over the user's edit made during the turn (exit 3, later-change)",
          rc == 3 and '"later-change"' in so and files() == AFTER, (rc, so, se))
    rc, so, se = rewind("--json", "undo", "--session", sid or "?", "--force")
    check("rewind undo --session <id> --force exits 0", rc == 0, (rc, so, se))
    check("undo: the committed files are back byte-exact, the agent's new files gone",
          files() == BEFORE, files())
    rc, so, se = rewind("--json", "redo", "--session", sid or "?")
    check("rewind redo --session <id> exits 0", rc == 0, (rc, so, se))
    check("redo: every file is back byte-exact", files() == AFTER, files())
    with open(os.path.join(WS, "README.md"), "ab") as f:
        f.write(b"a user edit after the turn\n")
    edited = dict(AFTER, **{"README.md": AFTER["README.md"] + b"a user edit after the turn\n"})
    rc, so, se = rewind("--json", "undo", "--session", sid or "?")
    check("after a user edit, rewind undo refuses with exit 3", rc == 3, (rc, so, se))
    check("the refused undo wrote nothing", files() == edited, files())
    for k, v in counts.items():
        with open(os.path.join(CX, k), "w") as f:
            f.write(str(v))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
