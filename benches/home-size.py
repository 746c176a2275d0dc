#!/usr/bin/env python3
"""The whole home against git (issue 46): replay a history as agent writes through the
`rewind` CLI, the same versions committed to a shadow git next to it, then `rewind gc --pack`
and `git gc --aggressive`, and compare what `du` says of each.

    benches/home-size.py REWIND OUT git REPO        # every first-parent commit of REPO
    benches/home-size.py REWIND OUT npm VERSIONS_DIR VERSIONS_TXT

One window per version (`rewind window open` / `close`); one `snap` and one `record` call
per version for all its changed and removed paths (so the tool-call id is one per version,
as an agent's one tool call that rewrites many files; the harness's `replay` instead makes one
tool call per file). Symlinks and submodules are left out. Prints one JSON object: the home
and the shadow git dir before and after their pack steps (KiB, as `du -sk`), the home's
index and pack files, and `rewind verify`'s counts.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys


def du_k(path):
    return int(subprocess.check_output(["du", "-sk", path], text=True).split()[0])


def git_versions(repo):
    commits = subprocess.check_output(
        ["git", "-C", repo, "rev-list", "--first-parent", "--reverse", "HEAD"], text=True
    ).split()
    cat = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def blob(sha):
        cat.stdin.write(sha.encode() + b"\n")
        cat.stdin.flush()
        size = int(cat.stdout.readline().split()[2])
        data = cat.stdout.read(size)
        cat.stdout.read(1)
        return data

    for c in commits:
        tree = {}
        out = subprocess.check_output(["git", "-C", repo, "ls-tree", "-r", "-z", c])
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, path = entry.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob" and mode != b"120000":
                tree[path.decode("utf-8", "surrogateescape")] = sha.decode()
        yield c, tree, blob


def npm_versions(versions_dir, versions_txt):
    contents = {}
    for v in open(versions_txt).read().split():
        root = os.path.join(versions_dir, v)
        tree = {}
        for dirpath, _, files in os.walk(root):
            for f in files:
                full = os.path.join(dirpath, f)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                # Keyed by content, as git's trees are: only what changed is written.
                with open(full, "rb") as f:
                    data = f.read()
                key = hashlib.sha1(data).hexdigest()
                contents[key] = data
                tree[os.path.relpath(full, root)] = key
        yield v, tree, contents.__getitem__


def main():
    rewind, out, kind = sys.argv[1:4]
    versions = git_versions(sys.argv[4]) if kind == "git" else npm_versions(*sys.argv[4:6])
    shutil.rmtree(out, ignore_errors=True)
    home, work, shadow = (os.path.join(out, d) for d in ("home", "work", "shadow.git"))
    os.makedirs(work)
    subprocess.run(["git", "init", "-q", "--bare", shadow], check=True)
    # No automatic gc in the background: it locks refs under the next commit.
    subprocess.run(["git", "--git-dir", shadow, "config", "gc.auto", "0"], check=True)
    env = dict(os.environ, REWIND_HOME=home, REWIND_WORKSPACE=work, REWIND_SESSION="replay",
               GIT_DIR=shadow, GIT_WORK_TREE=work, GIT_AUTHOR_NAME="r", GIT_AUTHOR_EMAIL="r@r",
               GIT_COMMITTER_NAME="r", GIT_COMMITTER_EMAIL="r@r")

    def run(*args):
        subprocess.run(args, env=env, cwd=work, check=True, stdout=subprocess.DEVNULL)

    current = {}
    n = writes = 0
    for n, (label, tree, read) in enumerate(versions, 1):
        removed = [p for p in current if p not in tree]
        changed = [p for p in tree if current.get(p) != tree[p]]
        if removed or changed:
            run(rewind, "window", "open")
            paths = removed + changed
            for k in range(0, len(paths), 500):
                chunk = paths[k:k + 500]
                call = f"v{n}-{k}"
                run(rewind, "snap", "--tool", "Write", "--tool-call", call, *chunk)
                for p in chunk:
                    full = os.path.join(work, p)
                    if p in tree:
                        parent = os.path.dirname(full)
                        # A file where this version has a directory goes first.
                        up = parent
                        while up != work and not os.path.isdir(up):
                            if os.path.lexists(up):
                                os.remove(up)
                            up = os.path.dirname(up)
                        os.makedirs(parent, exist_ok=True)
                        if os.path.isdir(full):
                            shutil.rmtree(full)
                        with open(full, "wb") as f:
                            f.write(read(tree[p]))
                    elif os.path.isfile(full):
                        os.remove(full)
                run(rewind, "record", "--tool", "Write", "--tool-call", call, *chunk)
            run(rewind, "window", "close")
            writes += len(paths)
        run("git", "add", "-A")
        run("git", "commit", "-q", "--allow-empty", "-m", label)
        current = tree
    result = {"kind": kind, "source": sys.argv[4], "versions": n, "writes": writes,
              "home_kib": du_k(home), "git_loose_kib": du_k(shadow)}
    gc = subprocess.run([rewind, "--json", "gc", "--pack"], env=env, cwd=work, check=True,
                        capture_output=True, text=True)
    result["gc_pack"] = json.loads(gc.stdout)
    subprocess.run(["git", "gc", "-q", "--aggressive", "--prune=now"], env=env, cwd=work,
                   check=True)
    result["home_packed_kib"] = du_k(home)
    result["git_packed_kib"] = du_k(shadow)
    result["home_files_kib"] = {
        name: du_k(os.path.join(home, name)) for name in sorted(os.listdir(home))
    }
    verify = subprocess.run([rewind, "--json", "verify"], env=env, cwd=work,
                            capture_output=True, text=True)
    result["verify"] = json.loads(verify.stdout)
    result["ratio"] = round(result["home_packed_kib"] / result["git_packed_kib"], 3)
    print(json.dumps(result))


main()
