#!/usr/bin/env python3
"""Keep the OpenCode data directory of an e2e run as a fixture for the OpenCode importer:
opencode.db (WAL folded in, vacuumed) and snapshot/ (OpenCode's own git repos of the
workspace, without git's sample hooks), plus the workspace's final files and a README
saying where everything came from.
Usage: keep_opencode_data.py <XDG_DATA_HOME/opencode> <workspace> <version> <session id> <out>"""
import os
import shutil
import sqlite3
import sys

data, ws, version, sid, out = sys.argv[1:6]
if os.path.exists(out):
    shutil.rmtree(out)
os.makedirs(out)
src = sqlite3.connect(os.path.join(data, "opencode.db"))
src.execute(f"VACUUM INTO '{os.path.join(out, 'opencode.db')}'")
src.close()
shutil.copytree(os.path.join(data, "snapshot"), os.path.join(out, "snapshot"),
                ignore=shutil.ignore_patterns("*.sample"))
os.makedirs(os.path.join(out, "workspace"))
for name in ("README.md", "notes.txt"):
    shutil.copy2(os.path.join(ws, name), os.path.join(out, "workspace", name))
with open(os.path.join(out, "README.md"), "w") as f:
    f.write(f"""# OpenCode {version}: the data directory of one e2e run

What `opencode run` (OpenCode {version}) left in `$XDG_DATA_HOME/opencode/` during one run of
`tests/agents/run.sh` (CAPTURE=1), scenario in `tests/agents/fake_openai_chat.py`: write
notes.txt, read README.md, edit README.md, edit notes.txt, (the user appends a line to
notes.txt), read notes.txt, bash `sed -i`; then (after rewind's undo/redo checks) a second
turn with a `gpt-` model id: read notes.txt, apply_patch of it; all in session `{sid}`.

- `opencode.db`: OpenCode's SQLite database (sessions, messages, parts), its WAL folded in
  (`VACUUM INTO`); nothing else changed.
- `snapshot/`: OpenCode's own git repositories of the workspace (the `snapshot` hashes in the
  step parts point into them); git's `*.sample` hooks left out.
- `workspace/`: the workspace files at the end of the run (the checks between the turns
  appended `a user edit after the turn` to README.md, as a user would).

The workspace was `{ws}` (a scratch directory, deleted after the run); paths inside the
database and the repositories still name it. Nothing secret: a scratch run with a dummy key
against a fake model server.
""")
print(f"kept the OpenCode data directory in {out}")
