"""What the importer benchmarks share (benches/import_claude.py, import_codex.py, import_gemini.py,
import_qwen.py, import_pi.py, import_cline.py, import_copilot.py): timing `rewind import
<agent>` (its `--dry-run` and a real import, a fresh home each time) against the anchor's pass
over the same records, rounds interleaved, and the table of medians."""
import json, os, shutil, statistics, subprocess, sys, time


def args():
    """The command line every importer benchmark takes: `<rewind binary> [turns] [edits per
    turn] [files] [rounds]` (200, 3, 100 and 5 unless given)."""
    given = [int(a) for a in sys.argv[2:6]]
    turns, edits, files, rounds = given + [200, 3, 100, 5][len(given):]
    return os.path.abspath(sys.argv[1]), turns, edits, files, rounds


def workspace(ws, text):
    """Write each file of `text` (name → content) into `ws` and make it a git repository."""
    for name, content in text.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(content)
    subprocess.run(["git", "init", "-q", ws], check=True)


def read_jsonl(path):
    """Parse every line of a JSON-lines file (what an anchor's pass does)."""
    with open(path) as f:
        for line in f:
            json.loads(line)


def read_dir(path):
    """Read every file of directory `path` whole."""
    for name in os.listdir(path):
        with open(os.path.join(path, name), "rb") as f:
            f.read()


def timed_import(rewind, agent, args, ws, home, dry):
    """Seconds one `rewind --json import <agent> ARGS` (`--dry-run` when `dry`) takes into a
    fresh `home`, and its report; exits when it fails. The caller checks the report: a
    benchmark of an import that proved nothing is worthless."""
    shutil.rmtree(home, ignore_errors=True)
    cmd = [rewind, "--json", "import", agent, *args] + (["--dry-run"] if dry else [])
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ws, env=dict(os.environ, REWIND_HOME=home), capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"import failed ({r.returncode}): {r.stderr}{r.stdout[:2000]}")
    return took, json.loads(r.stdout)


def rewind_import(rewind, agent, args, ws, home, derived, dry):
    """[`timed_import`]'s seconds, asserting that the import proved all `derived` edits."""
    took, report = timed_import(rewind, agent, args, ws, home, dry)
    s = report["sessions"][0]
    assert s["derived"] == derived, (s["derived"], derived, s.get("reasons"))
    return took


def run(rounds, anchor, import_once, title, anchor_name="tools", also=(), names=("dry-run", "import")):
    """`rounds` rounds of `anchor()`, each of `also` (name, function: reference passes, no
    target), then `import_once(True)` and `import_once(False)` (a dry run and a real import,
    unless `names` says otherwise); prints `title` (a string, or a function called after the
    rounds) and each one's median, range and ratio to the anchor's median."""
    first, second = names
    times = {anchor_name: [], **{name: [] for name, _ in also}, first: [], second: []}
    for _ in range(rounds):  # interleaved round by round
        times[anchor_name].append(anchor())
        for name, once in also:
            times[name].append(once())
        times[first].append(import_once(True))
        times[second].append(import_once(False))
    print(f"{title() if callable(title) else title}; {rounds} rounds; load {os.getloadavg()[0]:.1f}")
    base = statistics.median(times[anchor_name])
    for k, v in times.items():
        m = statistics.median(v)
        print(f"  {k:8s} median {m * 1000:8.1f} ms  (min {min(v) * 1000:.1f}, max {max(v) * 1000:.1f})  "
              f"{m / base:5.2f}x {anchor_name}")
