#!/usr/bin/env python3
"""Benchmark of `rewind import claude-code` (issue 26; not a test): a synthetic Claude Code
session of TURNS turns, each a prompt, its file-history snapshot, EDITS `Edit` calls (with
their tool results and `originalFile`, as Claude Code 2.1.197 writes them) on files of a
FILES-file workspace, and the closing answer; backups named as Claude Code names them. Times
the import (`--mode shadow` and `apply`, a fresh home each round) against one plain pass of
Python reading the same JSONL (`json.loads` of every line) and every backup, in the same run.

FORMAT=2.1.332 writes the transcript as Claude Code 2.1.332 does (fixtures/claude-code/
real-2.1.332): a file's first backup in a turn arrives as a `file-history-delta` line, not in
the turn's snapshot. Backups are kept as the 2.1.332 fixture keeps them (a pruned backup
makes its turn's edits unprovable: `backup-missing`, fail-closed, so no timing of interest).
The default is 2.1.197's format.

Usage: benches/import_claude.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import hashlib, json, os, shutil, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()
FORMAT = os.environ.get("FORMAT", "2.1.197")
DELTAS = FORMAT != "2.1.197"

tmp = tempfile.mkdtemp(prefix="rewind-claude-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
os.makedirs(ws)
claude = os.path.join(tmp, "claude")
sid = str(uuid.uuid4())
hist = os.path.join(claude, "file-history", sid)
os.makedirs(hist)
proj = os.path.join(claude, "projects", "".join(c if c.isalnum() else "-" for c in ws))
os.makedirs(proj)

names = [f"src/f{i}.txt" for i in range(FILES)]
text = {n: "".join(f"line {j} of {n}\n" for j in range(60)) for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)


def backup(rel, version, content):
    name = hashlib.sha256(f"{ws}/{rel}".encode()).hexdigest()[:16] + f"@v{version}"
    with open(os.path.join(hist, name), "w") as f:
        f.write(content)
    return name


tracked = {}  # rel -> (version, backup name)
dirty = set()
lines = []
n_edit = 0
for t in range(TURNS):
    prompt = str(uuid.uuid4())
    base = {"cwd": ws, "sessionId": sid, "version": FORMAT, "timestamp": "2026-11-24T20:00:00.000Z"}
    lines.append(dict(base, type="user", uuid=prompt, message={"role": "user", "content": f"turn {t}"}))
    # Claude Code backs up again only the tracked files that changed since their last backup.
    for rel in dirty:
        v = tracked[rel][0]
        tracked[rel] = (v + 1, backup(rel, v + 1, text[rel]))
    touched = [names[(t * EDITS + k) % FILES] for k in range(EDITS)]
    first = [rel for rel in dict.fromkeys(touched) if rel not in tracked]
    for rel in first:
        tracked[rel] = (1, backup(rel, 1, text[rel]))
    shown = {r: vb for r, vb in tracked.items() if not (DELTAS and r in first)}
    lines.append({"type": "file-history-snapshot", "messageId": prompt, "isSnapshotUpdate": False,
                  "snapshot": {"messageId": prompt, "timestamp": base["timestamp"],
                               "trackedFileBackups": {r: {"backupFileName": b, "version": v,
                                                          "backupTime": base["timestamp"]}
                                                      for r, (v, b) in shown.items()}}})
    for rel in first if DELTAS else []:
        v, b = tracked[rel]
        lines.append({"type": "file-history-delta", "messageId": str(uuid.uuid4()), "snapshotMessageId": prompt,
                      "trackingPath": rel, "timestamp": base["timestamp"],
                      "backup": {"backupFileName": b, "version": v, "backupTime": base["timestamp"],
                                 "realParentDir": ws}})
    for rel in touched:
        n_edit += 1
        old = f"line {t % 60} of {rel}\n"
        new = f"line {t % 60} of {rel} (turn {t})\n"
        if old not in text[rel]:
            old = text[rel].splitlines(keepends=True)[0]
            new = old.rstrip("\n") + f" (turn {t})\n"
        call = f"toolu_{n_edit:06d}"
        inp = {"file_path": f"{ws}/{rel}", "old_string": old, "new_string": new}
        lines.append(dict(base, type="assistant", uuid=str(uuid.uuid4()),
                          message={"role": "assistant", "stop_reason": "tool_use",
                                   "content": [{"type": "tool_use", "id": call, "name": "Edit", "input": inp}]}))
        lines.append(dict(base, type="user", uuid=str(uuid.uuid4()),
                          message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                                "content": "ok"}]},
                          toolUseResult={"filePath": inp["file_path"], "oldString": old, "newString": new,
                                         "originalFile": text[rel], "replaceAll": False}))
        text[rel] = text[rel].replace(old, new, 1)
    dirty = set(touched)
    lines.append(dict(base, type="assistant", uuid=str(uuid.uuid4()),
                      message={"role": "assistant", "stop_reason": "end_turn",
                               "content": [{"type": "text", "text": "done"}]}))
transcript = os.path.join(proj, sid + ".jsonl")
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


def rewind_import(mode):
    args = ["--claude-dir", claude, "--mode", mode]
    return import_rounds.rewind_import(rewind, "claude-code", args, ws, home, n_edit, False)


import_rounds.run(
    ROUNDS, python_pass, lambda shadow: rewind_import("shadow" if shadow else "apply"),
    f"claude-code {FORMAT}: {TURNS} turns, {n_edit} edits of {FILES} files, transcript "
    f"{os.path.getsize(transcript) / 1e6:.1f} MB, {len(os.listdir(hist))} backups",
    anchor_name="python", names=("shadow", "apply"))
shutil.rmtree(tmp)
