#!/usr/bin/env python3
"""Benchmark of `rewind import qwen` (issue 46's importer rows; not a test): a synthetic Qwen
Code chat of TURNS turns in the shape Qwen Code 0.24.4 writes (fixtures/qwen/real-0.24.4):
each turn a prompt (`real_user`), its `file_history_snapshot` (backups named as Claude Code
names them, `<sha256(path)[:16]>@v<n>`, a new version of each tracked file changed since its
last backup), EDITS `edit` calls with their `functionResponse`s, and the closing answer, on
files of a FILES-file workspace. Times the import and its `--dry-run` (a fresh home each
round) against one plain pass of Python reading the same JSONL (`json.loads` of every line)
and every backup, in the same run, as benches/import_claude.py does for Claude Code.

Usage: benches/import_qwen.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import hashlib, json, os, shutil, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()

tmp = tempfile.mkdtemp(prefix="rewind-qwen-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
os.makedirs(ws)
qwen = os.path.join(tmp, "qwen")
sid = str(uuid.uuid4())
hist = os.path.join(qwen, "file-history", sid)
os.makedirs(hist)
chats = os.path.join(qwen, "projects", "".join(c if c.isalnum() else "-" for c in ws), "chats")
os.makedirs(chats)

names = [f"src/f{i}.txt" for i in range(FILES)]
text = {n: "".join(f"line {j} of {n}\n" for j in range(60)) for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)


def backup(rel, version, content):
    name = hashlib.sha256(f"{ws}/{rel}".encode()).hexdigest()[:16] + f"@v{version}"
    with open(os.path.join(hist, name), "w") as f:
        f.write(content)
    return name


def line(kind, provenance, **rest):
    return dict({"uuid": str(uuid.uuid4()), "sessionId": sid, "timestamp": "2026-11-29T14:47:33.662Z",
                 "type": kind, "provenance": provenance, "cwd": ws, "version": "0.24.4"}, **rest)


tracked = {}  # rel -> (version, backup name)
dirty = set()
lines = []
n_edit = 0
for t in range(TURNS):
    prompt = f"{sid}########{t}"
    lines.append(line("user", "real_user", message={"role": "user", "parts": [{"text": f"turn {t}"}]}))
    for rel in dirty:  # a new backup of each tracked file changed since its last one
        v = tracked[rel][0]
        tracked[rel] = (v + 1, backup(rel, v + 1, text[rel]))
    touched = [names[(t * EDITS + k) % FILES] for k in range(EDITS)]
    for rel in dict.fromkeys(touched):
        if rel not in tracked:
            tracked[rel] = (1, backup(rel, 1, text[rel]))
    lines.append(line("system", "system", subtype="file_history_snapshot", systemPayload={"snapshots": [
        {"promptId": prompt, "timestamp": "2026-11-29T14:47:33.712Z",
         "trackedFileBackups": {r: {"backupFileName": b, "version": v, "backupTime": "2026-11-29T14:47:33.712Z"}
                                for r, (v, b) in tracked.items()}}]}))
    for rel in touched:
        n_edit += 1
        old = f"line {t % 60} of {rel}\n"
        new = f"line {t % 60} of {rel} (turn {t})\n"
        if old not in text[rel]:
            old = text[rel].splitlines(keepends=True)[0]
            new = old.rstrip("\n") + f" (turn {t})\n"
        call = f"call_{n_edit:06d}"
        args = {"file_path": f"{ws}/{rel}", "old_string": old, "new_string": new}
        lines.append(line("assistant", "assistant_output", message={
            "role": "model", "parts": [{"functionCall": {"id": call, "name": "edit", "args": args}}]}))
        lines.append(line("tool_result", "tool_result", message={
            "role": "user", "parts": [{"functionResponse": {"id": call, "name": "edit",
                                                            "response": {"output": f"The file: {ws}/{rel} has been updated."}}}]},
            toolCallResult={"callId": call, "status": "success"}))
        text[rel] = text[rel].replace(old, new, 1)
    dirty = set(touched)
    lines.append(line("assistant", "assistant_output", message={"role": "model", "parts": [{"text": "done"}]}))
transcript = os.path.join(chats, sid + ".jsonl")
with open(transcript, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
import_rounds.workspace(ws, {n: text[n] for n in names})


def python_pass():
    t0 = time.perf_counter()
    import_rounds.read_jsonl(transcript)
    import_rounds.read_dir(hist)
    return time.perf_counter() - t0


home = os.path.join(tmp, "home")
import_rounds.run(
    ROUNDS, python_pass,
    lambda dry: import_rounds.rewind_import(rewind, "qwen", ["--qwen-dir", qwen], ws, home, n_edit, dry),
    f"qwen 0.24.4: {TURNS} turns, {n_edit} edits of {FILES} files, chat "
    f"{os.path.getsize(transcript) / 1e6:.1f} MB, {len(os.listdir(hist))} backups",
    anchor_name="python")
shutil.rmtree(tmp)
