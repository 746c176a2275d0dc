"""What capture_claude_history.py and capture_claude_subagent.py share: drive the real Claude
Code headless (`claude -p` turns of one session, `--session-id` then `--resume`, file
checkpointing on) against one of fake_anthropic.py's scenarios in a scratch git workspace,
with the user appending a line to notes.txt before the second turn; then keep everything
Claude Code wrote for the session under `projects/<escaped cwd>/` (the transcript and what lies
beside it, such as subagents' transcripts), its pre-edit backups (`file-history/`) and the
workspace at the end under <out dir>, with a README that lists it.

The scratch workspace path becomes /REWIND_FIXTURE_WS (and its escaped form
-REWIND-FIXTURE-WS); Claude Code names each backup `<sha256(absolute path)[:16]>@v<n>`, so the
backups are renamed after the placeholder path too (tests/it/import_claude.rs substitutes its
own workspace and renames them back). Nothing else is changed. `KEEP=1` keeps the scratch dir."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
PLACEHOLDER = "/REWIND_FIXTURE_WS"


def slug(path):
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def name_hash(path):
    return hashlib.sha256(path.encode()).hexdigest()[:16]


def prompts_of(transcript):
    """The uuids of the transcript's user prompts, in order."""
    out = []
    with open(transcript) as f:
        for line in f:
            v = json.loads(line)
            content = (v.get("message") or {}).get("content")
            if v.get("type") == "user" and not v.get("isMeta") and isinstance(content, str):
                out.append(v["uuid"])
    return out


def rewind_each_prompt(claude, ws, env, sid, files, transcript):
    """{prompt uuid: {file: text or None}} as `claude --rewind-files` restores them, the
    workspace's files put back after each."""
    end = {}
    for p in files:
        path = os.path.join(ws, p)
        end[p] = open(path, "rb").read() if os.path.exists(path) else None
    out = {}
    for prompt in prompts_of(transcript):
        r = subprocess.run([claude, "--resume", sid, "--rewind-files", prompt], cwd=ws, env=env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"claude --rewind-files {prompt} failed ({r.returncode}): {r.stdout} {r.stderr}")
        got = {}
        for p in files:
            path = os.path.join(ws, p)
            got[p] = open(path).read() if os.path.exists(path) else None
            if end[p] is None:
                if os.path.exists(path):
                    os.remove(path)
            else:
                with open(path, "wb") as f:
                    f.write(end[p])
        out[prompt] = got
    return out


def capture(script, scenario, files, committed, tools, prompts, timeout, title, story,
            rewind_files=False):
    """`committed`: {name: text} committed in the workspace before the run; `files`: the
    workspace paths whose backups are renamed; `story`: the README's account of the turns.
    `rewind_files`: also keep, per prompt, what Claude Code's own restore (`claude --resume
    <session> --rewind-files <prompt uuid>`) puts in `files` (`rewind-files.json`: {prompt
    uuid: {file: text, or null when it removes the file}}), the workspace put back to its end
    state after each."""
    claude, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix=f"rewind-cc-{scenario}.")
    ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "home")
    os.makedirs(ws)
    os.makedirs(home)
    ws = os.path.realpath(ws)
    git = ["git", "-C", ws]
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(git + ["config", "user.email", "e2e@example.invalid"], check=True)
    subprocess.run(git + ["config", "user.name", "e2e"], check=True)
    for name, text in committed.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    subprocess.run(git + ["add", *committed], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)

    port_file, log = os.path.join(tmp, "port"), os.path.join(tmp, "requests.jsonl")
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_anthropic.py"), ws, log, port_file],
                           env=dict(os.environ, FAKE_SCENARIO=scenario))
    try:
        for _ in range(100):
            if os.path.exists(port_file) and os.path.getsize(port_file):
                break
            time.sleep(0.1)
        port = open(port_file).read().strip()
        env = dict(os.environ, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                   ANTHROPIC_API_KEY="sk-ant-e2e-dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
                   CLAUDE_CODE_ENABLE_TELEMETRY="0",
                   # `-p` keeps file history only with this (Claude Code 2.1.197's X_()).
                   CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="1")
        sid = str(uuid.uuid4())
        common = ["--output-format", "json", "--permission-mode", "acceptEdits",
                  "--allowedTools", *tools, "--setting-sources", "project", "--strict-mcp-config"]
        for i, prompt in enumerate(prompts):
            if i == 1:
                with open(os.path.join(ws, "notes.txt"), "a") as f:
                    f.write("user line\n")
            session = ["--session-id", sid] if i == 0 else ["--resume", sid]
            r = subprocess.run([claude, "-p", prompt, *session, *common], cwd=ws, env=env,
                               capture_output=True, text=True, timeout=timeout)
            if r.returncode != 0:
                sys.exit(f"claude -p {prompt!r} failed ({r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}")
    finally:
        srv.kill()

    claude_dir = os.path.join(home, ".claude")
    restored = {}
    if rewind_files:
        restored = rewind_each_prompt(claude, ws, env, sid, files,
                                      os.path.join(claude_dir, "projects", slug(ws), f"{sid}.jsonl"))
    if os.path.exists(out):
        shutil.rmtree(out)
    renames = {name_hash(os.path.join(ws, p)): name_hash(f"{PLACEHOLDER}/{p}") for p in files}

    def clean(s):
        s = s.replace(ws, PLACEHOLDER).replace(slug(ws), slug(PLACEHOLDER))
        for real, placeholder in renames.items():
            s = s.replace(f'"{real}@v', f'"{placeholder}@v').replace(f"/{real}@v", f"/{placeholder}@v")
        return s

    proj_src = os.path.join(claude_dir, "projects", slug(ws))
    proj_out = os.path.join(out, "projects", slug(PLACEHOLDER))
    for d, _, names in os.walk(proj_src):
        for n in names:
            dst = os.path.join(proj_out, os.path.relpath(os.path.join(d, n), proj_src))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(os.path.join(d, n)) as f:
                text = f.read()
            with open(dst, "w") as f:
                f.write(clean(text))
    hist_root = os.path.join(claude_dir, "file-history")
    for session in sorted(os.listdir(hist_root)) if os.path.isdir(hist_root) else []:
        hist_out = os.path.join(out, "file-history", session)
        os.makedirs(hist_out)
        for name in sorted(os.listdir(os.path.join(hist_root, session))):
            h, _, version = name.partition("@")
            shutil.copy2(os.path.join(hist_root, session, name),
                         os.path.join(hist_out, f"{renames.get(h, h)}@{version}"))
    shutil.copytree(ws, os.path.join(out, "workspace"), ignore=shutil.ignore_patterns(".git"))
    if rewind_files:
        with open(os.path.join(out, "rewind-files.json"), "w") as f:
            json.dump(restored, f, indent=1, sort_keys=True)
            f.write("\n")
    listing = sorted(clean(os.path.relpath(os.path.join(d, n), claude_dir))
                     for d, _, ns in os.walk(claude_dir) for n in ns)
    version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# Claude Code {version}: {title}

Captured by `tests/agents/{script}` (regenerate: run it with the pinned
Claude Code binary, `target/agents/claude-code-<version>/node_modules/.bin/claude`, and this
directory): {len(prompts)} `claude -p` turns of session `{sid}` (`--session-id`, then `--resume`),
with `CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=1` (without it `-p` keeps no file history),
against `tests/agents/fake_anthropic.py`'s `{scenario}` scenario: {story}

- `projects/-REWIND-FIXTURE-WS/`: the transcript (`{sid}.jsonl`) and everything beside it.
- `file-history/`: the backups, renamed after the placeholder path (see below).
- `workspace/`: the workspace files at the end of the run.
""" + ("""- `rewind-files.json`: per prompt uuid, what `claude --resume <session> --rewind-files
  <prompt uuid>` (Claude Code's own restore) left in each workspace file (`null`: removed),
  run against the end state of the workspace each time.
""" if rewind_files else "") + f"""
The scratch workspace path is replaced by `{PLACEHOLDER}` everywhere (and its escaped form
`-REWIND-FIXTURE-WS`); a backup's name is `<sha256(absolute path)[:16]>@v<n>`, so the backup
files are renamed after the placeholder path. Nothing else changed; nothing secret (a dummy
key against a fake model server).

Everything Claude Code wrote under its config dir during the run:
""" + "".join(f"- `{p}`\n" for p in listing))
    print(f"captured session {sid} into {out}")
    if os.environ.get("KEEP"):
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp)
