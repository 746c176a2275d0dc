"""What the check scripts of tests/agents/ share: counting checks, running rewind, reading
files, the checks every agent's scenario ends with. Env: WS (workspace), RW (rewind binary),
REWIND_HOME."""
import json
import os
import subprocess

counts = {"pass": 0, "fail": 0}


def check(what, cond, detail=""):
    counts["pass" if cond else "fail"] += 1
    print(f"  {'PASS' if cond else 'FAIL'}  {what}")
    if not cond and detail:
        print("        " + str(detail)[:3000].replace("\n", "\n        "))
    return cond


def rewind(*args):
    r = subprocess.run([os.environ["RW"], *args], cwd=os.environ["WS"], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def content(p):
    try:
        with open(p, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def requests(log):
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def session_windows(sid):
    """The windows of session `sid` in `rewind --json log`."""
    rc, so, se = rewind("--json", "log", "--session", sid)
    try:
        log = json.loads(so)
    except ValueError:
        log = {}
    check("rewind --json log --session <id> answers", rc == 0 and bool(log), (rc, so, se))
    sessions = [s for s in log.get("sessions", []) if s.get("session") == sid]
    return sessions[0]["windows"] if sessions else []


def no_hook_failures():
    """Hooks never fail the agent call; their internal failures go to <home>/logs/hook.log."""
    hook_log = os.path.join(os.environ["REWIND_HOME"], "logs", "hook.log")
    text = open(hook_log, errors="replace").read() if os.path.exists(hook_log) else ""
    check("no hook failure logged in REWIND_HOME/logs/hook.log", text.strip() == "", text)


def undo_redo_refused(sid, notes, readme, notes_end, readme_end, readme_start):
    """The scenario's ending: the undo that refuses over the user's mid-turn edit, the forced
    undo, the redo, and the undo refused after a user edit that writes nothing."""
    rc, so, se = rewind("--json", "undo", "--session", sid)
    check("undo refuses over the user's edit made during the turn (exit 3, later-change)",
          rc == 3 and '"later-change"' in so and content(notes) == notes_end, (rc, so, se))
    rc, so, se = rewind("--json", "undo", "--session", sid, "--force")
    check("rewind undo --session <id> --force exits 0", rc == 0, (rc, so, se))
    check("undo: notes.txt (created in the turn) is gone", content(notes) is None, content(notes))
    check("undo: README.md is byte-exact the committed text", content(readme) == readme_start,
          content(readme))
    rc, so, se = rewind("--json", "redo", "--session", sid)
    check("rewind redo --session <id> exits 0", rc == 0, (rc, so, se))
    check("redo: both files are back byte-exact",
          content(notes) == notes_end and content(readme) == readme_end,
          (content(notes), content(readme)))
    with open(readme, "ab") as f:
        f.write(b"a user edit after the turn\n")
    rc, so, se = rewind("--json", "undo", "--session", sid)
    check("after a user edit, rewind undo refuses with exit 3", rc == 3, (rc, so, se))
    check("the refused undo wrote nothing",
          content(readme) == readme_end + b"a user edit after the turn\n"
          and content(notes) == notes_end, (content(notes), content(readme)))


def scripted_turn(sid, prompt, want, log, read_call="call_e2e_04", offered="write",
                  hint_in_result=True):
    """The checks of the scripted turn of fake_openai_chat.py (write, read, edit, edit, the
    user's line, read, sed) on rewind's record and on what reached the model: one agent window
    labelled `prompt` (None: any label) holding exactly `want` [(path, tool, call id, created,
    proof)], the user's line one external change between the second edit and the sed, nothing
    elsewhere; the hint in the result of `read_call` and in no request before it (requests
    offering the tool `offered`); with `hint_in_result` false, anywhere in the request after
    the read (Cline puts a hook's context in a message of its own). Returns the windows."""
    hint = "rewind: notes.txt was changed outside the agent"
    windows = session_windows(sid or "")
    turn = [w for w in windows if w.get("kind") == "agent"
            and (prompt is None or w.get("label") == prompt)]
    check("one agent window" + (" labelled with the prompt" if prompt else ""), len(turn) == 1,
          json.dumps(windows, indent=1))
    changes = sorted(turn[0]["changes"], key=lambda c: c["id"]) if turn else []
    got = [(c["path"], c["tool"], c["tool_call"], c["before"] is None, c["proof"]) for c in changes]
    check("the window holds exactly the create, the two edits and the sed with their call ids",
          got == want, f"got  {got}\nwant {want}")
    if len(changes) == 4:
        check("the edit of notes.txt starts from the create's bytes",
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
    reqs = [r for r in requests(log) if offered in json.dumps(r["body"].get("tools", []))]

    def read_result(r):
        return [m.get("content") for m in r["body"].get("messages", [])
                if m.get("role") == "tool" and m.get("tool_call_id") == read_call]
    after = [r for r in reqs if read_result(r)]
    results = read_result(after[0]) if after else []
    if hint_in_result:
        check("the request after the read of notes.txt carries rewind's hint in the read result",
              any(hint in json.dumps(c) for c in results), results)
    else:
        said = [m for m in (after[0]["body"].get("messages", []) if after else [])
                if hint in json.dumps(m)]
        check("the request after the read of notes.txt carries rewind's hint", said != [],
              results)
    check("no request before that read carries the hint",
          not any(hint in json.dumps(r["body"]) for r in reqs if not read_result(r)))
    return windows


def finish(outdir):
    os.makedirs(outdir, exist_ok=True)
    for k, v in counts.items():
        with open(os.path.join(outdir, k), "w") as f:
            f.write(str(v))
    return 1 if counts["fail"] else 0
