#!/usr/bin/env python3
"""Save the hook payloads an agent sent during a run as fixtures, one file per event and
tool, with the scratch paths replaced by /home/u/proj (workspace) and /home/u (HOME; Codex's
CODEX_HOME: /home/u/.codex).
Usage: capture_fixtures.py <payloads.jsonl> <scratch dir> <version> <out dir> [claude-code|codex]"""
import json
import os
import re
import sys

src, tmp, version, out = sys.argv[1:5]
agent = sys.argv[5] if len(sys.argv) > 5 else "claude-code"
sub = {"claude-code": "cc", "codex": "cx"}[agent]
ws, home = os.path.join(tmp, sub, "ws"), os.path.join(tmp, sub, "home")
codex_home = os.path.join(tmp, sub, "codex-home")
# Claude Code names the transcript folder after the cwd with every non-alphanumeric as '-'.
ws_slug = re.sub(r"[^A-Za-z0-9]", "-", ws)


def clean(s):
    s = s.replace(codex_home, "/home/u/.codex")
    return s.replace(ws, "/home/u/proj").replace(home, "/home/u").replace(ws_slug, "-home-u-proj")


os.makedirs(out, exist_ok=True)
seen = {}
for line in open(src):
    line = line.strip()
    if not line:
        continue
    p = json.loads(clean(line))
    ev = re.sub(r"(?<!^)(?=[A-Z])", "-", p["hook_event_name"]).lower()
    name = ev + ("-" + p["tool_name"].lower() if "tool_name" in p else "")
    seen[name] = seen.get(name, 0) + 1
    if seen[name] > 1:
        name += f"-{seen[name]}"
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(p, f, indent=2)
        f.write("\n")
README = {"codex": f"""# Codex {version}, recorded

Hook payloads Codex {version} (`codex exec`, model `gpt-5.5` from a fake Responses server)
wrote on the stdin of `rewind hook codex` during one run of `tests/agents/run.sh`
(CAPTURE=1), in the order of the scripted turns in `tests/agents/fake_openai_responses.py`:
apply_patch add notes.txt, apply_patch update README.md, apply_patch update notes.txt, (the
user appends a line to notes.txt), Bash `cat notes.txt`, Bash `sed -i`, Bash `apply_patch
<<'EOF' … EOF` (a PreToolUse and no PostToolUse: Codex sends none for it), Bash `ls`. A `-2`
suffix is the second event of the same name. Only the scratch paths were replaced
(workspace -> /home/u/proj, CODEX_HOME -> /home/u/.codex); ids, contents and field order
are as sent.
"""}
with open(os.path.join(out, "README.md"), "w") as f:
    if agent in README:
        f.write(README[agent])
    else:
        f.write(f"""# Claude Code {version}, recorded

Hook payloads Claude Code {version} wrote on the stdin of `rewind hook claude-code` during
one run of `tests/agents/run.sh` (CAPTURE=1), in the order of the scripted turns in
`tests/agents/fake_anthropic.py`: Write notes.txt, Read README.md, Edit README.md, Edit
notes.txt, (the user appends a line to notes.txt), Read notes.txt, Bash `sed -i`. A `-2`
suffix is the second event of the same name. Only the scratch paths were replaced
(workspace -> /home/u/proj, HOME -> /home/u); ids, contents and field order are as sent.
""")
print(f"wrote {sum(seen.values())} payloads to {out}")
