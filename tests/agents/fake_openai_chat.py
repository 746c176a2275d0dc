#!/usr/bin/env python3
"""A scripted fake OpenAI-compatible chat-completions server (for OpenCode's custom provider
through `@ai-sdk/openai-compatible`) for the end-to-end suite.

Listens on 127.0.0.1 only. Every request body is appended (one JSON line, with its path) to
the log file. `POST /v1/chat/completions` offering the agent's tools (a function named
`write`) gets the next scripted step, streamed as SSE chunks when asked (`stream: true`),
chosen by how many tool calls the conversation already holds:

  0  write        notes.txt  "one\ntwo\n"             (create)
  1  read         README.md                          (OpenCode edits only files it read)
  2  edit         README.md "# e2e" -> "# e2e edited" (edit of a committed file)
  3  edit         notes.txt two -> TWO
     (before answering step 4, the server appends "user line" to notes.txt itself:
      the user's edit behind the agent's back)
  4  read         notes.txt                          (rewind's hint must follow)
  5  bash         sed -i 's/one/ONE/' notes.txt      (shell edit, found by the scans)
  6  text         "done"

A request offering `apply_patch` and no `write` (OpenCode 1.18 does that for model ids with
`gpt-`: the second turn) gets a read of notes.txt, one `apply_patch` of it (`TWO` ->
`TWO, patched`), then the text "patched". Any other request (the session title, …) gets a short text answer.
A request offering `editor` and `run_commands` (Cline CLI 3.x) gets the same turn in Cline's
tools: editor (create), read_files, editor, editor, read_files, run_commands. One offering
`create` and `view` (Copilot CLI) gets it in Copilot's: create, view, edit, edit, view, bash.
One offering `write_file` and `run_shell_command` (Qwen Code) gets it in Qwen's: write_file,
read_file, edit, edit, read_file, run_shell_command.
FAKE_SCENARIO=pi: the same turn in pi's tool arguments (`path`, `edits[{oldText, newText}]`,
relative paths for notes.txt).
Usage: fake_openai_chat.py <workspace> <request-log> <port-file>
"""
import json
import os
import sys
import time
from fake_server import Handler, serve

WS, LOG, PORT_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
NOTES = os.path.join(WS, "notes.txt")
README = os.path.join(WS, "README.md")
USER_EDITED = []  # set once the "user" edit is made
USER_LINE = "user line\n"
PATCH = """*** Begin Patch
*** Update File: notes.txt
@@
 ONE
-TWO
+TWO, patched
*** End Patch"""


SCENARIO = os.environ.get("FAKE_SCENARIO", "opencode")


def steps(tools):
    if "create" in tools and "view" in tools:
        # Copilot CLI: create{path, file_text}, view{path}, edit{path, old_str, new_str},
        # bash{command, description}.
        return [
            ("create", {"path": NOTES, "file_text": "one\ntwo\n"}),
            ("view", {"path": README}),
            ("edit", {"path": README, "old_str": "# e2e", "new_str": "# e2e edited"}),
            ("edit", {"path": NOTES, "old_str": "two", "new_str": "TWO"}),
            ("view", {"path": NOTES}),
            ("bash", {"command": "sed -i 's/one/ONE/' notes.txt", "description": "uppercase one"}),
        ]
    if "editor" in tools and "run_commands" in tools:
        # Cline CLI 3.x: editor{path, old_text, new_text} (creates a missing file),
        # read_files{files[{path}]}, run_commands{commands[]}.
        return [
            ("editor", {"path": NOTES, "new_text": "one\ntwo\n"}),
            ("read_files", {"files": [{"path": README}]}),
            ("editor", {"path": README, "old_text": "# e2e", "new_text": "# e2e edited"}),
            ("editor", {"path": NOTES, "old_text": "two", "new_text": "TWO"}),
            ("read_files", {"files": [{"path": NOTES}]}),
            ("run_commands", {"commands": ["sed -i 's/one/ONE/' notes.txt"]}),
        ]
    if "write_file" in tools and "run_shell_command" in tools:
        # Qwen Code (Gemini CLI's tool ids, Claude Code's edit arguments):
        # write_file{file_path, content}, read_file{file_path},
        # edit{file_path, old_string, new_string}, run_shell_command{command}.
        return [
            ("write_file", {"file_path": NOTES, "content": "one\ntwo\n"}),
            ("read_file", {"file_path": README}),
            ("edit", {"file_path": README, "old_string": "# e2e", "new_string": "# e2e edited"}),
            ("edit", {"file_path": NOTES, "old_string": "two", "new_string": "TWO"}),
            ("read_file", {"file_path": NOTES}),
            ("run_shell_command", {"command": "sed -i 's/one/ONE/' notes.txt",
                                   "description": "uppercase one"}),
        ]
    if SCENARIO == "pi":
        # pi's tools: write{path, content}, edit{path, edits[{oldText, newText}]}, read{path},
        # bash{command}; the same turn as OpenCode's.
        return [
            ("write", {"path": NOTES, "content": "one\ntwo\n"}),
            ("read", {"path": README}),
            ("edit", {"path": README, "edits": [{"oldText": "# e2e", "newText": "# e2e edited"}]}),
            ("edit", {"path": "notes.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
            ("read", {"path": "notes.txt"}),
            ("bash", {"command": "sed -i 's/one/ONE/' notes.txt"}),
        ]
    return [
        ("write", {"filePath": NOTES, "content": "one\ntwo\n"}),
        ("read", {"filePath": README}),
        ("edit", {"filePath": README, "oldString": "# e2e", "newString": "# e2e edited"}),
        ("edit", {"filePath": NOTES, "oldString": "two", "newString": "TWO"}),
        ("read", {"filePath": NOTES}),
        ("bash", {"command": "sed -i 's/one/ONE/' notes.txt", "description": "uppercase one"}),
    ]


def tool_names(body):
    return [(t.get("function") or {}).get("name") for t in body.get("tools") or []
            if isinstance(t, dict)]


def tool_calls_so_far(body):
    return sum(len(m.get("tool_calls") or []) for m in body.get("messages") or []
               if m.get("role") == "assistant")


def sse(data):
    return f"data: {json.dumps(data)}\n\n".encode()


class H(Handler):

    def do_GET(self):
        self._send(200, "application/json", b'{"object": "list", "data": []}')

    do_HEAD = do_GET

    def do_POST(self):
        body = self.json_body()
        tools = tool_names(body)
        answer = {"text": "e2e"}
        msgs = body.get("messages") or []
        users = [m for m in msgs if m.get("role") == "user"]
        if users and "Tell the user the result above" in json.dumps(users[-1].get("content")):
            # `/rw-undo`: rewind's plugin made its answer the command's prompt.
            answer = {"text": "undone"}
        elif "apply_patch" in tools and "write" not in tools:
            # A `gpt-` model: OpenCode offers apply_patch instead of write/edit. The second
            # turn (`opencode run --session … -m e2e/gpt-e2e`): read notes.txt (it changed
            # since this session last read it: the sed, the undo and redo), patch it, "done".
            msgs = body.get("messages") or []
            last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=0)
            n = sum(len(m.get("tool_calls") or []) for m in msgs[last_user:]
                    if m.get("role") == "assistant")
            script = [("read", "call_e2e_reread", {"filePath": NOTES}),
                      ("apply_patch", "call_e2e_patch", {"patchText": PATCH})]
            answer = {"tool": script[n][0], "id": script[n][1], "args": script[n][2]} \
                if n < len(script) else {"text": "patched"}
        elif any(t in tools for t in ("write", "editor", "create", "write_file")):
            n = tool_calls_so_far(body)
            script = steps(tools)
            if n < len(script):
                if n == 4 and not USER_EDITED:
                    with open(NOTES, "a") as f:
                        f.write(USER_LINE)
                    USER_EDITED.append(True)
                name, args = script[n]
                answer = {"tool": name, "id": f"call_e2e_{n:02d}", "args": args}
            else:
                answer = {"text": "done"}
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "answer": answer, "body": body}) + "\n")
        base = {"id": "chatcmpl-e2e", "created": int(time.time()), "model": body.get("model", "e2e")}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if "tool" in answer:
            call = {"id": answer["id"], "type": "function",
                    "function": {"name": answer["tool"], "arguments": json.dumps(answer["args"])}}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": answer["text"]}, "stop"
        if not body.get("stream"):
            out = dict(base, object="chat.completion", usage=usage,
                       choices=[{"index": 0, "message": message, "finish_reason": finish}])
            return self._send(200, "application/json", json.dumps(out).encode())
        chunk = dict(base, object="chat.completion.chunk")
        if "tool" in answer:
            delta = {"role": "assistant", "tool_calls": [dict(call, index=0)]}
        else:
            delta = {"role": "assistant", "content": answer["text"]}
        out = sse(dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
        out += sse(dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                        usage=usage))
        out += b"data: [DONE]\n\n"
        self._send(200, "text/event-stream", out)


serve(H, PORT_FILE)
