#!/usr/bin/env python3
"""`rewind import <agent>` of what the real agent itself recorded in tests/agents/run.sh's
scenario, into a fresh rewind home (so nothing the hooks recorded is used), then an undo of
every imported turn, compared byte-exact with the agent's own restore where it has one and
with the workspace before the run otherwise (issue 45).

Usage:
  check_import.py save <workspace> <dir>      keep the workspace's files (not .git) in <dir>
  check_import.py put <workspace> <dir>       make the workspace's files those of a `save`
  check_import.py <agent>                     the checks; env below

Env: WS (workspace), RW (rewind binary), RESULTS (where pass/fail counts go), FRESH (the
fresh rewind home, created here), END (a `save` of the workspace as the agent left it; it is
put back first: the hook checks have undone and edited it since), BEFORE (a `save` of the
workspace before the run), AGENT_HOME (the agent's HOME, or CODEX_HOME for codex), SID (the
agent's session id, for claude-code and gemini), CLAUDE (the claude binary, for claude-code),
COPILOT (the copilot binary, for copilot).
The workspace is left as the agent left it. Exits 1 when a check failed."""
import json
import os
import shutil
import subprocess
import sys

from common import check, finish


def files(root):
    """{relative path: bytes} of every file under `root`, .git left out."""
    out = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not (d == root and x == ".git")]
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = f.read()
    return out


def put(root, want):
    """Make the files under `root` (.git left out) exactly `want`."""
    for rel in set(files(root)) - set(want):
        os.remove(os.path.join(root, rel))
    for rel, data in want.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if not os.path.exists(p) or open(p, "rb").read() != data:
            with open(p, "wb") as f:
                f.write(data)


def save(ws, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(ws, out, ignore=lambda d, names: [".git"] if d == ws else [])


def differences(got, want):
    """The paths whose bytes differ between two `files()` maps, with both sides."""
    return {p: (got.get(p), want.get(p)) for p in sorted(set(got) | set(want))
            if got.get(p) != want.get(p)}


def rewind(*args):
    env = dict(os.environ, REWIND_HOME=os.environ["FRESH"])
    r = subprocess.run([os.environ["RW"], *args], cwd=os.environ["WS"], env=env,
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def import_and_undo(agent, sessions, want_derived, args=()):
    """`rewind import <agent>` into the fresh home: one session per id in `sessions` (None:
    any number), each imported (or, with nothing to import, up to date), at least
    `want_derived` derived changes; then each session's import windows undone, newest first,
    with `--force` (the user's line and the shell command's edit came after the agent's
    edits) and `--skip-unsafe`: the paths skipped as unproven must be exactly UNPROVEN's, and
    a window of metadata-only changes only (a shell command's) must refuse whole."""
    rc, so, se = rewind("--json", "import", agent, *args)
    try:
        report = json.loads(so)
    except ValueError:
        report = {}
    got = report.get("sessions", [])
    check(f"rewind import {agent} (fresh home) exits 0 and imports the session", rc == 0
          and any(s["status"] == "imported" for s in got)
          and all(s["status"] in ("imported", "up-to-date") for s in got)
          and (sessions is None or sorted(s["id"] for s in got) == sorted(sessions)),
          (rc, so[:3000], se))
    derived = sum(s.get("derived", 0) for s in got)
    check(f"the import proves at least {want_derived} changes from the agent's own records "
          f"(derived {derived}, metadata-only {sum(s.get('metadata_only', 0) for s in got)})",
          derived >= want_derived, json.dumps(got, indent=1)[:3000])
    skipped = set()
    for s in (s for s in got if s["status"] == "imported"):
        rc, so, se = rewind("--json", "log", "--session", s["id"])
        try:
            windows = json.loads(so)["sessions"][0]["windows"]
        except (ValueError, KeyError, IndexError):
            windows = []
        imported = sorted((w for w in windows if w.get("kind") == "import"),
                          key=lambda w: w["id"], reverse=True)
        check(f"the imported session {s['id'][:8]}… has its import windows in the log",
              imported != [], (rc, so[:3000], se))
        for w in imported:
            rc, so, se = rewind("--json", "undo", "--session", s["id"], "--window", str(w["id"]),
                                "--force", "--skip-unsafe")
            if all(c["proof"] == "metadata-only" for c in w["changes"]):
                check(f"undo of imported window {w['id']} (metadata-only: "
                      f"{sorted({c.get('reason') for c in w['changes']})}) refuses, exit 3, "
                      "unproven", rc == 3 and '"unproven"' in so, (rc, so[:3000], se))
                continue
            check(f"rewind undo --session <imported> --window {w['id']} --force --skip-unsafe "
                  "exits 0", rc == 0, (rc, so[:3000], se))
            try:
                skipped |= {f["path"] for f in json.loads(so)["files"]
                            if f["outcome"] == "skipped" and f["conflict"] == "unproven"}
            except (ValueError, KeyError):
                pass
    want = set(UNPROVEN.get(agent, {}))
    check(f"the paths undo skipped as unproven are exactly those the agent's records cannot "
          f"prove: {sorted(want) or 'none'}", skipped == want, sorted(skipped))
    return report


def claude_code(ws, end):
    """Claude Code's own restore: `claude --resume <session> --rewind-files <prompt uuid>`
    of the session's first prompt, against the workspace as the agent left it."""
    sid, home = os.environ["SID"], os.environ["AGENT_HOME"]
    projects = os.path.join(home, ".claude", "projects")
    transcript = [os.path.join(d, n) for d, _, ns in os.walk(projects) for n in ns
                  if n == f"{sid}.jsonl"]
    prompts = []
    for line in open(transcript[0]) if transcript else []:
        v = json.loads(line)
        content = (v.get("message") or {}).get("content")
        if v.get("type") == "user" and not v.get("isMeta") and isinstance(content, str):
            prompts.append(v["uuid"])
    history = os.path.join(home, ".claude", "file-history", sid)
    check("Claude Code kept the transcript and file-history backups of the session",
          len(prompts) == 1 and os.path.isdir(history) and os.listdir(history),
          (transcript, prompts))
    if not prompts:
        return None
    env = dict(os.environ, HOME=home, ANTHROPIC_API_KEY="sk-ant-e2e-dummy",
               ANTHROPIC_BASE_URL="http://127.0.0.1:9", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CODE_ENABLE_TELEMETRY="0", CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="1")
    env.pop("REWIND_HOME", None)
    r = subprocess.run([os.environ["CLAUDE"], "--resume", sid, "--rewind-files", prompts[0]],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    check("claude --resume <session> --rewind-files <prompt> exits 0", r.returncode == 0,
          (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    own = files(ws)
    check("Claude Code's own restore changed the workspace", own != end,
          differences(own, end))
    put(ws, end)
    import_and_undo("claude-code", [sid], 3, ("--claude-dir", os.path.join(home, ".claude")))
    return own


def copilot(ws, end):
    """Copilot CLI's own restore: `session.history.rewind` to the session's first user message
    through `copilot --headless --stdio` (copilot_rewind.py), against the workspace as the
    agent left it."""
    from copilot_rewind import rewind as copilot_rewind
    home = os.environ["AGENT_HOME"]
    state = os.path.join(home, ".copilot", "session-state")
    sessions = [d for d in os.listdir(state) if os.path.isfile(os.path.join(state, d, "events.jsonl"))]
    index = os.path.join(state, sessions[0], "rewind-file-snapshots", "index.json") \
        if len(sessions) == 1 else ""
    check("Copilot CLI kept one session's events and its rewind snapshots",
          len(sessions) == 1 and os.path.isfile(index), sessions)
    if not os.path.isfile(index):
        return None
    sid = sessions[0]
    # Copilot's rewind truncates the session's events and drops the snapshots it restored
    # from: the records are imported from a copy taken before.
    records = os.path.join(os.environ["RESULTS"], "copilot-records")
    shutil.rmtree(records, ignore_errors=True)
    shutil.copytree(state, os.path.join(records, "session-state"), symlinks=True)
    env = {k: v for k, v in os.environ.items() if k != "REWIND_HOME"}
    env.update(HOME=home, COPILOT_HOME=os.path.join(home, ".copilot"), COPILOT_OFFLINE="true",
               COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:9/v1",
               COPILOT_PROVIDER_API_KEY="e2e-dummy", COPILOT_MODEL="e2e-model",
               COPILOT_AUTO_UPDATE="false")
    try:
        points, result = copilot_rewind(os.environ["COPILOT"], sid, env, ws)
    except (RuntimeError, OSError, ValueError) as e:
        points, result = [], {"error": str(e)}
    check("copilot --headless: session.history.rewind to the first user message succeeds and "
          "skips no file", result is not None and result.get("outcome") == "success"
          and not result.get("skippedFiles") and len(points) == 1, (points, result))
    own = files(ws)
    check("Copilot's own restore changed the workspace", own != end, differences(own, end))
    put(ws, end)
    import_and_undo("copilot", [sid], 3, ("--copilot-home", records))
    return own


# What the comparison leaves out: the agent's own configuration, which run.sh rewrites for
# each run (OpenCode's opencode.json gets the fake server's port, .opencode/ the plugin's
# packages OpenCode installs at start).
NOT_COMPARED = {"opencode": ("opencode.json", ".opencode/"), "codex": (".codex/",),
                "claude-code": (".claude/",), "gemini": (".gemini/",), "qwen": (".qwen/",), "pi": (".pi/",),
                "copilot": (".github/",)}

# Where each agent's records are, as `rewind import <agent>` options (AGENT_HOME: the
# agent's HOME, CODEX_HOME for Codex).
SOURCES = {"opencode": ("--data-dir", ".local/share/opencode"), "codex": ("--codex-home", ""),
           "gemini": ("--gemini-dir", ".gemini"), "qwen": ("--qwen-dir", ".qwen"),
           "pi": ("--pi-dir", ".pi/agent"), "cline": ("--cline-dir", ".cline/data")}


# The paths of each scenario whose changes the agent's own records cannot prove, and why:
# undo leaves them as the agent left them.
UNPROVEN = {"codex": {
    "README.md": "edited again by the heredoc `apply_patch` inside a shell command (shell-command)",
    "moved.txt": "the heredoc patch's `Move to` (unsupported-patch)",
    "move-me.txt": "the heredoc patch's `Move to` (unsupported-patch)",
    "extra.txt": "the heredoc patch's `Add File`: the before state is not recorded",
}, "pi": {
    "notes.txt": "created by a `write` that nothing read before: pi's record does not say the "
                 "file was not there (no-snapshot)",
}}


def compared(agent, tree):
    return {p: b for p, b in tree.items() if not p.startswith(NOT_COMPARED.get(agent, ()))}


def main():
    if sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3])
        return 0
    if sys.argv[1] == "put":
        put(sys.argv[2], files(sys.argv[3]))
        return 0
    agent, ws = sys.argv[1], os.environ["WS"]
    end = files(os.environ["END"])
    put(ws, end)
    shutil.rmtree(os.environ["FRESH"], ignore_errors=True)
    if agent == "claude-code":
        want, whose = claude_code(ws, end), "Claude Code's own restore (--rewind-files)"
    elif agent == "copilot":
        want, whose = copilot(ws, end), "Copilot CLI's own restore (session.history.rewind)"
    elif agent in SOURCES:
        flag, sub = SOURCES[agent]
        import_and_undo(agent, None, 2,
                        (flag, os.path.join(os.environ["AGENT_HOME"], sub).rstrip("/")))
        want, whose = files(os.environ["BEFORE"]), "the workspace before the run"
        for p in UNPROVEN.get(agent, {}):
            if p in end:
                want[p] = end[p]
            else:
                want.pop(p, None)
        if UNPROVEN.get(agent):
            whose += " (the unproven paths as the agent left them)"
        if agent == "gemini":
            whose = "what Gemini's restore of its first checkpoint (`/restore`'s git commands) wrote"
        if agent == "cline":
            whose = "what Cline's own restore of its run's checkpoint wrote"
    else:
        raise SystemExit(f"unknown agent {agent}")
    if want is not None:
        got, want = compared(agent, files(ws)), compared(agent, want)
        check(f"after undo of the imported turns every file is byte-exact {whose}", got == want,
              differences(got, want))
    put(ws, end)
    return finish(os.environ["RESULTS"])


if __name__ == "__main__":
    raise SystemExit(main())
