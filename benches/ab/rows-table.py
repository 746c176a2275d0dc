"""The table of benches/ab/rows.sh: OUT/hf/{prewrite,check,scan,undo}-ROUND.json, whose commands
are named "old WORK" and "new WORK", into old/new medians and ratios.

usage: python3 benches/ab/rows-table.py OUT [LIMIT]"""

import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
limit = float(sys.argv[2]) if len(sys.argv) > 2 else 1.05

# (row, section file, command name without the build, what RESULTS.md calls it)
ROWS = [
    ("1", "prewrite", "snap", "pre-write, one 24 KB file, 78k-file tree: `rewind snap`"),
    ("1", "prewrite", "hook-write", "pre-write via the hook (PreToolUse Write, own process)"),
    ("2", "check", "check", "read check, unchanged file: `rewind check`"),
    ("2", "check", "hook-read", "read check via the hook (PostToolUse Read, own process)"),
    ("3", "scan", "scan", "scan, no changes, 78k files (PreToolUse Bash hook, own process, `-N`)"),
    ("7", "undo", "undo", "undo of one window of 1,000 files (CLI)"),
    ("7", "undo", "redo", "redo of one window of 1,000 files (CLI)"),
]


def fmt_t(s):
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms" if s < 1e-2 else f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def span(xs):
    return f"{fmt_t(statistics.median(xs))} ({fmt_t(min(xs))}–{fmt_t(max(xs))})"


def pct(xs, q):
    """q-th percentile, linear between the closest ranks"""
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)


def section(name):
    """command name -> (all times, {round: median})"""
    times, rounds = {}, {}
    for path in glob.glob(os.path.join(out, "hf", f"{name}-*.json")):
        r = int(path.rsplit("-", 1)[1].split(".")[0])
        for res in json.load(open(path))["results"]:
            times.setdefault(res["command"], []).extend(res["times"])
            rounds.setdefault(res["command"], {})[r] = statistics.median(res["times"])
    return times, rounds


# Two estimates of new/old. `median`: the median of the per-round ratios of medians (each
# round compares runs seconds apart; the median over rounds drops the rounds a burst of load
# split). `p10`: the ratio of the 10th percentiles of all runs: interference from the other
# processes on the machine only adds time, so the fast runs are the least disturbed (in six
# A/A runs, the same binary against itself, under load 6-13 on 2 cores, p10 stayed within
# 5 % for rows 1 and 2 in 23 of 24 cases where the pooled medians moved by up to 46 %; rows
# 3 and 7 stayed noisy either way, p10 0.83-1.15 and 0.70-1.33). On a quiet machine the two
# agree; when they disagree on the limit the verdict is "unclear": run again, with more
# ROUNDS, or on a quieter machine.
print(f"| # | work | old | new | new/old, medians of all runs | new/old per round: median (min–max) "
      f"| new/old, p10 | within {100 * (limit - 1):.0f} % |")
print("|---|---|---|---|---|---|---|---|")
per_round_text = []
for num, sec, work, label in ROWS:
    times, rounds = section(sec)
    o, n = f"old {work}", f"new {work}"
    if o not in times or n not in times:
        print(f"| {num} | {label} | not measured | | | | | — |")
        continue
    pooled = statistics.median(times[n]) / statistics.median(times[o])
    per_round = [rounds[n][r] / rounds[o][r] for r in sorted(rounds[o]) if r in rounds[n]]
    paired = statistics.median(per_round)
    p10 = pct(times[n], 10) / pct(times[o], 10)
    if paired <= limit and p10 <= limit:
        verdict = "yes"
    elif paired > limit and p10 > limit:
        verdict = "**no**"
    else:
        verdict = "unclear (noise)"
    print(
        f"| {num} | {label} | {span(times[o])} | {span(times[n])} | {pooled:.3f}× "
        f"| **{paired:.3f}×** ({min(per_round):.2f}–{max(per_round):.2f}, {len(per_round)} rounds) "
        f"| **{p10:.3f}×** | {verdict} |"
    )
    per_round_text.append(f"- {num} {work}: {' '.join(f'{x:.2f}' for x in per_round)}")
print()
print("Per-round ratios of medians, in round order:")
print()
print("\n".join(per_round_text))
print()
machine = os.path.join(out, "machine.txt")
if os.path.exists(machine):
    print("```")
    print(open(machine).read().rstrip())
    print("```")
