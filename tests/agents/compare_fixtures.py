#!/usr/bin/env python3
"""`run.sh --latest`: how the hook payloads an agent's newest release sent differ from the
newest recorded fixtures of that agent. Compares shapes, not values: for each payload file
(event and tool, as capture_fixtures.py names them) the set of JSON paths with their types
(`tool_input.file_path: str`, `edits[].old_string: str`); reports files only on one side and
paths added or gone. Always exits 0: a change is news for a person to read, not a failure.

Usage: compare_fixtures.py <agent> <new payload dir> <fixtures/hooks/<agent> dir>"""
import glob
import json
import os
import re
import sys


def shape(value, at=""):
    """{path: type name} of a JSON value; array elements merge under `[]`."""
    out = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(shape(v, f"{at}.{k}" if at else k))
    elif isinstance(value, list):
        for item in value:
            for k, t in shape(item, f"{at}[]").items():
                out[k] = t if out.get(k, t) == t else "mixed"
        if not value:
            out[f"{at}[]"] = "empty"
    else:
        out[at] = {bool: "bool", int: "number", float: "number", str: "str",
                   type(None): "null"}[type(value)]
    return out


def version_key(path):
    return [int(n) for n in re.findall(r"\d+", os.path.basename(path))]


def load(d):
    return {os.path.basename(p)[:-5]: json.load(open(p)) for p in glob.glob(f"{d}/*.json")}


def main():
    agent, new_dir, fixtures = sys.argv[1:4]
    recorded = sorted(glob.glob(f"{fixtures}/real-*"), key=version_key)
    recorded = [d for d in recorded if not d.endswith("-subagent")]
    if not recorded:
        print(f"   {agent}: no recorded fixtures under {fixtures} to compare with")
        return 0
    old_dir = recorded[-1]
    old, new = load(old_dir), load(new_dir)
    changes = []
    for name in sorted(set(old) - set(new)):
        changes.append(f"- {name}.json: not sent any more")
    for name in sorted(set(new) - set(old)):
        changes.append(f"+ {name}.json: new")
    for name in sorted(set(old) & set(new)):
        a, b = shape(old[name]), shape(new[name])
        for k in sorted(set(a) | set(b)):
            if k not in b:
                changes.append(f"- {name}.json: {k} ({a[k]}) gone")
            elif k not in a:
                changes.append(f"+ {name}.json: {k} ({b[k]}) new")
            elif a[k] != b[k] and "null" not in (a[k], b[k]):
                changes.append(f"~ {name}.json: {k} {a[k]} -> {b[k]}")
    rel = os.path.relpath(old_dir)
    if not changes:
        print(f"   {agent}: payloads have the shape of {rel}")
    else:
        print(f"   {agent}: {len(changes)} payload change(s) against {rel} (new payloads kept in {new_dir}):")
        for c in changes:
            print(f"     {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
