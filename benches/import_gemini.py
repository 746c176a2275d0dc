#!/usr/bin/env python3
"""Benchmark of `rewind import gemini` (issue 46; not a test): a synthetic Gemini CLI project of
TURNS prompts in one session, each with EDITS `replace` calls (one line changed) on files of a
FILES-file workspace, recorded the way Gemini CLI 0.61.0 records them with checkpointing on
(fixtures/gemini/real-0.61.0): before each call the whole worktree committed into the shadow
repository `history/<project>/.git`, a checkpoint `tmp/<project>/checkpoints/<time>-<file>-
replace.json` holding the tool call, that commit and the prompt's id, and the session log
`tmp/<project>/chats/session-*.jsonl` recording each call's `success`. Every call is
provable: the next checkpoint's commit holds its result (the last one: the session log).

Times the import (`--dry-run` and a real import, a fresh home each round) against reading
the same records with the tools at hand: one pass of Python over every checkpoint and the
session log (`json.loads`) plus `git cat-file --batch` of the edited file in every checkpoint
commit, in the same run, rounds interleaved.

Usage: benches/import_gemini.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import json, os, shutil, subprocess, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()

tmp = tempfile.mkdtemp(prefix="rewind-gemini-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
gemini = os.path.join(tmp, "gemini")
project = "ws"
shadow = os.path.join(gemini, "history", project, ".git")
pdir = os.path.join(gemini, "tmp", project)
for d in (ws, os.path.join(pdir, "checkpoints"), os.path.join(pdir, "chats"), os.path.dirname(shadow)):
    os.makedirs(d)
for d in (pdir, os.path.dirname(shadow)):
    with open(os.path.join(d, ".project_root"), "w") as f:
        f.write(ws)
with open(os.path.join(gemini, "projects.json"), "w") as f:
    json.dump({"projects": {ws: project}}, f)
env = dict(os.environ, GIT_AUTHOR_NAME="Gemini CLI", GIT_AUTHOR_EMAIL="gemini-cli@google.com",
           GIT_COMMITTER_NAME="Gemini CLI", GIT_COMMITTER_EMAIL="gemini-cli@google.com")
shadow_git = ["git", "--git-dir", shadow, "--work-tree", ws]


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, env=env, capture_output=True, text=True, **kw).stdout


run("git", "init", "-q", "--bare", shadow)
run("git", "--git-dir", shadow, "config", "core.bare", "false")

names = [f"src/f{i}.txt" for i in range(FILES)]
lines_of = {n: [f"line {j} of {n}\n" for j in range(60)] for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)
    with open(os.path.join(ws, n), "w") as f:
        f.write("".join(lines_of[n]))

sid = str(uuid.uuid4())
clock = [1795944170_000]


def stamp(sep=":"):
    clock[0] += 1009
    t = clock[0]
    return time.strftime(f"%Y-%m-%dT%H{sep}%M{sep}%S", time.gmtime(t // 1000)) + f"{'.' if sep == ':' else '_'}{t % 1000:03d}Z"


chat = [{"sessionId": sid, "projectHash": "bench", "startTime": stamp(), "lastUpdated": stamp(), "kind": "main"}]
n_edit = 0
specs = []
for t in range(TURNS):
    prompt = f"{sid}########{t}"
    chat.append({"id": str(uuid.uuid4()), "timestamp": stamp(), "type": "user", "content": [{"text": f"turn {t}"}]})
    for k in range(EDITS):
        rel = names[(t * EDITS + k) % FILES]
        at = t % 60
        old = lines_of[rel][at]
        new = old.rstrip("\n") + f" (turn {t})\n"
        run(*shadow_git, "add", "-A")
        run(*shadow_git, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"Snapshot for replace")
        commit = run("git", "--git-dir", shadow, "rev-parse", "HEAD").strip()
        specs.append(f"{commit}:{rel}")
        args = {"file_path": f"{ws}/{rel}", "old_string": old.rstrip("\n"), "new_string": new.rstrip("\n"),
                "instruction": "bench", "allow_multiple": False}
        call = {"name": "replace", "args": args}
        name = f"{stamp('-')}-{os.path.basename(rel)}-replace.json"
        with open(os.path.join(pdir, "checkpoints", name), "w") as f:
            json.dump({"history": [], "clientHistory": [], "toolCall": call, "commitHash": commit,
                       "messageId": prompt}, f)
        lines_of[rel][at] = new
        with open(os.path.join(ws, rel), "w") as f:
            f.write("".join(lines_of[rel]))
        n_edit += 1
        cid = f"replace__replace_{clock[0]}_{k}"
        chat.append({"id": str(uuid.uuid4()), "timestamp": stamp(), "type": "gemini", "content": "",
                     "toolCalls": [{"id": cid, "name": "replace", "args": args, "status": "success",
                                    "timestamp": stamp(), "result": [{"functionResponse": {
                                        "id": cid, "name": "replace",
                                        "response": {"output": "Successfully modified file"}}}]}]})
log = os.path.join(pdir, "chats", f"session-2026-11-29T09-22-{sid[:8]}.jsonl")
with open(log, "w") as f:
    for l in chat:
        f.write(json.dumps(l) + "\n")
checkpoints = sorted(os.listdir(os.path.join(pdir, "checkpoints")))


def tools_pass():
    t0 = time.perf_counter()
    for name in checkpoints:
        with open(os.path.join(pdir, "checkpoints", name)) as f:
            json.load(f)
    import_rounds.read_jsonl(log)
    r = subprocess.run(["git", "--git-dir", shadow, "cat-file", "--batch"], input="\n".join(specs) + "\n",
                       capture_output=True, text=True, check=True)
    assert r.stdout.count(" blob ") == len(specs)
    return time.perf_counter() - t0


import_rounds.run(ROUNDS, tools_pass,
                  lambda dry: import_rounds.rewind_import(rewind, "gemini", ["--gemini-dir", gemini], ws, os.path.join(tmp, "home"),
                                            n_edit, dry),
    f"gemini: {TURNS} turns, {n_edit} replace calls, {len(checkpoints)} checkpoints, shadow "
      f"commits of {FILES} files")
shutil.rmtree(tmp)
