"""A/B of undo/redo between builds, step 2: CYCLES undo-then-redo cycles per build, the builds
alternating (order reversed every other cycle), `sync` before each command; medians.

usage: python3 benches/ab/undo-ab.py CYCLES NAME=BINARY=DIR ...
Each DIR holds ws/ and home/ made by `benches/undo-window.sh DIR/ws DIR/home REWIND`; run each BINARY from a fresh `cp` (a binary the
linker just wrote starts slower on some kernels, see RESULTS.md) and swap the DIRs between
runs (two workspaces on one filesystem are not placed alike)."""
import os
import statistics
import subprocess
import sys
import time

cycles = int(sys.argv[1])
builds = [a.split("=") for a in sys.argv[2:]]
times = {}
for i in range(cycles):
    for name, binary, d in builds if i % 2 == 0 else builds[::-1]:
        for op in ("undo", "redo"):
            os.sync()
            t = time.perf_counter()
            r = subprocess.run([binary, "--home", d + "/home", "--workspace", d + "/ws", op],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            elapsed = time.perf_counter() - t
            if r.returncode != 0:
                sys.exit(f"{name} {op} failed: {r.stderr.decode()[:300]}")
            times.setdefault((name, op), []).append(elapsed)
for (name, op), v in sorted(times.items()):
    print(f"{name:8s} {op}: median {statistics.median(v) * 1e3:6.1f} ms  "
          f"min {min(v) * 1e3:6.1f}  max {max(v) * 1e3:6.1f}  n={len(v)}")
