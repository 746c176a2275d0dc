#!/usr/bin/env python3
"""Helper overhead (issue 29): what recording local history costs while an agent works.

    benches/helper-overhead.py REWIND [ROUNDS]

1. CPU time of the resident helper (recording, as by default) during a `git checkout` that
   rewrites 10,000 files of the workspace (100 directories of 100 files of 1-3 KB), from just
   before the checkout until the helper has recorded the last file and gone idle, against the
   CPU time (user + system) of the `git checkout` itself. Rounds switch between two branches.
   Target: helper ≤ 0.5× the checkout.
2. Resident memory (VmRSS) of a recording helper on the 78k-file Linux tree of
   benches/fetch-data.sh (REWIND_BENCH_DATA, default ~/.cache/rewind-bench/linux), idle once
   its first recording scan has placed its watches. Target ≤ 50 MiB. Its home gets the tree's
   baseline (about 250 MB) under OUT.

OUT is REWIND_HELPER_BENCH_OUT (default /tmp/rewind-helper-bench, wiped first). Prints a
markdown table of the rounds, then the medians and ratios. SKIP=rss or SKIP=cpu leaves one out.
The CPU times come from /proc (clock ticks: 10 ms): read the ratios, not the milliseconds.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
N = 10_000


def cpu_of(pid):
    """User + system CPU seconds of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def status_of(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Helper:
    def __init__(self, rewind, home, ws):
        self.rewind, self.home, self.ws = rewind, home, ws
        self.env = dict(os.environ, REWIND_HOME=home)
        self.env.pop("REWIND_DISABLE", None)

    def run(self, *args, stdin=None):
        return subprocess.run(
            [self.rewind, *args], cwd=self.ws, env=self.env, input=stdin,
            capture_output=True, check=True,
        ).stdout

    def start(self):
        self.run("helper", "start", "--idle-timeout", "3600")
        self.pid = json.loads(self.run("--json", "helper", "status"))["pid"]
        # A hook event from the workspace makes the helper record it.
        event = json.dumps({
            "session_id": "bench", "cwd": self.ws, "hook_event_name": "UserPromptSubmit",
            "prompt": "go", "transcript_path": "/dev/null",
        }).encode()
        self.run("hook", "claude-code", stdin=event)
        while json.loads(self.run("--json", "helper", "status"))["watches"]["workspaces"] != 1:
            time.sleep(0.2)
        self.idle()

    def idle(self, quiet=1.0):
        """Wait until the helper used no CPU for `quiet` seconds."""
        last = cpu_of(self.pid)
        while True:
            time.sleep(quiet)
            now = cpu_of(self.pid)
            if now == last:
                return
            last = now

    def recorded(self, rel, text):
        out = json.loads(self.run("--json", "log", "--path", rel))
        v = out["versions"]
        return bool(v) and v[0]["size"] == len(text)

    def stop(self):
        subprocess.run([self.rewind, "helper", "stop"], env=self.env, capture_output=True)


def git(ws, *args):
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com",
         "-c", "commit.gpgsign=false", *args],
        cwd=ws, check=True, capture_output=True,
    )


def content(branch, i):
    # 1-3 KB of text, different on each branch.
    line = f"{branch} line of file {i}: " + "x" * (i % 40) + "\n"
    return line * (20 + i % 40)


def make_repo(ws):
    os.makedirs(ws)
    for branch in ("one", "three"):
        for i in range(N):
            p = os.path.join(ws, f"src/m{i // 100:02}/f{i % 100:03}.txt")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(content(branch, i))
        if branch == "one":
            git(ws, "init", "-q")
            with open(os.path.join(ws, ".gitignore"), "w") as f:
                f.write("node_modules/\n")
            git(ws, "add", "-A")
            git(ws, "commit", "-q", "-m", "one")
            git(ws, "branch", "one")
            git(ws, "checkout", "-q", "-b", "three")
        else:
            git(ws, "commit", "-q", "-a", "-m", "three")
    git(ws, "checkout", "-q", "one")


def checkout_rounds(rewind, out, rounds):
    ws = os.path.join(out, "storm")
    make_repo(ws)
    h = Helper(rewind, os.path.join(out, "home-storm"), ws)
    h.start()
    rows = []
    last = f"src/m{(N - 1) // 100:02}/f{(N - 1) % 100:03}.txt"
    try:
        for r in range(rounds):
            branch = "three" if r % 2 == 0 else "one"
            before = cpu_of(h.pid)
            t0 = time.monotonic()
            usage0 = os.times()
            subprocess.run(["git", "checkout", "-q", branch], cwd=ws, check=True)
            usage1 = os.times()
            wall = time.monotonic() - t0
            git_cpu = (usage1.children_user - usage0.children_user) + (
                usage1.children_system - usage0.children_system)
            while not h.recorded(last, content(branch, N - 1)):
                time.sleep(0.2)
            recorded = time.monotonic() - t0
            h.idle(0.5)
            helper_cpu = cpu_of(h.pid) - before
            rows.append((r + 1, wall, git_cpu, recorded, helper_cpu, helper_cpu / git_cpu))
    finally:
        h.stop()
    print(f"| round | checkout wall | checkout CPU | recorded after | helper CPU | helper/checkout |")
    print("|---|---|---|---|---|---|")
    for r, wall, g, rec, hc, ratio in rows:
        print(f"| {r} | {wall:.2f} s | {g:.2f} s | {rec:.2f} s | {hc:.2f} s | {ratio:.2f}× |")
    med = lambda i: statistics.median(row[i] for row in rows)
    print(f"\nmedians: checkout CPU {med(2):.2f} s, helper CPU {med(4):.2f} s, "
          f"ratio of medians {med(4) / med(2):.2f}×, median per-round ratio {med(5):.2f}× "
          f"(range {min(r[5] for r in rows):.2f}–{max(r[5] for r in rows):.2f}×); target ≤ 0.5×")


def idle_rss(rewind, out, rounds):
    data = os.environ.get("REWIND_BENCH_DATA", os.path.expanduser("~/.cache/rewind-bench"))
    tree = os.path.join(data, "linux")
    h = Helper(rewind, os.path.join(out, "home-linux"), tree)
    t0 = time.monotonic()
    h.start()
    first = time.monotonic() - t0
    try:
        samples = []
        for _ in range(rounds):
            time.sleep(1)
            samples.append(status_of(h.pid, "VmRSS"))
        peak = status_of(h.pid, "VmHWM")
        anon, file = status_of(h.pid, "RssAnon"), status_of(h.pid, "RssFile")
        dirs = json.loads(h.run("--json", "helper", "status"))["watches"]["dirs"]
    finally:
        h.stop()
    mib = lambda b: b / (1 << 20)
    print(f"\nidle recording helper on {tree} ({dirs} directories watched; first recording "
          f"scan and baseline {first:.0f} s): VmRSS median {mib(statistics.median(samples)):.1f} MiB "
          f"(range {mib(min(samples)):.1f}–{mib(max(samples)):.1f}), peak (VmHWM, during the "
          f"baseline) {mib(peak):.1f} MiB, of which heap and stacks (RssAnon) {mib(anon):.1f} "
          f"MiB and mapped files (RssFile: the executable's pages and index pages mapped at the time) {mib(file):.1f} MiB; "
          f"target ≤ 50 MiB")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rewind = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 5
    out = os.environ.get("REWIND_HELPER_BENCH_OUT", "/tmp/rewind-helper-bench")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    # A copy: a binary just written by the linker starts slower (see compare.sh).
    shutil.copy2(rewind, os.path.join(out, "rewind"))
    rewind = os.path.join(out, "rewind")
    skip = os.environ.get("SKIP", "")
    with open("/proc/loadavg") as f:
        print(f"load average at start: {f.read().split()[:3]}")
    if "cpu" not in skip:
        checkout_rounds(rewind, out, rounds)
    if "rss" not in skip:
        idle_rss(rewind, out, rounds)
    with open("/proc/loadavg") as f:
        print(f"load average at end: {f.read().split()[:3]}")


if __name__ == "__main__":
    main()
