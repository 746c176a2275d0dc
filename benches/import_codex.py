#!/usr/bin/env python3
"""Benchmark of `rewind import codex` (issue 46; not a test): a synthetic Codex rollout of TURNS
turns in one session, each a user prompt and EDITS `apply_patch` calls (Update File, one line
changed) on files of a FILES-file committed workspace, written line for line in the shapes
Codex 0.169.0 writes (fixtures/codex/real-0.169.0: `session_meta` with the git commit,
`task_started`, `turn_context`, the `custom_tool_call`, its `item_completed` FileChange with
the unified diff, the call's output, the closing answer, `task_complete`). Every update is
provable: a file's first patch applies to the recorded commit, each later one to the version
the previous one made.

Times the import (`--dry-run` and a real import, a fresh home each round) against reading
the same records with the tools at hand: one pass of Python over the rollout (`json.loads` of
every line) plus `git cat-file --batch` of every touched file's committed blob, in the same
run, rounds interleaved.

Usage: benches/import_codex.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import json, os, shutil, subprocess, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()

tmp = tempfile.mkdtemp(prefix="rewind-codex-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
codex = os.path.join(tmp, "codex")
os.makedirs(ws)
env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@b")


def git(*args, **kw):
    return subprocess.run(["git", "-C", ws, *args], check=True, env=env, capture_output=True,
                          text=True, **kw).stdout


names = [f"src/f{i}.txt" for i in range(FILES)]
lines_of = {n: [f"line {j} of {n}\n" for j in range(60)] for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)
    with open(os.path.join(ws, n), "w") as f:
        f.write("".join(lines_of[n]))
git("init", "-q")
git("add", "-A")
git("commit", "-qm", "init")
commit = git("rev-parse", "HEAD").strip()

sid = str(uuid.uuid4())
clock = [1795941825_000]


def stamp():
    clock[0] += 7
    t = clock[0]
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t // 1000)) + f".{t % 1000:03d}Z"


out = []


def line(kind, payload):
    out.append({"timestamp": stamp(), "ordinal": len(out), "type": kind, "payload": payload})


line("session_meta", {"session_id": sid, "id": sid, "timestamp": stamp(), "cwd": ws,
                      "originator": "codex_exec", "cli_version": "0.169.0", "source": "exec",
                      "model_provider": "bench", "git": {"commit_hash": commit, "branch": "master"}})
n_edit = 0
touched_files = set()
for t in range(TURNS):
    turn = str(uuid.uuid4())
    line("event_msg", {"type": "task_started", "turn_id": turn, "root_turn_id": turn,
                       "started_at": clock[0] // 1000, "model_context_window": 258400})
    line("turn_context", {"turn_id": turn, "root_turn_id": turn, "cwd": ws, "approval_policy": "never",
                          "model": "gpt-5.5"})
    line("response_item", {"type": "message", "id": f"msg_{turn}", "role": "user",
                           "content": [{"type": "input_text", "text": f"turn {t}"}]})
    for k in range(EDITS):
        rel = names[(t * EDITS + k) % FILES]
        touched_files.add(rel)
        at = t % 60
        old = lines_of[rel][at]
        new = old.rstrip("\n") + f" (turn {t})\n"
        lines_of[rel][at] = new
        n_edit += 1
        call = f"call_{n_edit:06d}"
        patch = f"*** Begin Patch\n*** Update File: {rel}\n@@\n-{old}+{new}*** End Patch\n"
        diff = f"@@ -{at + 1} +{at + 1} @@\n-{old}+{new}"
        meta = {"turn_id": turn}
        line("response_item", {"type": "custom_tool_call", "id": f"ctc_{call}", "status": "completed",
                               "call_id": call, "name": "apply_patch", "input": patch,
                               "internal_chat_message_metadata_passthrough": meta})
        line("event_msg", {"type": "item_completed", "thread_id": sid, "turn_id": turn,
                           "item": {"type": "FileChange", "id": call,
                                    "changes": {f"{ws}/{rel}": {"type": "update", "unified_diff": diff,
                                                                "move_path": None}},
                                    "status": "completed",
                                    "stdout": f"Success. Updated the following files:\nM {rel}\n",
                                    "stderr": ""}})
        line("response_item", {"type": "custom_tool_call_output", "id": f"ctco_{call}", "call_id": call,
                               "output": f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. "
                                         f"Updated the following files:\nM {rel}\n",
                               "internal_chat_message_metadata_passthrough": meta})
    line("response_item", {"type": "message", "status": "completed", "id": f"msg_done_{turn}",
                           "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})
    line("event_msg", {"type": "task_complete", "root_turn_id": turn, "turn_id": turn,
                       "last_agent_message": "done"})
day = os.path.join(codex, "sessions", "2026", "11", "29")
os.makedirs(day)
rollout = os.path.join(day, f"rollout-2026-11-29T08-00-00-{sid}.jsonl")
with open(rollout, "w") as f:
    for l in out:
        f.write(json.dumps(l) + "\n")
for n in names:  # the workspace as the session left it
    with open(os.path.join(ws, n), "w") as f:
        f.write("".join(lines_of[n]))
blob_ids = git("rev-parse", *[f"{commit}:{n}" for n in sorted(touched_files)]).split()


def tools_pass():
    t0 = time.perf_counter()
    import_rounds.read_jsonl(rollout)
    r = subprocess.run(["git", "-C", ws, "cat-file", "--batch"], input="\n".join(blob_ids) + "\n",
                       capture_output=True, text=True, check=True)
    assert r.stdout.count(" blob ") == len(blob_ids)
    return time.perf_counter() - t0


import_rounds.run(ROUNDS, tools_pass,
                  lambda dry: import_rounds.rewind_import(rewind, "codex", ["--codex-home", codex], ws, os.path.join(tmp, "home"),
                                            n_edit, dry),
    f"codex: {TURNS} turns, {n_edit} apply_patch updates of {len(touched_files)} files, rollout "
      f"{os.path.getsize(rollout) / 1e6:.1f} MB")
shutil.rmtree(tmp)
