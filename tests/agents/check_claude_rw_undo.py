#!/usr/bin/env python3
"""Claude Code's `/rw-undo` in its normal permission modes (issue 45, item 2), against the real
agent: `rewind init claude-code --home <dir>` in a scratch workspace (the home chosen at init,
REWIND_HOME unset, no `rewind` on the agent's PATH: the hooks run the binary by its absolute
path), one turn of fake_anthropic.py's default script (`--permission-mode acceptEdits`), then
`/rw-undo` typed in `--permission-mode default` (refused: the user's mid-turn line; nothing
written, no model request; the answer names the session and the turn), then `/rw-undo --force`
in `acceptEdits` (README.md back byte-exact, notes.txt gone; the answer names both again).

Usage: check_claude_rw_undo.py <claude binary> <rewind binary> <scratch dir>
Prints PASS/FAIL lines; writes the counts to <scratch dir>/pass and /fail; exits 1 on a FAIL."""
import json
import os
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CLAUDE, RW, TMP = (os.path.abspath(a) for a in sys.argv[1:4])
WS, HOME, RHOME = (os.path.join(TMP, d) for d in ("ws", "home", "rewind-home"))
LOG, PORT = os.path.join(TMP, "requests.jsonl"), os.path.join(TMP, "port")
PROMPT = "create notes.txt, edit it, read it, uppercase with sed"
counts = {"pass": 0, "fail": 0}


def check(what, cond, detail=""):
    counts["pass" if cond else "fail"] += 1
    print(f"  {'PASS' if cond else 'FAIL'}  {what}")
    if not cond and detail:
        print("        " + str(detail)[:3000].replace("\n", "\n        "))
    return cond


def content(name):
    try:
        with open(os.path.join(WS, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def model_requests():
    if not os.path.exists(LOG):
        return 0
    with open(LOG) as f:
        return sum(1 for line in f if line.strip())


def main():
    for d in (WS, HOME):
        os.makedirs(d)
    git = ["git", "-C", WS]
    subprocess.run(["git", "init", "-q", WS], check=True)
    subprocess.run(git + ["config", "user.email", "e2e@example.invalid"], check=True)
    subprocess.run(git + ["config", "user.name", "e2e"], check=True)
    with open(os.path.join(WS, "README.md"), "w") as f:
        f.write("# e2e\n")
    subprocess.run(git + ["add", "README.md"], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)
    env = {k: v for k, v in os.environ.items() if k != "REWIND_HOME"}
    # No rewind on the agent's PATH: the hooks must run the binary init wrote in.
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":")
                           if not os.path.exists(os.path.join(p, "rewind")))
    r = subprocess.run([RW, "init", "claude-code", "--home", RHOME], cwd=WS, env=env,
                       capture_output=True, text=True)
    if not check("rewind init claude-code --home <dir>", r.returncode == 0, r.stderr):
        return
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_anthropic.py"), WS, LOG, PORT])
    try:
        for _ in range(100):
            if os.path.exists(PORT) and os.path.getsize(PORT):
                break
            time.sleep(0.1)
        env.update(HOME=HOME, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{open(PORT).read().strip()}",
                   ANTHROPIC_API_KEY="sk-ant-e2e-dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
                   CLAUDE_CODE_ENABLE_TELEMETRY="0")
        sid = str(uuid.uuid4())
        common = ["--output-format", "json", "--setting-sources", "project", "--strict-mcp-config"]

        def claude(prompt, *args):
            r = subprocess.run([CLAUDE, "-p", prompt, *args, *common], cwd=WS, env=env,
                               capture_output=True, text=True, timeout=180)
            try:
                return r.returncode, json.loads(r.stdout)
            except ValueError:
                return r.returncode, {"stdout": r.stdout[-2000:], "stderr": r.stderr[-2000:]}

        rc, out = claude(PROMPT, "--session-id", sid, "--permission-mode", "acceptEdits",
                         "--allowedTools", "Write", "Edit", "Read", "Bash")
        check("the turn ran (claude -p exited 0)", rc == 0 and out.get("is_error") is False, out)
        end = (content("README.md"), content("notes.txt"))
        check("the turn left README.md edited and notes.txt created",
              end == (b"# e2e edited\n", b"ONE\nTWO\nuser line\n"), end)
        before = model_requests()

        rc, out = claude("/rw-undo", "--resume", sid, "--permission-mode", "default")
        said = str(out.get("result", ""))
        check("/rw-undo in `default` mode: answered by rewind, naming the session and the turn",
              rc == 0 and "rewind did not undo turn" in said and sid in said
              and f'("{PROMPT}")' in said, out)
        check("/rw-undo refused over the user's mid-turn line (later-change) and wrote nothing",
              "later-change" in said and (content("README.md"), content("notes.txt")) == end, said)
        check("/rw-undo called no model", model_requests() == before, model_requests() - before)

        rc, out = claude("/rw-undo --force", "--resume", sid, "--permission-mode", "acceptEdits")
        said = str(out.get("result", ""))
        check("/rw-undo --force in `acceptEdits` mode: says it undid the turn of the session",
              rc == 0 and "rewind undid turn" in said and sid in said and f'("{PROMPT}")' in said, out)
        check("/rw-undo --force: README.md byte-exact the committed text, notes.txt gone",
              (content("README.md"), content("notes.txt")) == (b"# e2e\n", None),
              (content("README.md"), content("notes.txt")))
        check("/rw-undo --force called no model", model_requests() == before, model_requests() - before)
    finally:
        srv.kill()


if __name__ == "__main__":
    try:
        main()
    finally:
        for k, v in counts.items():
            with open(os.path.join(TMP, k), "w") as f:
                f.write(str(v))
    sys.exit(1 if counts["fail"] else 0)
