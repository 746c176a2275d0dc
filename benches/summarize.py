"""Turn one run of benches/compare.sh (its output directory) into the markdown of RESULTS.md."""

import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]


def load_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def fmt_t(s):
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_k(kib):
    return f"{kib / 1024:.1f} MiB"


def span(xs, f=fmt_t):
    return f"{f(statistics.median(xs))} ({f(min(xs))}–{f(max(xs))})"


def hyperfine(name):
    """command name -> (all times, per-round medians)."""
    times, rounds = {}, {}
    for path in sorted(glob.glob(os.path.join(out, "hf", f"{name}-*.json"))):
        for r in json.load(open(path))["results"]:
            times.setdefault(r["command"], []).extend(r["times"])
            rounds.setdefault(r["command"], []).append(statistics.median(r["times"]))
    return times, rounds


rows = load_jsonl(os.path.join(out, "results.jsonl"))
# Sections left out with SKIP= (compare.sh passes it on): a line saying so, not "not measured".
skip = os.environ.get("SKIP", "").split()


def skipped(section, num):
    if section in skip:
        row(num, f"({section}: skipped)", "", "", "", "", "")
        return True
    return False
machine = open(os.path.join(out, "machine.txt")).read()
table = []


def row(num, work, ours, anchor, ratio, target, met):
    table.append(f"| {num} | {work} | {ours} | {anchor} | {ratio} | {target} | {met} |")


def compare(num, work, times, rounds, ours, anchor, target, limit, faster=False):
    """ratio = ours/anchor (or anchor/ours when `faster`), with per-round range."""
    if ours not in times or anchor not in times:
        row(num, work, "not measured", "", "", target, "—")
        return
    a, b = statistics.median(times[ours]), statistics.median(times[anchor])
    per_round = [
        (y / x if faster else x / y) for x, y in zip(rounds[ours], rounds[anchor]) if x > 0 and y > 0
    ] or [float("nan")]
    ratio = b / a if faster else a / b
    met = ratio >= limit if faster else ratio <= limit
    rng = f"{min(per_round):.2f}–{max(per_round):.2f}"
    text = f"**{ratio:.2f}×** {'faster' if faster else ''} (rounds {rng})"
    row(num, work, f"`{ours}` {span(times[ours])}", f"`{anchor}` {span(times[anchor])}",
        text, target, ("—" if not target else "yes" if met else "**no**"))


if not skipped("prewrite", "1"):
    t, r = hyperfine("prewrite")
    compare("1", "pre-write, one 24 KB file, 78k-file tree", t, r, "rewind snap",
            "git hash-object -w", "≤ 1.5×", 1.5)
    compare("1", "", t, r, "rewind snap", "shadow git add", "≥ 10× faster", 10, faster=True)
    ht, hr = hyperfine("hook")
    if "rewind hook claude-code" in ht:
        # hyperfine -N --input: the event on stdin, no shell; the anchors in the same run.
        compare("1", "pre-write via the hook (own process)", ht, hr, "rewind hook claude-code",
                "git hash-object -w", "≤ 1.5×", 1.5)
        compare("1", "", ht, hr, "rewind hook claude-code", "shadow git add",
                "≥ 10× faster", 10, faster=True)
        if "rewind hook claude-code (helper)" in ht:
            compare("1", "pre-write via the hook, helper running (`rewind helper start`)", ht, hr,
                    "rewind hook claude-code (helper)", "git hash-object -w", "≤ 1.5×", 1.5)
            compare("1", "", ht, hr, "rewind hook claude-code (helper)", "shadow git add",
                    "≥ 10× faster", 10, faster=True)
        else:
            row("1", "pre-write via the hook, helper running",
                "not measured: the helper did not answer a probe", "", "", "≤ 1.5×", "—")
        compare("1", "snap in the same runs", ht, hr, "rewind snap",
                "git hash-object -w", "≤ 1.5×", 1.5)
    else:
        why = ("no hook timings in this run (a hyperfine with --input is needed: "
               "benches/fetch-data.sh installs one)" if "hook: handles" in machine
               else "the probe hook recorded no snapshot (see its hook.log)")
        row("1", "pre-write via `rewind hook claude-code`", f"not measured: {why}", "", "", "",
            "—")
if not skipped("check", "2"):
    t, r = hyperfine("check")
    compare("2", "read check, unchanged file", t, r, "rewind check", "b3sum", "≤ 1.5×", 1.5)
    ht, hr = hyperfine("read-hook")
    if ht:
        compare("2", "read check via the hook (PostToolUse Read, own process)", ht, hr,
                "rewind hook claude-code, Read", "b3sum", "≤ 1.5×", 1.5)
        if "rewind hook claude-code, Read (helper)" in ht:
            compare("2", "read check via the hook, helper running", ht, hr,
                    "rewind hook claude-code, Read (helper)", "b3sum", "≤ 1.5×", 1.5)

t, r = hyperfine("scan")
if "baseline" in skip:  # the scan runs on the baseline's home
    skipped("baseline", "3")
elif t:
    ours = [k for k in t if k.startswith("rewind")][0]
    compare("3", "scan, no changes, 78k files", t, r, ours, "git status --porcelain", "≤ 0.6×",
            0.6)
    ht, hr = hyperfine("scan-helper")
    if ht:
        # hyperfine -N --input; the helper's scans look only where its watches saw a change.
        compare("3", "scan via the hook, own process (`-N`)", ht, hr,
                "rewind scan (hook, PreToolUse Bash)", "git status --porcelain", "≤ 0.6×", 0.6)
        compare("3", "scan via the hook, helper running (directory watches)", ht, hr,
                "rewind scan (hook, PreToolUse Bash, helper)", "git status --porcelain",
                "≤ 0.6×", 0.6)
    tt, tr = hyperfine("scan-touched")
    if tt:
        compare("3", "scan after 100 files were touched (not the target's case), own process",
                tt, tr, "rewind scan (hook, PreToolUse Bash)", "git status --porcelain", "", 0)
        compare("3", "the same, helper running", tt, tr,
                "rewind scan (hook, PreToolUse Bash, helper)", "git status --porcelain", "", 0)
else:
    why = ("no scan timings in this run" if "scan: available" in machine
           else "the probe scan recorded no baseline")
    row("3", "scan, no changes, 78k files", f"not measured: {why}", "", "", "≤ 0.6×", "—")

timed = {}
for x in rows:
    if x["bench"] == "timed":
        timed.setdefault(x["label"], []).append(x)
du = {}
for x in rows:
    if x["bench"] == "du":
        du.setdefault(x["label"], []).append(x["kib"])
git_base = timed.get("git add -A && git write-tree", [])
snap_all = timed.get("rewind snap of every file (library, 1000 per call)", [])
scan_base = timed.get("rewind first baseline (hook, PreToolUse Bash)", [])
if "baseline" in skip:
    skipped("baseline", "4, 5")
elif git_base:
    gs = [x["seconds"] for x in git_base]
    grss = max(x["max_rss_kib"] for x in git_base)
    anchor = f"`git add -A && write-tree` {span(gs)}, peak RSS {fmt_k(grss)}"
    brow = [x for x in rows if x["bench"] == "baseline-row"]
    scan_label = "first baseline (scan via `rewind hook claude-code`, PreToolUse Bash, no budget)"
    if brow:
        done = all(x["complete"] for x in brow)
        scan_label += f"; {brow[-1]['files']} files, baseline {'complete' if done else '**incomplete**'}"
    for label, runs, is_proxy in ((scan_label, scan_base, False),
                                  ("stand-in: `Session::snap` of every file, 1000 per call", snap_all, True)):
        if not runs:
            row("4", "first baseline, 78k files", "not measured: the probe scan recorded no baseline", anchor, "",
                "≥ 5× faster; RSS ≤ 200 MB", "—")
            continue
        s = [x["seconds"] for x in runs]
        rss = max(x["max_rss_kib"] for x in runs)
        ratio = statistics.median(gs) / statistics.median(s)
        met = ratio >= 5 and rss <= 200 * 1024
        row("4", label, f"{span(s)}, peak RSS {fmt_k(rss)}", anchor,
            f"**{ratio:.2f}×** faster ({min(gs) / max(s):.2f}–{max(gs) / min(s):.2f})",
            "≥ 5× faster; RSS ≤ 200 MB", ("n/a (stand-in)" if is_proxy else
                                           ("yes" if met else "**no**")))
    g = du.get("shadow git after add -A", [])
    for label, key in (("after the baseline (scan)", "rewind home after baseline"),
                       ("after snap of every file", "rewind home after snap of every file")):
        ours = du.get(key, [])
        if not ours:
            continue
        ratio = statistics.median(ours) / statistics.median(g)
        row("5", f"store size {label}", fmt_k(statistics.median(ours)),
            f"shadow git dir {fmt_k(statistics.median(g))}", f"**{ratio:.2f}×**", "≤ 0.55×",
            "yes" if ratio <= 0.55 else "**no**")
    ours = du.get("rewind home after baseline, committed tree", [])
    if ours and g:
        # The same files, committed in their own repository: references to git's objects.
        ratio = statistics.median(ours) / statistics.median(g)
        committed = timed.get("rewind first baseline, committed tree (hook, PreToolUse Bash)", [])
        took = f" (baseline {span([x['seconds'] for x in committed])})" if committed else ""
        row("5", f"home after the first baseline of the tree committed in its own repository{took}",
            fmt_k(statistics.median(ours)), f"shadow git dir {fmt_k(statistics.median(g))}",
            f"**{ratio:.4f}×**", "≤ 0.05×", "yes" if ratio <= 0.05 else "**no**")

versions = [x for x in rows if x["bench"] == "replay-version"]
replay = [x for x in rows if x["bench"] == "replay"]
if "replay" in skip:
    skipped("replay", "6")
elif replay:
    for rp in replay:
        label = rp.get("label", "lodash")
        ratio = rp["rewind_kib"] / rp["git_packed_kib"]
        row("6", f"replay of {rp['versions']} {label} versions ({rp['writes']} writes, "
                 f"{rp['bytes_written'] / 1e6:.0f} MB written): store size",
            f"{fmt_k(rp['rewind_kib'])}, no gc",
            f"git after `gc --aggressive` {fmt_k(rp['git_packed_kib'])} (loose {fmt_k(rp['git_loose_kib'])}, gc took {rp['git_gc_s']:.1f} s)",
            f"**{ratio:.2f}×**", "≤ 1.0×", "yes" if ratio <= 1.0 else "**no**")
        if "rewind_stored_after" not in rp:
            continue
        ratio = rp["rewind_stored_after"] / rp["git_pack_blob_bytes"]
        row("6", f"replay of {label}: blob payload after rewind's pack step "
                 f"({rp['rewind_pack_s']:.1f} s; before it {rp['rewind_stored_before'] / 1e6:.2f} MB)",
            f"{rp['rewind_stored_after'] / 1e6:.2f} MB",
            f"blobs in git's pack after `gc --aggressive` {rp['git_pack_blob_bytes'] / 1e6:.2f} MB "
            f"(gc --aggressive {rp['git_gc_s']:.1f} s, plain gc {rp['git_gc_plain_s']:.1f} s)",
            f"**{ratio:.2f}×**", "≤ 1.0×", "yes" if ratio <= 1.0 else "**no**")
        ratio = rp["rewind_packed_kib"] / rp["git_packed_kib"]
        row("6", f"replay of {label}: whole home (`du`) after `gc --pack` (index "
                 f"{fmt_k(rp['rewind_index_kib'])}; before the step {fmt_k(rp['rewind_kib'])})",
            fmt_k(rp["rewind_packed_kib"]), f"git dir after `gc --aggressive` {fmt_k(rp['git_packed_kib'])}",
            f"**{ratio:.2f}×**", "≤ 1.0×", "yes" if ratio <= 1.0 else "**no**")
        row("6", f"replay of {label}: read every stored version back (decode + verify)",
            f"{rp['read_all_after_s']:.2f} s packed", f"{rp['read_all_before_s']:.2f} s before the pack step",
            f"{rp['read_all_after_s'] / max(rp['read_all_before_s'], 1e-9):.2f}×", "", "")
    rp = replay[0]
    changed = [v for v in versions if v["writes"] > 0]
    rw = [v["rewind_s"] for v in changed]
    ga = [v["git_add_s"] for v in changed]
    ws = rp["write_s"]
    # The measure: what one agent write costs rewind (snap + write + record,
    # in-process) against what one checkpoint costs a shadow-git tool (`git add -A`).
    ratio = statistics.median(ga) / statistics.median(ws)
    row("6", "replay: time per write (snap+write+record, in-process)", span(ws),
        f"shadow `git add -A` per version {span(ga)}", f"**{ratio:.1f}×** faster",
        "≥ 10× faster", "yes" if ratio >= 10 else "**no**")
    # Stricter readings, not the target's: all of a version's writes against one `git add -A`,
    # and one write against git's time per version divided by its writes.
    ratio = statistics.median(ga) / statistics.median(rw)
    row("6", "replay: time per version (all its writes, in-process), stricter than the target",
        span(rw), f"shadow `git add -A` per version {span(ga)}", f"{ratio:.2f}× faster", "", "")
    ga_per_write = statistics.median([v["git_add_s"] / v["writes"] for v in changed])
    row("6", "replay: time per write, stricter than the target", span(ws),
        f"`git add -A` per version ÷ its writes: {fmt_t(ga_per_write)}",
        f"{ga_per_write / statistics.median(ws):.2f}× faster", "", "")

t, r = hyperfine("undo")
skipped("undo", "7")
for cmd in sorted(t, key=lambda c: (c.split("(")[1], c)):
    m = statistics.median(t[cmd])
    what, fs = cmd.removeprefix("rewind ").split(" (1,000 files")
    fs = fs.strip(", )")
    row("7", f"{what} of one window of 1,000 files (CLI){', ' + fs if fs else ''}",
        span(t[cmd]), "—", "", "≤ 0.25 s", "yes" if m <= 0.25 else f"**no** ({m / 0.25:.1f}× the target)")

print("## Machine and data\n")
print("```\n" + machine.strip() + "\n```\n")
print("## Comparison (medians, min–max over all runs; ratio of medians, range of per-round ratios)\n")
print("| # | work | rewind | anchor | ratio | target | met |")
print("|---|---|---|---|---|---|---|")
print("\n".join(table))

th = [x for x in rows if x["bench"] == "threshold"]
if th:
    print("\n## Inline in SQLite vs one object file per blob (real Linux files, by compressed size)\n")
    print("| compressed size ≤ | blobs | mean compressed | disk per blob: inline / file | overhead over payload: inline / file | get per blob: inline / file | put per blob: inline / file |")
    print("|---|---|---|---|---|---|---|")
    by = {}
    for x in th:
        by.setdefault(x["bucket_kib"], {})[x["mode"]] = x
    for k in sorted(by):
        i, f = by[k].get("inline"), by[k].get("file")
        if not i or not f:
            continue
        n = i["blobs"]
        mean_c = i["compressed_bytes"] / n
        di, df = i["disk_kib"] * 1024 / n, f["disk_kib"] * 1024 / n
        print(f"| {k} KiB | {n} | {mean_c / 1024:.1f} KiB | {di / 1024:.1f} / {df / 1024:.1f} KiB"
              f" | {di / mean_c - 1:+.0%} / {df / mean_c - 1:+.0%}"
              f" | {fmt_t(i['get_s'] / n)} / {fmt_t(f['get_s'] / n)}"
              f" | {fmt_t(i['put_s'] / n)} / {fmt_t(f['put_s'] / n)} |")

crit = os.path.join(out, "criterion.txt")
if os.path.exists(crit):
    print("\n## Micro-benchmarks (criterion, `cargo bench --bench store`; [low median high])\n")
    print("```")
    lines = open(crit).read().splitlines()
    for a, b in zip(lines, lines[1:]):
        if b.strip().startswith("time:"):
            name = a.strip() if a.strip() else ""
            print(f"{name:<22} {b.strip()}")
        elif "time:" in a and a.split()[0].startswith("24k/"):
            print(re.sub(r"\s+", " ", a.strip()))
    print("```")
