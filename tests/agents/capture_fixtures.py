#!/usr/bin/env python3
"""Save the hook payloads an agent sent during a run as fixtures, one file per event and
tool, with the scratch paths replaced by /home/u/proj (workspace) and /home/u (HOME).

Usage: capture_fixtures.py <payloads.jsonl> <scratch dir> <version> <out dir>   (Claude Code)
       capture_fixtures.py --agent gemini|opencode|codex|pi|cline|copilot|qwen <payloads.jsonl> <workspace> <home>
                           <version> <out dir>
Codex: CODEX_HOME (<home>/../codex-home) becomes /home/u/.codex."""
import json
import os
import re
import sys

SCENARIOS = {
    "claude-code": ("Claude Code", "claude-code", "fake_anthropic.py",
                    "Write notes.txt, Read README.md, Edit README.md, Edit notes.txt, (the user "
                    "appends a line to notes.txt), Read notes.txt, Bash `sed -i`"),
    "gemini": ("Gemini CLI", "gemini", "fake_gemini.py",
               "write_file notes.txt, replace in README.md, replace in notes.txt, (the user "
               "appends a line to notes.txt), read_file notes.txt, run_shell_command `sed -i`"),
    "opencode": ("OpenCode", "opencode", "fake_openai_chat.py",
                 "write notes.txt, read README.md, edit README.md, edit notes.txt, (the user "
                 "appends a line to notes.txt), read notes.txt, bash `sed -i`; then a second "
                 "turn of the session with a `gpt-` model id: read notes.txt, apply_patch of "
                 "it. The payloads are what rewind's plugin pipes to `rewind hook opencode`"),
    "codex": ("Codex", "codex", "fake_openai_responses.py",
              "apply_patch add notes.txt, apply_patch update README.md, apply_patch update "
              "notes.txt, (the user appends a line to notes.txt), Bash `cat notes.txt`, Bash "
              "`sed -i`, Bash `apply_patch <<'EOF' … EOF` (a PreToolUse and no PostToolUse: Codex "
              "sends none for it), Bash `ls`; `codex exec`, model `gpt-5.5` from a fake "
              "Responses server"),
    "pi": ("pi", "pi", "fake_openai_chat.py (FAKE_SCENARIO=pi)",
           "write notes.txt, read README.md, edit README.md, edit notes.txt, (the user appends a "
           "line to notes.txt), read notes.txt, bash `sed -i`; `pi -p` with a custom "
           "OpenAI-compatible provider. The payloads are what rewind's extension pipes to "
           "`rewind hook pi`"),
    "cline": ("Cline CLI", "cline", "fake_openai_chat.py",
              "editor (create) notes.txt, read_files README.md, editor README.md, editor "
              "notes.txt, (the user appends a line to notes.txt), read_files notes.txt, "
              "run_commands `sed -i`; `cline --json` with an `openai-compatible` provider. The "
              "scripts run are `.clinerules/hooks/<TaskStart|PreToolUse|…>`"),
    "copilot": ("Copilot CLI", "copilot", "fake_openai_chat.py",
                "create notes.txt, view README.md, edit README.md, edit notes.txt, (the user "
                "appends a line to notes.txt), view notes.txt, bash `sed -i`; `copilot -p` "
                "with a BYOK provider (COPILOT_PROVIDER_BASE_URL) in offline mode. The "
                "payloads are the camelCase ones; the file names add the event rewind tells "
                "from the fields"),
    "qwen": ("Qwen Code", "qwen", "fake_openai_chat.py",
             "write_file notes.txt, read_file README.md, edit README.md, edit notes.txt, (the "
             "user appends a line to notes.txt), read_file notes.txt, run_shell_command `sed "
             "-i`; `qwen -p --yolo` with an OpenAI-compatible provider (OPENAI_BASE_URL). It "
             "sends UserPromptSubmit again, with an empty prompt, after every tool result"),
}

if sys.argv[1] == "--agent":
    agent, src, ws, home, version, out = sys.argv[2:8]
else:
    agent = "claude-code"
    src, tmp, version, out = sys.argv[1:5]
    ws, home = os.path.join(tmp, "cc", "ws"), os.path.join(tmp, "cc", "home")
title, hook_arg, server, turns = SCENARIOS[agent]
codex_home = os.path.join(os.path.dirname(home), "codex-home")
# Claude Code names the transcript folder after the cwd with every non-alphanumeric as '-'.
ws_slug = re.sub(r"[^A-Za-z0-9]", "-", ws)
# Gemini CLI names its project temp folder after the workspace's base name.
ws_base = os.path.basename(ws)


def clean(s):
    if agent == "codex":
        s = s.replace(codex_home, "/home/u/.codex")
    s = s.replace(ws, "/home/u/proj").replace(home, "/home/u").replace(ws_slug, "-home-u-proj")
    if agent == "gemini":
        s = s.replace(f"/.gemini/tmp/{ws_base}/", "/.gemini/tmp/proj/")
    return s


def kebab(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def name_of(p):
    if agent == "copilot":
        has = lambda k: k in p
        event = ("postToolUse" if has("toolResult") else "preToolUse") if has("toolName") else \
            "agentStop" if has("stopReason") else "userPromptSubmitted" if has("prompt") else \
            "sessionStart" if has("source") else "sessionEnd" if has("reason") else "unknown"
        return event + (f"-{p['toolName']}" if has("toolName") else "")
    if agent == "cline":
        call = p.get("tool_call") or p.get("tool_result") or {}
        return p["hookName"] + (f"-{call['name']}" if call.get("name") else "")
    if agent == "pi":
        return p["hook"] + (f"-{p['toolName']}" if "toolName" in p else "")
    if agent == "opencode":
        tool = (p.get("input") or {}).get("tool")
        return p["hook"] + (f"-{tool}" if tool and p["hook"].startswith("tool.") else "")
    return kebab(p["hook_event_name"]) + ("-" + p["tool_name"].lower() if "tool_name" in p else "")


os.makedirs(out, exist_ok=True)
seen = {}
for line in open(src):
    line = line.strip()
    if not line:
        continue
    p = json.loads(clean(line))
    name = name_of(p)
    seen[name] = seen.get(name, 0) + 1
    if seen[name] > 1:
        name += f"-{seen[name]}"
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(p, f, indent=2)
        f.write("\n")
with open(os.path.join(out, "README.md"), "w") as f:
    f.write(f"""# {title} {version}, recorded

Hook payloads {title} {version} wrote on the stdin of `rewind hook {hook_arg}` during
one run of `tests/agents/run.sh` (CAPTURE=1), in the order of the scripted turns in
`tests/agents/{server}`: {turns}. A `-2` suffix is the second event of the same name. Only the
scratch paths were replaced (workspace -> /home/u/proj, HOME -> /home/u); ids, contents and
field order are as sent.
""")
print(f"wrote {sum(seen.values())} payloads to {out}")
