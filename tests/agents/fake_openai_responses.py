#!/usr/bin/env python3
"""A scripted fake OpenAI Responses server (`POST /v1/responses`, SSE) for the Codex run of
the end-to-end agent suite.

Listens on 127.0.0.1 only. Every request body is appended (one JSON line) to the log file.
A request that offers Codex's tools (`exec_command` and the freeform `apply_patch`) gets the
next scripted step, chosen by how many tool calls the conversation (`input`) already holds:

  0  apply_patch   *** Add File: notes.txt  one/two                 (create)
  1  apply_patch   *** Update File: README.md  # e2e -> # e2e edited (edit of a committed file)
  2  apply_patch   *** Update File: notes.txt  two -> TWO            (edit of the file it created)
     (before answering step 3, the server appends "user line" to notes.txt itself: the
      user's edit behind the agent's back)
  3  exec_command  cat notes.txt                                     (a read through the shell)
  4  exec_command  sed -i 's/one/ONE/' notes.txt                     (shell edit)
  5  exec_command  apply_patch <<'EOF' ... EOF                       (a patch through the shell:
                   README.md edited again, extra.txt added, old.txt deleted, move-me.txt
                   moved to moved.txt and edited)
  6  exec_command  ls                                                (the next tool call)
  7  text          "done"

Any other request, and any request of the conversation whose prompt is the probe
("rewind e2e: probe", run.sh's hook-trust check), gets a short text answer.
Usage: fake_openai_responses.py <workspace> <request-log> <port-file>
"""
import json
import os
import sys
from fake_server import Handler, serve

WS, LOG, PORT_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
NOTES = os.path.join(WS, "notes.txt")
USER_EDITED = []  # set once the "user" edit is made
USER_LINE = "user line\n"
# The prompt of the run that only checks whether hooks run (run.sh): answered with text.
PROBE = "rewind e2e: probe"

HEREDOC_PATCH = """apply_patch <<'EOF'
*** Begin Patch
*** Update File: README.md
@@
-# e2e edited
+# e2e patched
*** Add File: extra.txt
+extra
*** Delete File: old.txt
*** Update File: move-me.txt
*** Move to: moved.txt
@@
-move me
+moved
*** End Patch
EOF"""


def steps():
    return [
        ("apply_patch", "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Update File: README.md\n@@\n-# e2e\n+# e2e edited\n*** End Patch\n"),
        ("apply_patch", "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n"),
        ("exec_command", {"cmd": "cat notes.txt"}),
        ("exec_command", {"cmd": "sed -i 's/one/ONE/' notes.txt"}),
        ("exec_command", {"cmd": HEREDOC_PATCH}),
        ("exec_command", {"cmd": "ls"}),
    ]


def tool_calls_so_far(body):
    items = body.get("input", [])
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict)
               and i.get("type") in ("function_call", "custom_tool_call", "local_shell_call"))


def sse(data):
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def item_for(n):
    name, arg = steps()[n]
    call_id = f"call_e2e_{n:02d}"
    if name == "apply_patch":
        return {"type": "custom_tool_call", "id": f"ctc_e2e_{n:02d}", "status": "completed",
                "call_id": call_id, "name": name, "input": arg}
    return {"type": "function_call", "id": f"fc_e2e_{n:02d}", "status": "completed",
            "call_id": call_id, "name": name, "arguments": json.dumps(arg)}


def text_item(text):
    return {"type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


class H(Handler):

    def do_GET(self):
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "method": "GET"}) + "\n")
        self._send(404, "application/json", b'{"error": {"message": "not here"}}')

    def do_POST(self):
        body = self.json_body(lambda raw: {"undecodable": len(raw)})
        tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
        item = text_item("ok")
        if PROBE in json.dumps(body.get("input", [])):
            item = text_item("done")
        elif "exec_command" in tools and "apply_patch" in tools:
            n = tool_calls_so_far(body)
            if n < len(steps()):
                if n == 3 and not USER_EDITED:
                    with open(NOTES, "a") as f:
                        f.write(USER_LINE)
                    USER_EDITED.append(True)
                item = item_for(n)
            else:
                item = text_item("done")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "answer": item, "body": body}) + "\n")
        out = sse({"type": "response.created", "response": {"id": "resp_e2e"}})
        out += sse({"type": "response.output_item.added", "output_index": 0, "item": item})
        out += sse({"type": "response.output_item.done", "output_index": 0, "item": item})
        out += sse({"type": "response.completed", "response": {"id": "resp_e2e", "usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15}}})
        self._send(200, "text/event-stream", out)


serve(H, PORT_FILE)
