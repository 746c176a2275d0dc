#!/usr/bin/env python3
"""Capture the subagent fixture of `rewind import claude-code` (see claude_capture.py): two
turns of fake_anthropic.py's `subagent` scenario: turn 1 Write notes.txt, an `Agent` call
whose subagent (its own requests to the fake server) Reads notes.txt, Edits it and Writes
sub.txt, then the parent's Edit of notes.txt; the user appends a line to notes.txt; turn 2
Read and NotebookEdit nb.ipynb.

Usage: capture_claude_subagent.py <claude binary> <out dir>"""
import json

from claude_capture import capture

NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                       "outputs": [], "source": ["print(1)"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}

capture(
    "capture_claude_subagent.py", "subagent",
    files=["notes.txt", "README.md", "sub.txt", "nb.ipynb"],
    committed={"README.md": "# e2e\n", "nb.ipynb": json.dumps(NOTEBOOK, indent=1) + "\n"},
    tools=["Write", "Edit", "MultiEdit", "Read", "Bash", "Agent", "Task", "NotebookEdit"],
    prompts=["turn one", "turn two"], timeout=300,
    title="a session whose subagent edits files",
    story="""turn 1 Write notes.txt
(create), Agent (its subagent: Read notes.txt, Edit notes.txt two -> TWO, Write sub.txt), Edit
notes.txt one -> ONE; (the user appends `user line` to notes.txt); turn 2 Read nb.ipynb,
NotebookEdit nb.ipynb.""",
)
