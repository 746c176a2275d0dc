#!/usr/bin/env python3
"""Benchmark of `rewind import cline` (issue 46's importer rows; not a test): a synthetic Cline
CLI session of TURNS user runs in the shape Cline CLI 3.0.65 writes (fixtures/cline/
real-3.0.65): the manifest `<id>/<id>.json` (`metadata.checkpoint.history`: one `{ref,
runCount, kind: "stash"}` per run) and the conversation `<id>/<id>.messages.json` (each run a
`<user_input>` prompt, EDITS `editor` calls, one per assistant message, each answered by its
`tool_result` `{query, result: "Edited …\\n```diff …```", success}`, and the closing answer), on
files of a FILES-file workspace. Each run's checkpoint is in the workspace's own git repository
as Cline keeps it (loose objects): a commit of the worktree's tracked files with three parents
(HEAD, `index on cline checkpoint`, `untracked files on cline checkpoint`: the untracked
`.clinerules/hooks/`) and the message `cline checkpoint session=<id> run=<n>`, under
`refs/cline/checkpoints/<id>/<n>`.

Times the import (apply) and its `--dry-run` (a fresh home each round) against one plain pass
of Python reading the same records, in the same run: `json.loads` of the manifest and the
messages, and `git cat-file --batch` of what the importer reads from the repository: per run,
its checkpoint commit, the untracked parent commit, the checkpoint's root and `src/` trees, and
the blob of every path the session has edited by then (the importer looks up each known path
at each run's checkpoint, each tree read once, a blob only when its entry is not the one the
path's known bytes came from). The anchor (`python`) reads each of those objects once; a
second row (`py-runs`) reads them once per run, as the importer did before it kept what it had
read (a blob unchanged across runs read again each time: ~28x the blob reads at the
defaults), for reference.

Usage: benches/import_cline.py <rewind binary> [turns] [edits per turn] [files] [rounds]
"""
import hashlib, json, os, shutil, subprocess, sys, tempfile, time, uuid, zlib

import import_rounds

rewind, TURNS, EDITS, FILES, ROUNDS = import_rounds.args()

tmp = tempfile.mkdtemp(prefix="rewind-cline-bench.")
ws = os.path.realpath(os.path.join(tmp, "ws"))
os.makedirs(ws)
data = os.path.join(tmp, "cline-data")  # Cline's data directory (`--cline-dir`)
start_ms = 1795973488040
sid = f"{start_ms}_bench"
sdir = os.path.join(data, "sessions", sid)
os.makedirs(sdir)

names = [f"src/f{i}.txt" for i in range(FILES)]
text = {n: "".join(f"line {j} of {n}\n" for j in range(60)) for n in names}
committed = {**text, "README.md": "# bench\n", "AGENTS.md": "Be brief.\n"}
hooks = {f".clinerules/hooks/{h}": "#!/bin/sh\nexec rewind hook cline\n"
         for h in ["PostToolUse", "PreToolUse", "TaskCancel", "TaskComplete", "TaskResume", "TaskStart",
                   "UserPromptSubmit"]}


def put(rel, content, mode=0o644):
    path = os.path.join(ws, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(content)
    os.chmod(path, mode)


# The workspace as the user committed it, then Cline's (rewind's) hooks, untracked.
for rel, content in committed.items():
    put(rel, content)
git = ["git", "-C", ws, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
subprocess.run(["git", "init", "-q", ws], check=True)
subprocess.run(git + ["add", "-A"], check=True)
subprocess.run(git + ["commit", "-q", "-m", "init"], check=True)
head = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
head_tree = subprocess.run(git + ["rev-parse", "HEAD^{tree}"], check=True, capture_output=True,
                           text=True).stdout.strip()
for rel, content in hooks.items():
    put(rel, content, 0o755)

objects = os.path.join(ws, ".git", "objects")


def obj(kind, body):
    """Write a loose object as git does; its id."""
    raw = f"{kind} {len(body)}\0".encode() + body
    oid = hashlib.sha1(raw).hexdigest()
    path = os.path.join(objects, oid[:2], oid[2:])
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(zlib.compress(raw, 1))
    return oid


blob_ids = {}


def blob(content):
    if content not in blob_ids:
        blob_ids[content] = obj("blob", content.encode())
    return blob_ids[content]


def tree(files):
    """The tree of {path: (mode, blob id)}, subtrees written too."""
    here, subs = {}, {}
    for path, entry in files.items():
        top, _, rest = path.partition("/")
        if rest:
            subs.setdefault(top, {})[rest] = entry
        else:
            here[top] = entry
    entries = [(name, "100755" if mode == 0o755 else "100644", oid) for name, (mode, oid) in here.items()]
    entries += [(name, "40000", tree(sub)) for name, sub in subs.items()]
    entries.sort(key=lambda e: e[0] + ("/" if e[1] == "40000" else ""))
    return obj("tree", b"".join(f"{m} {n}\0".encode() + bytes.fromhex(o) for n, m, o in entries))


def commit(tree_id, parents, message, at):
    who = f"bench <bench@example.invalid> {at} +0000"
    lines = [f"tree {tree_id}"] + [f"parent {p}" for p in parents] + [f"author {who}", f"committer {who}"]
    return obj("commit", ("\n".join(lines) + f"\n\n{message}\n").encode())


untracked_tree = tree({rel: (0o755, blob(c)) for rel, c in hooks.items()})


def edit_diff(before, after):
    """The diff Cline's `editor` shows after a replacement (src/import/cline.rs `edit_diff`;
    the edits here change one line, far under its 200-line cut)."""
    a, b = before.split("\n"), after.split("\n")
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    ea, eb = len(a), len(b)
    while ea > start and eb > start and a[ea - 1] == b[eb - 1]:
        ea, eb = ea - 1, eb - 1
    out = ["```diff"] + [f"-{i + 1}: {a[i]}" for i in range(start, ea)] + [f"+{i + 1}: {b[i]}" for i in range(start, eb)]
    return "\n".join(out + ["```"])


def message(role, content, ts, **rest):
    m = {"id": f"msg_{uuid.uuid4().hex[:8]}", "role": role, "content": content, "ts": ts}
    if role == "assistant":
        m.update(modelInfo={"id": "bench-model", "provider": "openai-compatible"},
                 metrics={"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 0, "cacheWriteTokens": 0})
    return dict(m, **rest)


messages, history = [], []
checkpoints = []  # per run: (checkpoint commit, untracked commit, paths edited by then)
edited = []
n_edit = 0
ts = start_ms + 400
for t in range(TURNS):
    run = t + 1
    ts += 100
    # The run's checkpoint, before its first model call: the worktree as it is.
    at = ts // 1000
    index_commit = commit(head_tree, [head], "index on cline checkpoint", at)
    untracked_commit = commit(untracked_tree, [], "untracked files on cline checkpoint", at)
    work_tree = tree({rel: (0o644, blob(c)) for rel, c in {**committed, **text}.items()})
    cp = commit(work_tree, [head, index_commit, untracked_commit],
                f"cline checkpoint session={sid} run={run}", at)
    ref = os.path.join(ws, ".git", "refs", "cline", "checkpoints", sid, str(run))
    os.makedirs(os.path.dirname(ref), exist_ok=True)
    with open(ref, "w") as f:
        f.write(cp + "\n")
    history.append({"ref": cp, "createdAt": ts, "runCount": run, "kind": "stash"})
    messages.append(message("user", [{"type": "text", "text": f"<user_input mode=\"act\">turn {t}</user_input>"}], ts,
                            id=str(uuid.uuid4())))
    touched = [names[(t * EDITS + k) % FILES] for k in range(EDITS)]
    for rel in touched:
        if rel not in edited:
            edited.append(rel)
    checkpoints.append((cp, untracked_commit, list(edited)))
    for rel in touched:
        n_edit += 1
        old = f"line {t % 60} of {rel}"
        if f"{old}\n" not in text[rel]:
            old = text[rel].split("\n")[0]
        new = f"{old} (turn {t})"
        assert text[rel].count(old) == 1, (rel, old)
        after = text[rel].replace(old, new, 1)
        path = f"{ws}/{rel}"
        call = f"call_{n_edit:06d}"
        ts += 50
        messages.append(message("assistant", [{"type": "tool_use", "id": call, "name": "editor",
                                               "input": {"path": path, "old_text": old, "new_text": new}}], ts))
        result = f"Edited {path}\n{edit_diff(text[rel], after)}"
        ts += 50
        messages.append(message("user", [{"type": "tool_result", "tool_use_id": call, "name": "editor",
                                          "content": json.dumps({"query": f"edit:{path}", "result": result,
                                                                 "success": True}, separators=(",", ":"))}], ts))
        text[rel] = after
    ts += 50
    messages.append(message("assistant", [{"type": "text", "text": "done"}], ts))

conv = os.path.join(sdir, f"{sid}.messages.json")
with open(conv, "w") as f:
    json.dump({"version": 1, "updated_at": "2026-11-29T17:31:32.583Z", "agent": "lead", "sessionId": sid,
               "origin": {"source": "cli", "mode": "user", "sessionId": sid, "version": "3.0.65"},
               "messages": messages}, f, indent=2)
manifest = os.path.join(sdir, f"{sid}.json")
with open(manifest, "w") as f:
    json.dump({"version": 1, "session_id": sid, "source": "cli", "pid": 12213,
               "started_at": "2026-11-29T17:31:28.045Z", "ended_at": "2026-11-29T17:51:32.996Z", "exit_code": 0,
               "status": "completed", "interactive": False, "provider": "openai-compatible", "model": "bench-model",
               "cwd": ws, "workspace_root": ws, "team_name": "team-bench", "enable_tools": True,
               "enable_spawn": True, "enable_teams": True, "prompt": "turn 0",
               "metadata": {"sessionHistoryOrigin": {"mode": "user", "version": "3.0.65"},
                            "git": {"branch": "master"},
                            "checkpoint": {"latest": history[-1], "history": history},
                            "title": "turn 0", "totalCost": 0},
               "messages_path": conv}, f, indent=2)
for rel in names:
    put(rel, text[rel])
fsck = subprocess.run(["git", "-C", ws, "fsck", "--no-dangling"], capture_output=True, text=True)
if fsck.returncode != 0:
    sys.exit(f"git fsck of the synthetic checkpoints failed: {fsck.stdout}{fsck.stderr}")


read = {}  # per_run -> objects one pass reads with cat-file
counted = [0]


def cat_file(ids):
    """`git cat-file --batch` of `ids`: their (type, body), in order."""
    counted[0] += len(ids)
    out = subprocess.run(["git", "-C", ws, "cat-file", "--batch"], input="".join(i + "\n" for i in ids).encode(),
                         capture_output=True, check=True).stdout
    got, at = [], 0
    for _ in ids:
        nl = out.index(b"\n", at)
        _, kind, size = out[at:nl].split()
        size = int(size)
        got.append((kind, out[nl + 1:nl + 1 + size]))
        at = nl + 1 + size + 1
    return got


def entries(body):
    """A tree's {name: id}."""
    out, at = {}, 0
    while at < len(body):
        nul = body.index(b"\0", at)
        out[body[at:nul].split(b" ", 1)[1].decode()] = body[nul + 1:nul + 21].hex()
        at = nul + 21
    return out


def python_pass(per_run=False):
    """The anchor: the records, and the checkpoints' objects the importer reads (each once,
    or `per_run`: once per run that looks them up)."""
    once = (lambda ids: ids) if per_run else (lambda ids: list(dict.fromkeys(ids)))
    counted[0] = 0
    t0 = time.perf_counter()
    with open(manifest) as f:
        m = json.load(f)
    with open(conv) as f:
        json.load(f)
    refs = [c["ref"] for c in m["metadata"]["checkpoint"]["history"]]
    # The checkpoint commits and their untracked parents.
    commits = dict(zip(once(refs), cat_file(once(refs))))
    untracked = once([u for _, u, _ in checkpoints])
    assert all(kind == b"commit" for kind, _ in cat_file(untracked))
    roots = [commits[r][1].split(b"\n", 1)[0].split()[1].decode() for r in refs]
    root_trees = dict(zip(once(roots), cat_file(once(roots))))
    srcs = [entries(root_trees[r][1])["src"] for r in roots]
    src_trees = dict(zip(once(srcs), cat_file(once(srcs))))
    wanted = []
    for src, (_, _, paths) in zip(srcs, checkpoints):
        e = entries(src_trees[src][1])
        wanted += [e[p[len("src/"):]] for p in paths]
    blobs = cat_file(once(wanted))
    assert all(kind == b"blob" for kind, _ in blobs)
    took = time.perf_counter() - t0
    read[per_run] = counted[0]
    return took


def rewind_import(dry=False):
    home = os.path.join(tmp, "home")
    took, report = import_rounds.timed_import(rewind, "cline", ["--cline-dir", data], ws, home, dry)
    s = report["sessions"][0]
    windows = len(s["windows"]) if dry else report["windows_added"]
    if s["derived"] != n_edit or windows != TURNS:
        sys.exit(f"import did not prove every run: derived {s['derived']} of {n_edit} edits, "
                 f"{windows} windows of {TURNS} runs; reasons {s.get('reasons')}")
    return took


n_obj = sum(len(os.listdir(os.path.join(objects, d))) for d in os.listdir(objects) if len(d) == 2)
import_rounds.run(
    ROUNDS, python_pass, lambda dry: rewind_import(dry=dry),
    lambda: f"cline 3.0.65: {TURNS} runs, {n_edit} edits of {FILES} files, records "
            f"{(os.path.getsize(manifest) + os.path.getsize(conv)) / 1e6:.1f} MB, {TURNS} checkpoints "
            f"({n_obj} loose objects; cat-file reads {read[False]}, per run {read[True]})",
    anchor_name="python", also=[("py-runs", lambda: python_pass(per_run=True))])
shutil.rmtree(tmp)
