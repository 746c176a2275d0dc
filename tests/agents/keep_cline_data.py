#!/usr/bin/env python3
"""Keep one Cline CLI session's real records as a fixture (fixtures/cline/real-<version>/):
its manifest and messages (sessions/<id>/), the workspace repository's objects holding its
checkpoints (dot-git/objects/, loose), and the workspace's files as the agent left them
(workspace/, from a `check_import.py save` of it; rewind's hook scripts left out). The scratch workspace and home paths
become /REWIND_FIXTURE_WS and /REWIND_FIXTURE_HOME.

Usage: keep_cline_data.py <sessions dir> <workspace> <end save> <home> <session id> <out>"""
import os
import shutil
import sys


def main():
    sessions, ws, end, home, sid, out = sys.argv[1:7]
    if os.path.exists(out):
        shutil.rmtree(out)
    swap = [(os.path.realpath(ws), "/REWIND_FIXTURE_WS"), (ws, "/REWIND_FIXTURE_WS"),
            (os.path.realpath(home), "/REWIND_FIXTURE_HOME"), (home, "/REWIND_FIXTURE_HOME")]
    src = os.path.join(sessions, sid)
    dst = os.path.join(out, "sessions", sid)
    os.makedirs(dst)
    for name in (f"{sid}.json", f"{sid}.messages.json"):
        text = open(os.path.join(src, name), encoding="utf-8").read()
        for old, new in swap:
            text = text.replace(old, new)
        with open(os.path.join(dst, name), "w", encoding="utf-8") as f:
            f.write(text)
    shutil.copytree(os.path.join(ws, ".git", "objects"), os.path.join(out, "dot-git", "objects"),
                    ignore=shutil.ignore_patterns("info", "pack"))
    # rewind's hook scripts name the scratch directory: not kept.
    shutil.copytree(end, os.path.join(out, "workspace"),
                    ignore=lambda d, names: [".clinerules"] if d == end else [])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
