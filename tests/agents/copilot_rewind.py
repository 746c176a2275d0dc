"""Copilot CLI's own restore, driven headless: `copilot --headless --stdio` is the JSON-RPC
server its SDK talks to (LSP-style `Content-Length` framing); `connect`, `session.resume`,
`session.history.listRewindPoints`, then `session.history.rewind` with mode
`conversation-and-files` restores the files of every turn from the chosen user message on,
from Copilot's own rewind snapshots (a file changed since its turn is skipped,
`user-modified`). No model is called.

rewind(binary, session, env, cwd) -> (points, result): the rewind to the session's first
user message, and the session's rewind points before it."""
import json
import queue
import subprocess
import threading


def _reader(stream, out):
    while True:
        headers = {}
        while True:
            line = stream.readline()
            if not line:
                out.put(None)
                return
            line = line.decode().strip()
            if not line:
                break
            key, value = line.split(":", 1)
            headers[key.lower()] = value.strip()
        out.put(json.loads(stream.read(int(headers["content-length"]))))


def rewind(binary, session, env, cwd):
    p = subprocess.Popen([binary, "--headless", "--no-auto-update", "--stdio"], cwd=cwd, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    messages = queue.Queue()
    threading.Thread(target=_reader, args=(p.stdout, messages), daemon=True).start()
    counter = [0]

    def send(obj):
        body = json.dumps(obj).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        p.stdin.flush()

    def call(method, params):
        counter[0] += 1
        send({"jsonrpc": "2.0", "id": counter[0], "method": method, "params": params})
        while True:
            m = messages.get(timeout=120)
            if m is None:
                raise RuntimeError(f"copilot --headless closed during {method}")
            if "method" in m and "id" in m:  # the server asking the client: nothing to say
                send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
            elif m.get("id") == counter[0]:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    try:
        call("connect", {})
        call("session.resume", {"sessionId": session})
        points = call("session.history.listRewindPoints", {"sessionId": session})["points"]
        if not points:
            return points, None
        result = call("session.history.rewind", {"sessionId": session,
                                                 "eventId": points[0]["eventId"],
                                                 "mode": "conversation-and-files"})
        return points, result
    finally:
        p.terminate()
        p.wait(timeout=30)
