"""What the importer benchmarks share (benches/import_codex.py, import_gemini.py, import_pi.py,
import_cline.py, import_copilot.py): timing `rewind import
<agent>` (its `--dry-run` and a real import, a fresh home each time) against the anchor's pass
over the same records, rounds interleaved, and the table of medians."""
import json, os, shutil, statistics, subprocess, sys, time


def rewind_import(rewind, agent, args, ws, home, derived, dry):
    """Seconds one `rewind import <agent> ARGS` takes into a fresh `home`; exits when it fails
    and asserts that it proved all `derived` edits."""
    shutil.rmtree(home, ignore_errors=True)
    cmd = [rewind, "--json", "import", agent, *args] + (["--dry-run"] if dry else [])
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ws, env=dict(os.environ, REWIND_HOME=home), capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"import failed ({r.returncode}): {r.stdout} {r.stderr}")
    s = json.loads(r.stdout)["sessions"][0]
    assert s["derived"] == derived, (s["derived"], derived, s.get("reasons"))
    return took


def run(rounds, anchor, import_once, title, anchor_name="tools", also=()):
    """`rounds` rounds of `anchor()`, each of `also` (name, function: reference passes, no
    target), then `import_once(dry)` for a dry run and a real import; prints `title` (a string,
    or a function called after the rounds) and each one's median, range and ratio to the
    anchor's median."""
    times = {anchor_name: [], **{name: [] for name, _ in also}, "dry-run": [], "import": []}
    for _ in range(rounds):  # interleaved round by round
        times[anchor_name].append(anchor())
        for name, once in also:
            times[name].append(once())
        times["dry-run"].append(import_once(True))
        times["import"].append(import_once(False))
    print(f"{title() if callable(title) else title}; {rounds} rounds; load {os.getloadavg()[0]:.1f}")
    base = statistics.median(times[anchor_name])
    for k, v in times.items():
        m = statistics.median(v)
        print(f"  {k:8s} median {m * 1000:8.1f} ms  (min {min(v) * 1000:.1f}, max {max(v) * 1000:.1f})  "
              f"{m / base:5.2f}x {anchor_name}")
