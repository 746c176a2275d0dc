#!/usr/bin/env python3
"""Benchmark of `rewind import copilot` (issue 46's importer rows; not a test): a synthetic
Copilot CLI session of TURNS turns in the shape `@github/copilot` 1.0.102 writes
(fixtures/copilot/real-1.0.102): `session-state/<id>/events.jsonl` (`session.start`, then per
turn the prompt's `userPromptSubmitted` hooks and `user.message`, EDITS model steps each an
`assistant.turn_start`, `session.usage_record`, `assistant.message` with one `edit` tool
request, `tool.execution_start`, its pre/postToolUse hooks, `tool.execution_complete` with the
unified diff of the edit in `result.detailedContent` (the file's lines split on `\\n`, three
lines of context), `assistant.turn_end`; the closing answer; `session.shutdown` at the end),
and Copilot's own `/rewind` record, `rewind-file-snapshots/index.json` (per user message, each
changed file's `preimage`, its `backups/<sha256>`, and its `postimage` hash), on files of a
FILES-file workspace. Times the import and its `--dry-run` (a fresh home each round) against
one plain pass of Python reading the same records (`json.loads` of every events line, of
index.json, and reading every backup), in the same run, as benches/import_qwen.py does for
Qwen Code. Fails unless every turn is imported as a window with every edit `derived`.

Usage: benches/import_copilot.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import datetime, hashlib, json, os, shutil, sys, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()
VERSION = "1.0.102"

tmp = tempfile.mkdtemp(prefix="rewind-copilot-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
os.makedirs(ws)
copilot = os.path.join(tmp, "copilot")
sid = str(uuid.uuid4())
sdir = os.path.join(copilot, "session-state", sid)
snaps = os.path.join(sdir, "rewind-file-snapshots")
backups = os.path.join(snaps, "backups")
os.makedirs(backups)

names = [f"src/f{i}.txt" for i in range(FILES)]
text = {n: "".join(f"line {j} of {n}\n" for j in range(60)) for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)

clock = datetime.datetime(2026, 11, 29, 17, 16, 5, tzinfo=datetime.timezone.utc)


def stamp():
    global clock
    clock += datetime.timedelta(milliseconds=3)
    return clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{clock.microsecond // 1000:03d}Z"


def sha(b):
    return hashlib.sha256(b).hexdigest()


def enc(path):
    return {"encoding": "unix-bytes", "data": path.encode().hex()}


events = []
parent = None


def event(kind, data):
    global parent
    e = {"type": kind, "data": data, "id": str(uuid.uuid4()), "timestamp": stamp(), "parentId": parent}
    parent = e["id"]
    events.append(e)
    return e


def hook(kind, inp):
    h = str(uuid.uuid4())
    event("hook.start", {"hookInvocationId": h, "hookType": kind, "input": dict({"sessionId": sid, "cwd": ws}, **inp)})
    event("hook.end", {"hookInvocationId": h, "hookType": kind, "success": True})


def usage(seq, tool):
    event("session.usage_record", {"usage": {
        "model": "e2e-model", "modelDisplayName": "e2e-model", "inputTokens": 10, "outputTokens": 5,
        "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 0.0, "duration": 4, "initiator": "agent",
        "interactionType": "conversation-agent", "isByok": True, "providerType": "openai", "apiCallId": "chatcmpl-e2e",
        "apiEndpoint": "/chat/completions", "accounting": {"sourceSessionId": sid, "sequence": seq, "usageId": "chatcmpl-e2e"},
        "numToolCalls": 1 if tool else 0, "toolCounts": {tool: 1} if tool else {},
        "finishReason": "tool_calls" if tool else "stop"}})


def unified(rel, before, after):
    """Copilot's `detailedContent` of a one-line edit: the file split on `\\n` (a text ending in
    `\\n` has an empty last line), three lines of context."""
    old, new = before.split("\n"), after.split("\n")
    k = next(i for i, (a, b) in enumerate(zip(old, new)) if a != b)
    assert len(old) == len(new) and old[k + 1:] == new[k + 1:]
    s, e = max(0, k - 3), min(len(old), k + 4)
    body = [" " + l for l in old[s:k]] + ["-" + old[k], "+" + new[k]] + [" " + l for l in old[k + 1:e]]
    p = f"{ws[1:]}/{rel}"
    return (f"\ndiff --git a/{p} b/{p}\nindex 0000000..0000000 100644\n--- a/{p}\n+++ b/{p}\n"
            f"@@ -{s + 1},{e - s} +{s + 1},{e - s} @@\n" + "".join(l + "\n" for l in body))


event("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": VERSION,
                        "startTime": stamp(), "selectedModel": "e2e-model", "contextTier": None,
                        "context": {"cwd": ws, "gitRoot": ws, "branch": "master"},
                        "alreadyInUse": False, "remoteSteerable": False})
snapshots = []
n_edit = 0
seq = 0
for t in range(TURNS):
    prompt = f"turn {t}: edit some files"
    interaction = str(uuid.uuid4())
    hook("userPromptSubmitted", {"prompt": prompt, "timestamp": 1795972565339 + t})
    msg = event("user.message", {"content": prompt, "transformedContent": prompt, "messageId": str(uuid.uuid4()),
                                 "supportedNativeDocumentMimeTypes": [], "delivery": "idle",
                                 "interactionId": interaction, "turnId": "0"})
    if t == 0:
        event("system.message", {"role": "system", "content": "You are the GitHub Copilot CLI. " * 300,
                                 "interactionId": interaction})
    touched = [names[(t * EDITS + k) % FILES] for k in range(EDITS)]
    pre = {rel: text[rel] for rel in dict.fromkeys(touched)}  # staged before the turn's first edit
    for step, rel in enumerate(touched):
        n_edit += 1
        seq += 1
        old = f"line {t % 60} of {rel}\n"
        new = f"line {t % 60} of {rel} (turn {t})\n"
        if old not in text[rel]:
            old = text[rel].splitlines(keepends=True)[0]
            new = old.rstrip("\n") + f" (turn {t})\n"
        assert text[rel].count(old) == 1
        after = text[rel].replace(old, new, 1)
        path = f"{ws}/{rel}"
        call = f"call_{n_edit:06d}"
        args = {"path": path, "old_str": old, "new_str": new}
        event("assistant.turn_start", {"turnId": str(step), "interactionId": interaction})
        usage(seq, "edit")
        event("assistant.message", {"messageId": str(uuid.uuid4()), "originatingMessageId": msg["data"]["messageId"],
                                    "model": "e2e-model", "content": "", "toolRequests": [
                                        {"toolCallId": call, "name": "edit", "arguments": args, "type": "function",
                                         "intentionSummary": f"edit the file at {path}.", "toolTitle": "Editing file"}],
                                    "interactionId": interaction, "turnId": str(step), "rte": False,
                                    "apiCallId": "chatcmpl-e2e"})
        event("tool.execution_start", {"toolCallId": call, "toolName": "edit", "arguments": args,
                                       "turnId": str(step), "model": "e2e-model", "toolTitle": "Editing file"})
        hook("preToolUse", {"toolCalls": [{"id": call, "name": "edit", "args": args}]})
        result = f"File {path} updated with changes."
        hook("postToolUse", {"timestamp": 1795972565479 + n_edit, "toolName": "edit", "toolArgs": args,
                             "toolResult": {"resultType": "success", "textResultForLlm": result}})
        event("tool.execution_complete", {
            "toolCallId": call, "model": "e2e-model", "interactionId": interaction, "turnId": str(step), "rte": False,
            "fileEdits": [{"path": path, "kind": "edit"}], "success": True,
            "result": {"content": result, "detailedContent": unified(rel, text[rel], after)},
            "toolTelemetry": {"properties": {"command": "edit", "fileExtension": "[\".txt\"]"},
                              "restrictedProperties": {"filePaths": json.dumps([path])},
                              "metrics": {"linesAdded": 1, "linesRemoved": 1}}})
        event("assistant.turn_end", {"turnId": str(step)})
        text[rel] = after
    seq += 1
    event("assistant.turn_start", {"turnId": str(len(touched)), "interactionId": interaction})
    usage(seq, None)
    event("assistant.message", {"messageId": str(uuid.uuid4()), "originatingMessageId": msg["data"]["messageId"],
                                "model": "e2e-model", "content": "done", "toolRequests": [],
                                "interactionId": interaction, "turnId": str(len(touched)), "rte": False,
                                "apiCallId": "chatcmpl-e2e"})
    event("assistant.turn_end", {"turnId": str(len(touched))})
    hook("agentStop", {"stopReason": "end_turn", "stop_hook_active": False})
    files = {}
    for rel, before in pre.items():
        path = f"{ws}/{rel}"
        h = sha(before.encode())
        with open(os.path.join(backups, h), "w") as f:
            f.write(before)
        files[sha(path.encode())[:32]] = {
            "path": path,
            "preimage": {"kind": "content", "contentHash": h, "backupFile": h, "mode": 33188,
                         "size": len(before.encode()), "resolvedPath": path, "encodedPath": enc(path)},
            "postimage": {"kind": "content", "contentHash": sha(text[rel].encode()), "resolvedPath": path,
                          "encodedPath": enc(path)},
            "linesAdded": 1, "linesRemoved": 1}
    snapshots.append({"snapshotId": str(uuid.uuid4()), "eventId": msg["id"], "userMessage": prompt,
                      "timestamp": stamp(), "files": files,
                      "backupFiles": sorted(f["preimage"]["backupFile"] for f in files.values()),
                      "fileCount": len(files), "linesAdded": len(files), "linesRemoved": len(files)})
hook("sessionEnd", {"reason": "complete"})
event("session.shutdown", {"shutdownType": "routine", "totalPremiumRequests": 0,
                           "codeChanges": {"linesAdded": n_edit, "linesRemoved": n_edit,
                                           "filesModified": sorted({f"{ws}/{r}" for r in text})}})
transcript = os.path.join(sdir, "events.jsonl")
with open(transcript, "w") as f:
    for e in events:
        f.write(json.dumps(e, separators=(",", ":")) + "\n")
index = os.path.join(snaps, "index.json")
with open(index, "w") as f:
    json.dump({"schema": 1, "snapshots": snapshots}, f, indent=2)
with open(os.path.join(snaps, "tracking.json"), "w") as f:
    f.write('{"schema":1,"tracking":true}')
with open(os.path.join(sdir, "workspace.yaml"), "w") as f:
    f.write(f"id: {sid}\ncwd: {ws}\ngit_root: {ws}\nbranch: master\nclient_name: github/cli\n"
            f"name: turn 0\nuser_named: false\nsummary_count: 0\nfork_count: 0\n")
import_rounds.workspace(ws, {n: text[n] for n in names})


def python_pass():
    t0 = time.perf_counter()
    import_rounds.read_jsonl(transcript)
    with open(index) as f:
        json.load(f)
    import_rounds.read_dir(backups)
    return time.perf_counter() - t0


def rewind_import(dry=False):
    home = os.path.join(tmp, "home")
    took, rep = import_rounds.timed_import(rewind, "copilot", ["--copilot-home", copilot], ws, home, dry)
    s = rep["sessions"][0]
    # Every turn a window, every edit proven: a benchmark of an import that imported nothing is
    # worthless. (A dry run reports its windows but adds none: `windows_added` is 0.)
    windows = [w for w in s["windows"] if w["kind"] == "import"]
    added = len(windows) if dry else rep["windows_added"]
    if (added, len(windows), s["steps"], s["derived"], s["metadata_only"]) != (TURNS, TURNS, TURNS, n_edit, 0):
        sys.exit(f"not every turn imported ({'dry-run' if dry else 'import'}): windows added {added}, "
                 f"reported {len(windows)}, steps {s['steps']} of {TURNS}; derived {s['derived']}, "
                 f"metadata-only {s['metadata_only']} of {n_edit} edits; {s.get('reasons')}")
    return took


import_rounds.run(
    ROUNDS, python_pass, lambda dry: rewind_import(dry=dry),
    lambda: f"copilot {VERSION}: {TURNS} turns, {n_edit} edits of {FILES} files, events "
            f"{os.path.getsize(transcript) / 1e6:.1f} MB ({len(events)} events), index.json "
            f"{os.path.getsize(index) / 1e6:.1f} MB, {len(os.listdir(backups))} backups; "
            f"every round: {TURNS} windows, {n_edit} edits derived",
    anchor_name="python")
shutil.rmtree(tmp)
