#!/usr/bin/env python3
"""Issue 43's review row (a benchmark, not a test): the review page with a 10,000-file window
(benches/undo-window.sh with UNDO_WINDOW_FILES=10000: the agent appended a line to each of the
first 10,000 Linux drivers/**/*.c), side by side with `rewind undo` of the same window.

Each round, on fresh copies of the workspace and home (copies not timed):
  1. api:     GET /api/sessions + GET /api/windows/1?offset=0&limit=200 (the page's first two
              calls: the window's first page of files, planned alone), timed on loopback.
  2. paint:   headless Chromium (tests/browser/check_review.py's WebDriver client) opens the
              page's URL and clicks the window; timed from the navigation until the session list
              is drawn (sessions) and from the click until the window's first files are drawn
              (window); "first paint" is the two together. Target: <= 1 s. These times include
              WebDriver's round trips and its 0.1 s polling.
     in-page: the page loaded again and timed inside the browser (performance.now(), resource
              timing, a MutationObserver): the session list's answer from the navigation's
              start, and an in-page click until the window's first files are in the DOM.
  3. confirm: GET /api/windows/1?blocked=true&limit=200 (what "Reject all..." asks before it shows
              its confirmation: the files it would skip, a dry run of every file).
     reject:  POST /api/reject {"window":"1","skip_unsafe":true} (the page's Reject all).
  4. undo:    `rewind undo --window 1` of the same window on a fresh copy (process start timed).
  Target: reject <= 1.25x undo (ratio of medians).

Usage: benches/review-10k.py REWIND [ROUNDS]   (data: benches/fetch-data.sh; chromium and
       chromedriver from Debian: apt-get install chromium chromium-driver)
Prints one JSON line per measurement, then medians and ratios.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "browser"))
RW = os.path.realpath(shutil.which(sys.argv[1]) or sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
FILES = int(os.environ.get("UNDO_WINDOW_FILES", "10000"))

# check_review.py reads its own argv at import: give it what it expects.
_argv = sys.argv
sys.argv = [_argv[0], RW, os.devnull]
import check_review as cr  # noqa: E402

sys.argv = _argv


# Clicks window 1 inside the page and answers when its first files are in the DOM: that
# time, the window call's answer (resource timing), and the session list's answer from the
# navigation's start, all in ms.
IN_PAGE = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
const api = p => performance.getEntriesByType('resource').filter(e => e.name.includes(p));
const obs = new MutationObserver(() => {
  if (!document.querySelectorAll('#window .file').length) return;
  obs.disconnect();
  const drawn = performance.now() - t0;
  const w = api('/api/windows/1?');
  done({ sessions: api('/api/sessions')[0].responseEnd, window: drawn,
         api: w.length ? w[w.length - 1].responseEnd - t0 : -1 });
});
obs.observe(document.getElementById('window'), { childList: true, subtree: true });
document.querySelector('button.win[data-window="1"]').click();
"""


def fresh(tmp):
    for d in ("ws", "home"):
        shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
        subprocess.run(["cp", "-a", os.path.join(tmp, d + ".tpl"), os.path.join(tmp, d)], check=True)
    subprocess.run(["sync"], check=True)


def serve(tmp):
    p = subprocess.Popen([RW, "--home", os.path.join(tmp, "home"), "--workspace", os.path.join(tmp, "ws"),
                          "review"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip().removeprefix("rewind review: ")
    return p, url


def call(url, method, path, body=None):
    base, token = url.split("/#token=")
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=600) as r:
        answer = json.load(r)
    return time.monotonic() - t0, answer


def outcomes(report):
    return " ".join(sorted({f["outcome"] for f in report["files"]})) + f" {len(report['files'])}"


def main():
    tmp = tempfile.mkdtemp(prefix="rewind-review10k.")
    procs = []
    driver = None
    rows = []
    try:
        env = dict(os.environ, UNDO_WINDOW_FILES=str(FILES))
        subprocess.run([os.path.join(HERE, "undo-window.sh"), os.path.join(tmp, "ws"),
                        os.path.join(tmp, "home"), RW], check=True, env=env)
        for d in ("ws", "home"):
            subprocess.run(["cp", "-a", os.path.join(tmp, d), os.path.join(tmp, d + ".tpl")], check=True)
        port = cr.free_port()
        cd = subprocess.Popen([cr.CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        procs.append(cd)
        driver = cr.Driver(port)
        end = time.monotonic() + 30
        while True:
            try:
                if driver.call("GET", "/status", timeout=5).get("ready"):
                    break
            except (OSError, RuntimeError):
                pass
            if time.monotonic() > end:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.2)
        driver.start(os.path.join(tmp, "profile"))

        def row(**r):
            rows.append(r)
            print(json.dumps(r), flush=True)

        for n in range(1, ROUNDS + 1):
            fresh(tmp)
            server, url = serve(tmp)
            s, _ = call(url, "GET", "/api/sessions")
            w, window = call(url, "GET", "/api/windows/1?offset=0&limit=200")
            row(round=n, kind="api", seconds=s + w, sessions=s, window=w, files=len(window["files"]),
                count=window["count"])
            # The page, in the browser: a blank page first so that each round navigates anew.
            driver.go("about:blank")
            t0 = time.monotonic()
            driver.go(url)
            driver.wait("the session list", "return document.querySelector('button.win[data-window=\"1\"]')",
                        timeout=120)
            t1 = time.monotonic()
            driver.click('button.win[data-window="1"]')
            drawn = driver.wait("the window's files",
                                "return document.querySelectorAll('#window .file').length", timeout=120)
            t2 = time.monotonic()
            row(round=n, kind="paint", seconds=t2 - t0, sessions=t1 - t0, window=t2 - t1, drawn=drawn)
            # The same page loaded again, timed inside the browser (no WebDriver round trips or
            # polling in it): the session list's answer from the navigation's start, and from
            # an in-page click until the window's first files are in the DOM.
            driver.go("about:blank")
            driver.go(url)
            driver.wait("the session list", "return document.querySelector('button.win[data-window=\"1\"]')",
                        timeout=120)
            inpage = driver.s("POST", "/execute/async", {"script": IN_PAGE, "args": []})
            row(round=n, kind="in-page", seconds=(inpage["sessions"] + inpage["window"]) / 1000,
                sessions=inpage["sessions"] / 1000, window=inpage["window"] / 1000,
                window_api=inpage["api"] / 1000)
            c, blocked = call(url, "GET", "/api/windows/1?blocked=true&limit=200")
            row(round=n, kind="confirm", seconds=c, blocked=blocked["selected"])
            r, report = call(url, "POST", "/api/reject", {"window": "1", "skip_unsafe": True})
            row(round=n, kind="reject-all", seconds=r, outcomes=outcomes(report))
            server.kill()
            server.wait()
            fresh(tmp)
            t0 = time.monotonic()
            out = subprocess.run([RW, "--home", os.path.join(tmp, "home"), "--workspace", os.path.join(tmp, "ws"),
                                  "--json", "undo", "--window", "1"], check=True, capture_output=True, text=True)
            row(round=n, kind="cli-undo", seconds=time.monotonic() - t0, outcomes=outcomes(json.loads(out.stdout)))
    finally:
        if driver:
            driver.quit()
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    by = {}
    for r in rows:
        by.setdefault(r["kind"], []).append(r)
    med = lambda k, f="seconds": statistics.median(x[f] for x in by[k])
    rng = lambda k, f="seconds": f"{min(x[f] for x in by[k]) * 1000:.0f}–{max(x[f] for x in by[k]) * 1000:.0f} ms"
    ms = lambda s: f"{s * 1000:.0f} ms"
    print(f"{FILES} files, {ROUNDS} rounds")
    print(f"api (sessions + window's first 200 files): median {ms(med('api'))} ({rng('api')}); "
          f"sessions {ms(med('api', 'sessions'))}, window {ms(med('api', 'window'))}")
    print(f"first paint (navigation -> session list -> click -> first files drawn): median {ms(med('paint'))} "
          f"({rng('paint')}); session list {ms(med('paint', 'sessions'))}, window {ms(med('paint', 'window'))}; "
          f"target <= 1000 ms")
    print(f"in page, the same page loaded again (no WebDriver in the times): median {ms(med('in-page'))} "
          f"({rng('in-page')}); session list answered {ms(med('in-page', 'sessions'))} after the navigation's "
          f"start, click -> first files in the DOM {ms(med('in-page', 'window'))} (window call answered "
          f"{ms(med('in-page', 'window_api'))} after the click)")
    print(f"Reject all's confirmation (blocked=true, every file planned): median {ms(med('confirm'))} "
          f"({rng('confirm')})")
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(by["reject-all"], by["cli-undo"])]
    print(f"reject-all {ms(med('reject-all'))} ({rng('reject-all')}) vs CLI undo {ms(med('cli-undo'))} "
          f"({rng('cli-undo')}): ratio of medians {med('reject-all') / med('cli-undo'):.2f}x "
          f"(per round {min(ratios):.2f}–{max(ratios):.2f}x), target <= 1.25x")


if __name__ == "__main__":
    main()
