#!/usr/bin/env python3
"""Benchmark of `rewind import opencode` (issue 26; not a test): a synthetic OpenCode data
directory with one 200-step session whose `edit` steps touch 500 files of a 500-file
workspace, built the way OpenCode 1.18 builds it (a snapshot git dir with alternates into the
project's .git/objects, trees from `git write-tree`, the fixture's database schema). Times the
import against reading the same trees with the git CLI (`git ls-tree -r` of both trees of
every step + `git cat-file --batch` of the blobs that differ), in the same run.

Usage: benches/import_opencode.py <rewind binary> [steps] [files]
"""
import hashlib, json, os, shutil, sqlite3, subprocess, sys, tempfile, time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DB = os.path.join(REPO, "fixtures/opencode/real-1.18.33/opencode.db")
rewind = os.path.abspath(sys.argv[1])
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
FILES = int(sys.argv[3]) if len(sys.argv) > 3 else 500

tmp = tempfile.mkdtemp(prefix="rewind-import-bench.")
ws = os.path.join(tmp, "ws")
data = os.path.join(tmp, "opencode")
os.makedirs(ws)
env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@b")
def git(*args, **kw):
    return subprocess.run(["git", *args], check=True, capture_output=True, env=env, **kw).stdout

names = [f"src/m{i // 50}/f{i}.txt" for i in range(FILES)]
for i, n in enumerate(names):
    os.makedirs(os.path.dirname(os.path.join(ws, n)), exist_ok=True)
    with open(os.path.join(ws, n), "w") as f:
        f.write("".join(f"line {j} of file {i}\n" for j in range(60)))
git("-C", ws, "init", "-q")
git("-C", ws, "add", "-A")
git("-C", ws, "commit", "-qm", "root")
project = git("-C", ws, "rev-list", "--max-parents=0", "HEAD").decode().strip()
snap = os.path.join(data, "snapshot", project, hashlib.sha1(ws.encode()).hexdigest())
os.makedirs(snap)
git("init", "-q", "--bare", snap)
with open(os.path.join(snap, "objects/info/alternates"), "w") as f:
    f.write(os.path.join(ws, ".git/objects") + "\n")
senv = dict(env, GIT_DIR=snap, GIT_WORK_TREE=ws)
def write_tree():
    subprocess.run(["git", "add", "-A", "."], check=True, env=senv, cwd=ws)
    return subprocess.run(["git", "write-tree"], check=True, capture_output=True, env=senv,
                          cwd=ws).stdout.decode().strip()

shutil.copy(FIXTURE_DB, os.path.join(data, "opencode.db"))
db = sqlite3.connect(os.path.join(data, "opencode.db"))
for t in ("part", "message", "session", "project"):
    db.execute(f"DELETE FROM {t}")
db.execute("INSERT INTO project(id, worktree, vcs, time_created, time_updated, sandboxes) "
           "VALUES (?, ?, 'git', 0, 0, '[]')", (project, ws))
sid = "ses_bench"
db.execute("INSERT INTO session(id, project_id, slug, directory, title, version, time_created, "
           "time_updated) VALUES (?, ?, 'b', ?, 'bench', '1.18.33', 0, 0)", (sid, project, ws))
trees = []
edit_no = 0
t0 = 1795536000000
for step in range(STEPS):
    before = write_tree()
    parts = [{"type": "step-start", "snapshot": before}]
    # 3 edits per step: 600 edits, every file touched at least once.
    for k in range(3):
        i = (step * 3 + k) % FILES
        path = os.path.join(ws, names[i])
        text = open(path).read()
        old = f"line {edit_no % 60} of file {i}\n"
        if old not in text:
            old = text.splitlines(True)[0]
        new = old.replace("line", "LINE", 1) + f"added by step {step}\n"
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))
        parts.append({"type": "tool", "tool": "edit", "callID": f"call_{step}_{k}", "state": {
            "status": "completed", "input": {"filePath": path, "oldString": old,
                                             "newString": new}}})
        edit_no += 1
    after = write_tree()
    parts.append({"type": "step-finish", "reason": "tool-calls", "snapshot": after})
    trees.append((before, after))
    mid = f"msg_{step:06d}"
    msg = {"role": "assistant", "time": {"created": t0 + step * 10, "completed": t0 + step * 10 + 5}}
    db.execute("INSERT INTO message(id, session_id, time_created, time_updated, data) "
               "VALUES (?, ?, ?, ?, ?)", (mid, sid, t0 + step * 10, t0, json.dumps(msg)))
    for n, p in enumerate(parts):
        db.execute("INSERT INTO part(id, message_id, session_id, time_created, time_updated, data)"
                   " VALUES (?, ?, ?, 0, 0, ?)", (f"prt_{step:06d}_{n:02d}", mid, sid,
                                                  json.dumps(p)))
db.commit()
db.close()

def best(f, n=3):
    times = []
    for _ in range(n):
        s = time.perf_counter(); f(); times.append(time.perf_counter() - s)
    return min(times)

def git_cli():
    ids = []
    for b, a in trees:
        lb = git("--git-dir", snap, "ls-tree", "-r", b).decode().splitlines()
        la = git("--git-dir", snap, "ls-tree", "-r", a).decode().splitlines()
        ids.extend(l.split()[2] for l in set(lb) ^ set(la))
    subprocess.run(["git", "--git-dir", snap, "cat-file", "--batch"], input="\n".join(ids).encode(),
                   check=True, capture_output=True)

def import_run(dry):
    home = tempfile.mkdtemp(prefix="home.", dir=tmp)
    args = [rewind, "--home", home, "--workspace", ws, "--json", "import", "opencode",
            "--data-dir", data] + (["--dry-run"] if dry else [])
    out = subprocess.run(args, capture_output=True)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    s = r["sessions"][0]
    assert s["derived"] == STEPS * 3 and s["metadata_only"] == 0, s["reasons"]

g = best(git_cli)
d = best(lambda: import_run(True))
i = best(lambda: import_run(False))
print(f"{STEPS} steps, {FILES} files, {STEPS * 3} edits (all derived)")
print(f"git CLI (ls-tree -r x2 per step + cat-file --batch): {g * 1000:.0f} ms")
print(f"rewind import opencode --dry-run:                    {d * 1000:.0f} ms ({d / g:.2f}x git)")
print(f"rewind import opencode:                              {i * 1000:.0f} ms ({i / g:.2f}x git)")
shutil.rmtree(tmp)
