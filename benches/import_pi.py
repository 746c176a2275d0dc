#!/usr/bin/env python3
"""Benchmark of `rewind import pi` (issue 46's importer rows; not a test): a synthetic pi
session of TURNS turns in the shape pi 0.73.1 writes (fixtures/pi/real-0.73.1): the header
(`type: session`, `version: 3`, a UUIDv7 id, the cwd), `model_change` and
`thinking_level_change`, then each turn a prompt (`user` message), one assistant message of
`read` calls (whole files, answered verbatim) of the files it edits for the first time, EDITS
assistant messages each with one `edit` call (`edits[{oldText, newText}]`, a relative path) and
its `toolResult` (`Successfully replaced 1 block(s) in <path>.` with pi's numbered
`details.diff`), and the closing answer (`stopReason: stop`), on files of a FILES-file
workspace. pi keeps no copy of a file: the first read of a file proves it, every later edit
chains from the last proven version. The file is `<agent dir>/sessions/--<cwd, / as ->--/
<ISO time>_<id>.jsonl`. Times the import and its `--dry-run` (a fresh home each round) against
one plain pass of Python reading the same records (`json.loads` of every line of the session
file, the only thing the importer reads), in the same run, as benches/import_qwen.py does.

Usage: benches/import_pi.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import json, os, secrets, shutil, sys, tempfile, time, uuid

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()

tmp = tempfile.mkdtemp(prefix="rewind-pi-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
os.makedirs(ws)
agent = os.path.join(tmp, "pi-agent")
T0 = 1795973460000  # ms, 2026-11-29T17:31:00Z


def uuid7(ms):
    """A UUIDv7, as pi's `uuidv7()` names a session."""
    n = (ms << 80) | (0x7 << 76) | (secrets.randbits(12) << 64) | (0b10 << 62) | secrets.randbits(62)
    return str(uuid.UUID(int=n))


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


sid = uuid7(T0)
sessions = os.path.join(agent, "sessions", "--" + ws.lstrip("/").replace("/", "-").replace(":", "-") + "--")
os.makedirs(sessions)
session = os.path.join(sessions, iso(T0).replace(":", "-").replace(".", "-") + f"_{sid}.jsonl")

names = [f"src/f{i}.txt" for i in range(FILES)]
text = {n: "".join(f"line {j} of {n}\n" for j in range(60)) for n in names}
for n in names:
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)


def diff(old, new, context=4):
    """pi's `generateDiffString` of one changed block (what `edit` leaves in `details.diff`)."""
    a, b = old.split("\n"), new.split("\n")
    i = 0
    while a[i] == b[i]:
        i += 1
    j = 0
    while a[-1 - j] == b[-1 - j] and len(a) - j > i + 1 and len(b) - j > i + 1:
        j += 1
    w = len(str(max(len(a), len(b))))
    # diffLines' parts: equal lines before (a[:i]), removed a[i:len(a)-j], added b[i:len(b)-j],
    # equal lines after (the final "" of the trailing newline is popped, as pi pops it).
    before, removed, added = a[:i], a[i:len(a) - j], b[i:len(b) - j]
    after = a[len(a) - j:]
    if after and after[-1] == "":
        after = after[:-1]
    out = []
    skip = max(0, len(before) - context)
    if skip:
        out.append(f" {'':>{w}} ...")
    for k in range(skip, len(before)):
        out.append(f" {k + 1:>{w}} {before[k]}")
    for k, l in enumerate(removed):
        out.append(f"-{i + k + 1:>{w}} {l}")
    for k, l in enumerate(added):
        out.append(f"+{i + k + 1:>{w}} {l}")
    n = i + len(removed)
    for k, l in enumerate(after[:context]):
        out.append(f" {n + k + 1:>{w}} {l}")
    if len(after) > context:
        out.append(f" {'':>{w}} ...")
    return "\n".join(out), i + 1


clock = [T0]
parent = [None]
lines = []


def entry(kind, **rest):
    clock[0] += 37
    e = dict({"type": kind, "id": secrets.token_hex(4), "parentId": parent[0], "timestamp": iso(clock[0])}, **rest)
    parent[0] = e["id"]
    lines.append(e)
    return e


def message(m):
    return entry("message", message=dict(m, timestamp=clock[0] + 37))


USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def assistant(content, stop):
    return message({"role": "assistant", "content": content, "api": "openai-completions", "provider": "fx",
                    "model": "fx-model", "usage": USAGE, "stopReason": stop, "responseId": "chatcmpl-bench"})


def result(call, tool, body, details=None):
    m = {"role": "toolResult", "toolCallId": call, "toolName": tool, "content": [{"type": "text", "text": body}]}
    if details is not None:
        m["details"] = details
    m["isError"] = False
    return message(m)


lines.append({"type": "session", "version": 3, "id": sid, "timestamp": iso(T0), "cwd": ws})
entry("model_change", provider="fx", modelId="fx-model")
entry("thinking_level_change", thinkingLevel="off")
seen = set()
n_call = n_edit = 0
for t in range(TURNS):
    message({"role": "user", "content": [{"type": "text", "text": f"turn {t}"}]})
    touched = [names[(t * EDITS + k) % FILES] for k in range(EDITS)]
    first = [rel for rel in dict.fromkeys(touched) if rel not in seen]
    reads = []
    for rel in first:  # a whole read of each file edited for the first time: its proof
        n_call += 1
        reads.append((f"call_{n_call:06d}", rel))
        seen.add(rel)
    if reads:
        assistant([{"type": "toolCall", "id": c, "name": "read", "arguments": {"path": rel}} for c, rel in reads],
                  "toolUse")
        for c, rel in reads:
            result(c, "read", text[rel])
    for rel in touched:
        n_call += 1
        n_edit += 1
        call = f"call_{n_call:06d}"
        old = f"line {t % 60} of {rel}\n"
        new = f"line {t % 60} of {rel} (turn {t})\n"
        if old not in text[rel]:
            old = text[rel].splitlines(keepends=True)[0]
            new = old.rstrip("\n") + f" (turn {t})\n"
        assistant([{"type": "toolCall", "id": call, "name": "edit",
                    "arguments": {"path": rel, "edits": [{"oldText": old, "newText": new}]}}], "toolUse")
        after = text[rel].replace(old, new, 1)
        d, first_line = diff(text[rel], after)
        result(call, "edit", f"Successfully replaced 1 block(s) in {rel}.", {"diff": d, "firstChangedLine": first_line})
        text[rel] = after
    assistant([{"type": "text", "text": "done"}], "stop")
with open(session, "w") as f:
    for l in lines:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
import_rounds.workspace(ws, {n: text[n] for n in names})


def python_pass():
    t0 = time.perf_counter()
    import_rounds.read_jsonl(session)
    return time.perf_counter() - t0


def rewind_import(dry=False):
    home = os.path.join(tmp, "home")
    took, rep = import_rounds.timed_import(rewind, "pi", ["--pi-dir", agent], ws, home, dry)
    s = rep["sessions"][0]
    bad = (s["derived"] != n_edit or s.get("metadata_only") or s.get("external") or s["steps"] != TURNS
           or s.get("steps_in_progress") or (not dry and rep["windows_added"] != TURNS))
    if bad:
        sys.exit(f"not every turn imported and proven: derived {s['derived']} of {n_edit} edits, "
                 f"steps {s['steps']} of {TURNS}, windows_added {rep.get('windows_added')}, "
                 f"metadata_only {s.get('metadata_only')}, external {s.get('external')}, "
                 f"reasons {s.get('reasons')}")
    added[0] = rep.get("windows_added", added[0])
    return took


added = [None]
import_rounds.run(
    ROUNDS, python_pass, lambda dry: rewind_import(dry=dry),
    lambda: f"pi 0.73.1: {TURNS} turns, {n_edit} edits of {FILES} files ({len(seen)} whole reads), "
            f"session {os.path.getsize(session) / 1e6:.1f} MB, {len(lines)} lines; "
            f"{added[0]} windows added, every edit derived",
    anchor_name="python")
shutil.rmtree(tmp)
