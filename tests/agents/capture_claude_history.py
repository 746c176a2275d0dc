#!/usr/bin/env python3
"""Capture the fixture of `rewind import claude-code` (see claude_capture.py): three turns of
fake_anthropic.py's `history` scenario.

Usage: capture_claude_history.py <claude binary> <out dir>
       (tests/agents/run.sh installs the pinned Claude Code under target/agents/)"""
from claude_capture import capture

capture(
    "capture_claude_history.py", "history",
    files=["notes.txt", "README.md"],
    committed={"README.md": "# e2e\n"},
    tools=["Write", "Edit", "MultiEdit", "Read", "Bash"],
    prompts=["turn one", "turn two", "turn three"], timeout=180,
    title="one session's transcript and file history",
    story="""turn 1 Write notes.txt
(create), Read README.md, Write README.md (overwrite), Edit notes.txt, MultiEdit notes.txt (when offered: neither 2.1.197 nor later offer it);
(the user appends `user line` to notes.txt); turn 2 Read README.md, Edit README.md, Bash
`sed -i`; turn 3 Read notes.txt.""",
    rewind_files=True,
)
