#!/usr/bin/env python3
"""A scripted fake Gemini API server (generativelanguage v1beta) for the end-to-end suite.

Listens on 127.0.0.1 only. Every request body is appended (one JSON line, with its path) to
the log file. `POST …/models/<model>:streamGenerateContent?alt=sse` with the agent's tools
(a function declaration named `write_file`) gets the next scripted step as one SSE chunk,
chosen by how many functionCall parts the conversation already holds:

  0  write_file        <ws>/notes.txt  "one\ntwo\n"         (create)
  1  replace           README.md "# e2e" -> "# e2e edited"  (edit of a committed file)
  2  replace           notes.txt two -> TWO                 (edit of the file it created)
     (before answering step 3, the server appends "user line" to notes.txt itself:
      the user's edit behind the agent's back)
  3  read_file         notes.txt                            (rewind's hint must follow)
  4  run_shell_command sed -i 's/one/ONE/' notes.txt        (shell edit, found by the scans)
  5  text              "done"

Any other request (the model router, countTokens, …) gets a short text answer.
Usage: fake_gemini.py <workspace> <request-log> <port-file>
"""
import json
import os
import sys
from fake_server import Handler, serve

WS, LOG, PORT_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
NOTES = os.path.join(WS, "notes.txt")
README = os.path.join(WS, "README.md")
USER_EDITED = []  # set once the "user" edit is made
USER_LINE = "user line\n"


def steps():
    return [
        ("write_file", {"file_path": NOTES, "content": "one\ntwo\n"}),
        ("replace", {"file_path": README, "old_string": "# e2e", "new_string": "# e2e edited",
                     "instruction": "Mark the heading as edited.", "allow_multiple": False}),
        ("replace", {"file_path": NOTES, "old_string": "two", "new_string": "TWO",
                     "instruction": "Uppercase the second line.", "allow_multiple": False}),
        ("read_file", {"file_path": NOTES}),
        ("run_shell_command", {"command": "sed -i 's/one/ONE/' notes.txt",
                               "description": "uppercase one"}),
    ]


def tool_names(body):
    names = []
    for t in body.get("tools") or []:
        for d in (t.get("functionDeclarations") or []) if isinstance(t, dict) else []:
            names.append(d.get("name"))
    return names


def tool_calls_so_far(body):
    n = 0
    for c in body.get("contents") or []:
        if c.get("role") == "model":
            n += sum(1 for p in c.get("parts") or [] if "functionCall" in p)
    return n


def chunk(parts, finish="STOP"):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-pro"}


class H(Handler):

    def do_GET(self):
        self._send(200, "application/json", b"{}")

    do_HEAD = do_GET

    def do_POST(self):
        body = self.json_body()
        if ":countTokens" in self.path:
            self._log(body, None)
            return self._send(200, "application/json", b'{"totalTokens": 10}')
        parts = [{"text": "ok"}]
        gen = body.get("generationConfig") or {}
        if gen.get("responseMimeType") == "application/json":
            # The model router's classifier (the only JSON-mode call in these runs).
            parts = [{"text": json.dumps({"complexity_reasoning": "a scripted e2e turn",
                                          "complexity_score": 10})}]
        if "write_file" in tool_names(body):
            n = tool_calls_so_far(body)
            if n < len(steps()):
                if n == 3 and not USER_EDITED:
                    with open(NOTES, "a") as f:
                        f.write(USER_LINE)
                    USER_EDITED.append(True)
                name, args = steps()[n]
                parts = [{"functionCall": {"name": name, "args": args}}]
            else:
                parts = [{"text": "done"}]
        self._log(body, parts)
        answer = chunk(parts)
        if ":streamGenerateContent" in self.path:
            return self._send(200, "text/event-stream",
                              f"data: {json.dumps(answer)}\r\n\r\n".encode())
        self._send(200, "application/json", json.dumps(answer).encode())

    def _log(self, body, answer):
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "answer": answer, "body": body}) + "\n")


serve(H, PORT_FILE)
