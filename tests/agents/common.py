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


def finish(outdir):
    os.makedirs(outdir, exist_ok=True)
    for k, v in counts.items():
        with open(os.path.join(outdir, k), "w") as f:
            f.write(str(v))
    return 1 if counts["fail"] else 0
