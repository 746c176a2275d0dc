#!/usr/bin/env python3
"""Trust rewind's Codex hooks the way Codex's `/hooks` does, without its TUI: ask
`codex app-server` (JSON-RPC over stdio) for `hooks/list` in the workspace, then record each
rewind hook's `currentHash` as `trusted_hash` under `[hooks.state."<key>"]` in
$CODEX_HOME/config.toml, which is what trusting a hook in `/hooks` writes.
Prints one JSON object: the hooks listed before (key, event, trust status) and how many
were trusted. Usage: codex_trust.py <codex> <workspace>"""
import json
import os
import subprocess
import sys
import threading

codex, ws = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([codex, "app-server"], cwd=ws, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
timer = threading.Timer(30, proc.kill)
timer.start()


def send(msg):
    proc.stdin.write(json.dumps(dict(msg, jsonrpc="2.0")) + "\n")
    proc.stdin.flush()


def answer(want):
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("id") == want:
            return msg
    return {}


send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "rewind-e2e", "version": "1"}}})
answer(1)
send({"method": "initialized"})
send({"id": 2, "method": "hooks/list", "params": {"cwds": [ws]}})
listed = answer(2)
proc.kill()
timer.cancel()
hooks = [h for d in listed.get("result", {}).get("data", []) for h in d.get("hooks", [])]
ours = [h for h in hooks if "hook codex" in (h.get("command") or "")]
config = os.path.join(os.environ["CODEX_HOME"], "config.toml")
with open(config, "a") as f:
    for h in ours:
        if h.get("trustStatus") != "trusted":
            f.write(f'\n[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"\n')
print(json.dumps({"listed": [(h["key"], h["eventName"], h["trustStatus"]) for h in hooks],
                  "trusted": sum(1 for h in ours if h.get("trustStatus") != "trusted")}))
