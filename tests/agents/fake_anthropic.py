#!/usr/bin/env python3
"""A scripted fake Anthropic Messages server for the end-to-end agent suite.

Listens on 127.0.0.1 only. Every request body is appended (one JSON line) to the log
file. A request that offers the agent's tools (a `tools` list naming `Write`) gets the
next scripted step, chosen by how many tool calls the conversation already holds:

  0  Write  <ws>/notes.txt  "one\ntwo\n"            (create)
  1  Read   <ws>/README.md                          (Claude Code edits only files it read)
  2  Edit   README.md  "# e2e" -> "# e2e edited"    (edit of a committed file)
  3  Edit   notes.txt  two -> TWO                   (edit of the file it created)
     (before answering step 4, the server appends "user line" to notes.txt itself:
      the user's edit behind the agent's back; and a line to AGENTS.md, when there is one,
      which rewind gives the agent again at its next read)
  4  Read   notes.txt                               (rewind's hint must follow)
  5  Bash   sed -i 's/one/ONE/' notes.txt           (shell edit, found by the scans)
  6  text   "done"

Any other request (titles, summaries, token counts) gets a short text answer.

With FAKE_SCENARIO=history (capture_claude_history.py, the `rewind import claude-code`
fixture), the script is per turn instead: the turn is the number of earlier answers "done",
the step the number of tool calls since the last one:

  turn 1  Write notes.txt (create), Read README.md, Write README.md (overwrite),
          Edit notes.txt two -> TWO, MultiEdit notes.txt (three -> THREE, four -> FOUR)
          (between the turns the capture script appends "user line" to notes.txt)
  turn 2  Read README.md, Edit README.md, Bash `sed -i 's/one/ONE/' notes.txt`
  turn 3  Read notes.txt
each turn ending with the text "done".

With FAKE_SCENARIO=subagent (capture_claude_subagent.py), the main conversation's turn 1 is
Write notes.txt (create), Agent (a general-purpose subagent whose prompt holds
SUBAGENT_MARK), Edit notes.txt one -> ONE; its turn 2 is Read nb.ipynb, NotebookEdit
nb.ipynb; each ends with "done". A request whose first message holds SUBAGENT_MARK is the
subagent's own: Read notes.txt, Edit notes.txt two -> TWO, Write sub.txt (create), then
the text "subagent done".
Usage: fake_anthropic.py <workspace> <request-log> <port-file>
"""
import json
import os
import sys
from fake_server import Handler, serve

WS, LOG, PORT_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
NOTES = os.path.join(WS, "notes.txt")
README = os.path.join(WS, "README.md")
AGENTS = os.path.join(WS, "AGENTS.md")
AGENTS_LINE = "AGENTS-E2E-CHANGED: the rules changed\n"
USER_EDITED = []  # set once the "user" edit is made
USER_LINE = "user line\n"


def steps():
    return [
        ("Write", {"file_path": NOTES, "content": "one\ntwo\n"}),
        ("Read", {"file_path": README}),
        ("Edit", {"file_path": README, "old_string": "# e2e", "new_string": "# e2e edited"}),
        ("Edit", {"file_path": NOTES, "old_string": "two", "new_string": "TWO"}),
        ("Read", {"file_path": NOTES}),
        ("Bash", {"command": "sed -i 's/one/ONE/' notes.txt", "description": "uppercase one"}),
    ]


def history_turns():
    return [
        [("Write", {"file_path": NOTES, "content": "one\ntwo\nthree\nfour\n"}),
         ("Read", {"file_path": README}),
         ("Write", {"file_path": README, "content": "# e2e\nrewritten\n"}),
         ("Edit", {"file_path": NOTES, "old_string": "two", "new_string": "TWO"}),
         ("MultiEdit", {"file_path": NOTES, "edits": [
             {"old_string": "three", "new_string": "THREE"},
             {"old_string": "four", "new_string": "FOUR"}]})],
        [("Read", {"file_path": README}),
         ("Edit", {"file_path": README, "old_string": "rewritten", "new_string": "rewritten twice"}),
         ("Bash", {"command": "sed -i 's/one/ONE/' notes.txt", "description": "uppercase one"})],
        [("Read", {"file_path": NOTES})],
    ]


SUBAGENT_MARK = "SUBAGENT-TASK"


def subagent_turns():
    nb = os.path.join(WS, "nb.ipynb")
    return [
        [("Write", {"file_path": NOTES, "content": "one\ntwo\n"}),
         ("Agent", {"description": "edit notes", "subagent_type": "general-purpose",
                    "prompt": f"{SUBAGENT_MARK}: edit notes.txt and create sub.txt"}),
         ("Edit", {"file_path": NOTES, "old_string": "one", "new_string": "ONE"})],
        [("Read", {"file_path": nb}),
         ("NotebookEdit", {"notebook_path": nb, "cell_id": "c1", "new_source": "print(2)",
                           "edit_mode": "replace"})],
    ]


def subagent_steps():
    return [
        ("Read", {"file_path": NOTES}),
        ("Edit", {"file_path": NOTES, "old_string": "two", "new_string": "TWO"}),
        ("Write", {"file_path": os.path.join(WS, "sub.txt"), "content": "from the subagent\n"}),
    ]


def is_subagent(body):
    msgs = body.get("messages") or [{}]
    return SUBAGENT_MARK in json.dumps(msgs[0].get("content"))


def history_step(body):
    """(turn, step) of the history scenario: earlier "done" answers, tool calls since."""
    turn, step = 0, 0
    for m in body.get("messages", []):
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for c in m["content"]:
            if c.get("type") == "tool_use":
                step += 1
            elif c.get("type") == "text" and c.get("text") == "done":
                turn, step = turn + 1, 0
    return turn, step


def tool_calls_so_far(body):
    n = 0
    for m in body.get("messages", []):
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            n += sum(1 for c in m["content"] if c.get("type") == "tool_use")
    return n


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class H(Handler):

    def do_GET(self):
        self._send(200, "application/json", b"{}")

    do_HEAD = do_GET

    def do_POST(self):
        body = self.json_body()
        if "count_tokens" in self.path:
            with open(LOG, "a") as f:
                f.write(json.dumps({"path": self.path, "answer": None, "body": body}) + "\n")
            return self._send(200, "application/json", b'{"input_tokens": 10}')
        tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
        content = {"type": "text", "text": "ok"}
        msg_id = "msg_e2e"
        scenario = os.environ.get("FAKE_SCENARIO")
        if "Write" in tools and scenario == "subagent" and is_subagent(body):
            n = tool_calls_so_far(body)
            msg_id = f"msg_sub_{n:02d}"
            if n < len(subagent_steps()):
                name, inp = subagent_steps()[n]
                content = {"type": "tool_use", "id": f"toolu_sub_{n:02d}", "name": name, "input": inp}
            else:
                content = {"type": "text", "text": "subagent done"}
        elif "Write" in tools and scenario in ("history", "subagent"):
            turn, n = history_step(body)
            # Claude Code merges the content of assistant messages sharing an id.
            msg_id = f"msg_{scenario[0]}{turn}_{n:02d}"
            turns = subagent_turns() if scenario == "subagent" else history_turns()
            script = turns[turn] if turn < len(turns) else []
            # The subagent tool is `Agent` (older releases: `Task`); MultiEdit only when offered.
            script = [("Task" if s[0] == "Agent" and "Task" in tools else s[0], s[1]) for s in script]
            script = [s for s in script if s[0] in tools]
            if n < len(script):
                name, inp = script[n]
                content = {"type": "tool_use", "id": f"toolu_{scenario[0]}{turn}_{n:02d}", "name": name, "input": inp}
            else:
                content = {"type": "text", "text": "done"}
        elif "Write" in tools:
            n = tool_calls_so_far(body)
            if n < len(steps()):
                if n == 4 and not USER_EDITED:
                    with open(NOTES, "a") as f:
                        f.write(USER_LINE)
                    if os.path.exists(AGENTS):
                        with open(AGENTS, "a") as f:
                            f.write(AGENTS_LINE)
                    USER_EDITED.append(True)
                name, inp = steps()[n]
                content = {"type": "tool_use", "id": f"toolu_e2e_{n:02d}", "name": name, "input": inp}
            else:
                content = {"type": "text", "text": "done"}
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "answer": content, "body": body}) + "\n")
        stop = "tool_use" if content["type"] == "tool_use" else "end_turn"
        model = body.get("model", "claude-sonnet-4-5")
        msg = {"id": msg_id, "type": "message", "role": "assistant", "model": model,
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not body.get("stream"):
            msg["content"] = [content]
            msg["stop_reason"] = stop
            return self._send(200, "application/json", json.dumps(msg).encode())
        out = sse("message_start", {"type": "message_start", "message": msg})
        if content["type"] == "tool_use":
            start = dict(content, input={})
            out += sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start})
            out += sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": json.dumps(content["input"])}})
        else:
            out += sse("content_block_start", {"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}})
            out += sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": content["text"]}})
        out += sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        out += sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": 5}})
        out += sse("message_stop", {"type": "message_stop"})
        self._send(200, "text/event-stream", out)


serve(H, PORT_FILE)
