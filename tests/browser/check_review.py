#!/usr/bin/env python3
"""The review page (issues 28 and 43) in a real browser: headless Chromium, driven over
WebDriver (chromedriver's W3C HTTP protocol, spoken here with the standard library), loads
the page `rewind review` serves for a scratch workspace, clicks Reject on one file, Reject
on a file changed on disk after the page showed it, Reject all on a window (confirmed),
Reject hunk on a file a turn edited three times and Take back, Reject hunk and Take back on
earlier turns of a 3-turn Claude Code session (made through `rewind hook claude-code`) that
Edits one file in every turn, and a keyboard-only session-wide reject with its confirmation
and one "Undo this reject"; after each click the
files on disk are compared byte for byte and the page's DOM is checked for the state it
shows, where the result appears, and that the page did not jump. Also: no cookie, the token
out of the address bar, distinct accessible names, contrast, the focus order, the banner
when the server is gone. Screenshots are kept for a human to look at.

Usage: check_review.py REWIND_BIN SCREENSHOT.png   (tests/browser/run.sh calls it; a
       side-by-side screenshot goes next to it, SCREENSHOT-side-by-side.png)
Env:   CHROMIUM (default /usr/bin/chromium), CHROMEDRIVER (default /usr/bin/chromedriver)
Exit:  0 every check passed, 1 a check failed.
"""

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

RW, SHOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
# The network is closed here: without these flags Chromium waits on connections it tries
# to open at start (component updates, sync, field trials, QUIC probes).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,900",
]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
FAILED = []


def check(what, ok, detail=""):
    print(("  PASS  " if ok else "  FAIL  ") + what + ("" if ok else f": {detail}"))
    if not ok:
        FAILED.append(what)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    """Just the WebDriver commands this test needs."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.sid = None

    def call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.load(r)["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"webdriver {method} {path}: {e.code} {e.read()[:500]!r}")

    def start(self, profile):
        caps = {"browserName": "chrome", "goog:chromeOptions": {
            "binary": CHROMIUM, "args": CHROMIUM_ARGS + [f"--user-data-dir={profile}"]}}
        v = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=120)
        self.sid = v["sessionId"]

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.sid}{path}", body)

    def go(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def click(self, css, timeout=10):
        """Clicks the element `css` names, found again when the page re-rendered it between
        the find and the click (the page refreshes its lists after every action)."""
        end = time.monotonic() + timeout
        while True:
            el = self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]
            try:
                self.s("POST", f"/element/{el}/click", {})
                return
            except RuntimeError as e:
                if "stale element reference" not in str(e) or time.monotonic() > end:
                    raise
                time.sleep(0.1)

    def wait(self, what, script, *args, timeout=20):
        """Polls `script` (a function body returning a truthy value when done)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.js(script, *args)
            if v:
                return v
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}")

    def keys(self, text):
        """Types `text` (WebDriver key codes allowed) into whatever has the focus."""
        actions = [{"type": "keyDown", "value": c} for c in text]
        actions = [a for c in text for a in ({"type": "keyDown", "value": c}, {"type": "keyUp", "value": c})]
        self.s("POST", "/actions", {"actions": [{"type": "key", "id": "kb", "actions": actions}]})
        self.s("DELETE", "/actions")

    def screenshot(self, path):
        png = base64.b64decode(self.s("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)

    def quit(self):
        if self.sid:
            try:
                self.call("DELETE", f"/session/{self.sid}", timeout=20)
            except Exception:
                pass


def scenario(ws, env):
    """Window 1 writes a, b, c (b is then edited by the user over the agent's line);
    window 2 writes x and y, and z's write is never recorded (metadata-only)."""
    def rw(*args):
        subprocess.run([RW, *args], cwd=ws, env=env, check=True, stdout=subprocess.DEVNULL)

    def write(rel, text):
        with open(os.path.join(ws, rel), "wb") as f:
            f.write(text.encode())

    def agent_write(rel, text):
        rw("snap", rel)
        write(rel, text)
        rw("record", rel)

    for rel in "abcxyz":
        write(rel, f"{rel}0\n")
    write("m", M0)
    rw("window", "open", "--label", "Make a, b and c say 1")
    for rel in "abc":
        agent_write(rel, f"{rel}1\n")
    rw("window", "close")
    write("b", "user\n")
    rw("window", "open")
    agent_write("x", "x1\n")
    agent_write("y", "y1\n")
    rw("snap", "z")
    write("z", "z1\n")
    rw("window", "close")
    # Window 3: Claude Code's several Edit calls to one file in one turn.
    rw("window", "open", "--label", "Edit m three times")
    agent_write("m", M1)
    agent_write("m", M2)
    agent_write("m", M3)
    rw("window", "close")


def lines(edits):
    return "".join(f"{edits.get(i, i)}\n" for i in range(1, 41))


M0 = lines({})
M1 = lines({3: "three"})
M2 = lines({3: "three", 20: "twenty"})
M3 = lines({3: "three", 20: "twenty", 37: "thirty-seven"})


def disk(ws):
    out = {}
    for rel in "abcxyzm":
        with open(os.path.join(ws, rel), "rb") as f:
            out[rel] = f.read()
    return out


# The page's state as it shows it: each file's data-state, its Reject button, its result box;
# the window's result box.
PAGE_STATE = """
const files = {};
for (const d of document.querySelectorAll('#window .file')) {
  const b = d.querySelector('button.reject');
  files[d.dataset.path] = { state: d.dataset.state, text: d.querySelector('.state').textContent,
                            disabled: b.disabled, title: b.title,
                            result: d.querySelector('.result').textContent };
}
const h = document.querySelector('#window h1');
const w = document.getElementById('window-result');
return { heading: h ? h.textContent : null, files, result: w ? w.textContent : null };
"""

# WCAG contrast of each text style the page uses, against its own background.
CONTRAST = """
const lum = c => { const v = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(x => x / 255)
  .map(x => x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4));
  return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
const bg = e => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor;
  if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') return c; } return 'rgb(255, 255, 255)'; };
const out = {};
for (const sel of arguments[0]) {
  const e = document.querySelector(sel);
  if (!e) { out[sel] = null; continue; }
  const a = lum(getComputedStyle(e).color), b = lum(bg(e));
  out[sel] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}
return out;
"""

STATE_OF = "return document.querySelector(`.file[data-path=\"${arguments[0]}\"]`)?.dataset.state"


def run(driver, ws, url):
    expect = disk(ws)
    driver.go(url)
    driver.wait("the session list", "return document.querySelector('button.win[data-window=\"1\"]')")
    sessions = driver.js("return document.getElementById('sessions').textContent")
    check("the session list names window 1 and window 2 with their change counts",
          "window 1 [agent]" in sessions and "3 changes" in sessions
          and "window 2 [agent]" in sessions, sessions)
    label = driver.js("return document.querySelector('.session-label').textContent")
    check("the session shows its first prompt", label == "Make a, b and c say 1", label)
    meta = driver.js("return document.querySelector('.session-meta').textContent")
    check("the session says when it ran and its counts", meta.endswith("3 windows, 9 changes"), meta)
    check("the token left the address bar", "token" not in driver.js("return location.href"),
          driver.js("return location.href"))
    driver.s("POST", "/back", {})
    driver.s("POST", "/forward", {})
    driver.wait("the page again", "return document.querySelector('button.win[data-window=\"1\"]')")
    check("the URL with the token is not in the tab's history (back, forward: no token)",
          "token" not in driver.js("return location.href"), driver.js("return location.href"))
    cookies = driver.s("GET", "/cookie")
    check("the server set no cookie", cookies == [] and driver.js("return document.cookie") == "",
          cookies)

    driver.click('button.win[data-window="1"]')
    driver.wait("window 1's files", "return document.querySelectorAll('#window .file').length === 3")
    page = driver.js(PAGE_STATE)
    f = page["files"]
    check("window 1 shows a and c in effect, b in conflict",
          (f["a"]["state"], f["b"]["state"], f["c"]["state"]) == ("in-effect", "conflict", "in-effect"),
          f)
    check("b's Reject is disabled with its conflict as the reason",
          f["b"]["disabled"] and f["b"]["title"].startswith("conflict: "), f["b"])
    check("a's Reject is enabled", not f["a"]["disabled"], f["a"])

    # Reject one file.
    driver.click('.file[data-path="a"] button.reject')
    driver.wait("a undone", "return document.querySelector('.file[data-path=\"a\"]')?.dataset.state === 'undone'")
    expect["a"] = b"a0\n"
    now = disk(ws)
    check("Reject on a restored a byte for byte and touched nothing else", now == expect,
          f"{now} != {expect}")
    page = driver.js(PAGE_STATE)
    check("the page shows a undone, its Reject disabled, c still in effect",
          page["files"]["a"]["state"] == "undone" and page["files"]["a"]["disabled"]
          and page["files"]["c"]["state"] == "in-effect", page["files"])
    check("the result is shown at a, names it restored and offers Take back",
          "restored  a" in page["files"]["a"]["result"]
          and driver.js("return !!document.querySelector('.file[data-path=\"a\"] .result button.redo')"),
          page["files"]["a"])
    check("the live region says what happened",
          driver.js("return document.getElementById('live').textContent") == "reject of a: undone (recorded as window 4)",
          driver.js("return document.getElementById('live').textContent"))

    # c changes on disk while the page shows it in effect: the click is re-checked.
    with open(os.path.join(ws, "c"), "wb") as fh:
        fh.write(b"mine\n")
    expect["c"] = b"mine\n"
    driver.click('.file[data-path="c"] button.reject')
    driver.wait("c's conflict", "return document.querySelector('.file[data-path=\"c\"]')?.dataset.state === 'conflict'")
    page = driver.js(PAGE_STATE)
    now = disk(ws)
    check("Reject on c, edited after the page showed it, wrote nothing", now == expect,
          f"{now} != {expect}")
    check("the result at c says the reject was refused and why",
          "nothing was written" in page["files"]["c"]["result"] and "[overlap]" in page["files"]["c"]["result"],
          page["files"]["c"])

    # Reject all on window 2: x and y are restored, z (metadata-only) is skipped.
    driver.click('button.win[data-window="2"]')
    driver.wait("window 2's files", "return document.querySelectorAll('#window .file[data-path=\"x\"]').length === 1")
    page = driver.js(PAGE_STATE)
    z = page["files"]["z"]
    check("z (its write never recorded) cannot be rejected, and the page says why",
          z["disabled"] and z["title"].startswith("conflict: unproven — ")
          and "full text verified" not in driver.js(
              "return document.querySelector('.file[data-path=\"z\"]').textContent"), z)
    driver.click("#reject-all")
    driver.wait("the confirmation", "return document.activeElement?.classList.contains('confirm-reject-all')")
    panel = driver.js("return document.querySelector('.confirm').textContent")
    check("Reject all asks first and lists what it will skip (z, unproven)",
          "z: conflict: unproven" in panel and disk(ws) == expect, panel)
    driver.click(".confirm-reject-all")
    driver.wait("x and y undone", "const s = p => document.querySelector(`.file[data-path=\"${p}\"]`)?.dataset.state;"
                " return s('x') === 'undone' && s('y') === 'undone'")
    expect["x"], expect["y"] = b"x0\n", b"y0\n"
    now = disk(ws)
    check("Reject all on window 2 restored x and y byte for byte and left z and the rest",
          now == expect, f"{now} != {expect}")
    page = driver.js(PAGE_STATE)
    check("the page shows x and y undone and z still unproven",
          page["files"]["z"]["state"] == "conflict" and "unproven" in page["files"]["z"]["text"],
          page["files"])
    check("the result lists z as skipped, with the reason",
          "skipped  z" in page["result"] and "[unproven]" in page["result"], page["result"])
    sessions = driver.wait("the reject in the list", "const t = document.getElementById('sessions').textContent; return t.includes('[reject] undo of window 2') && t")
    check("the session list now shows the reject of window 2, with Take back",
          "[reject] undo of window 2" in sessions
          and driver.js("return !!document.querySelector('#sessions button.redo')"), sessions)
    nested = driver.js("const r = [...document.querySelectorAll('#sessions .winrow')]; const i = r.findIndex(x => x.textContent.includes('[reject] undo of window 2'));"
                       " return [r[i].classList.contains('nested'), r[i - 1].querySelector('button.win').dataset.window]")
    check("the reject sits under the turn it rejected (window 2)", nested == [True, "2"], nested)
    label = driver.js("return document.querySelector('.session-label').textContent")
    check("the first prompt is still the agent's, not an undo window's label",
          label == "Make a, b and c say 1", label)

    driver.wait("x's diff", "return document.querySelector('.file[data-path=\"x\"] table.diff')")
    hunk = driver.js("const b = document.querySelector('.file[data-path=\"x\"] button.reject-hunk');"
                     " return b ? [b.disabled, b.title] : null")
    check("x, undone, offers no Reject hunk (disabled, saying why)",
          hunk is not None and hunk[0] is True and hunk[1] == "already undone", hunk)
    meta = driver.js("return document.querySelector('.session-meta').textContent")
    check("session times are shown to the second, in UTC",
          re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", meta) is not None, meta)
    driver.screenshot(SHOT)
    check(f"screenshot kept at {SHOT}", os.path.getsize(SHOT) > 10_000)

    # Take back undoes the Reject all.
    driver.click("#window-result button.redo")
    driver.wait("x in effect again", "const s = p => document.querySelector(`.file[data-path=\"${p}\"]`)?.dataset.state;"
                " return s('x') === 'in-effect' && s('y') === 'in-effect'")
    expect["x"], expect["y"] = b"x1\n", b"y1\n"
    now = disk(ws)
    check("Redo put x and y back byte for byte", now == expect, f"{now} != {expect}")
    page = driver.js(PAGE_STATE)
    check("the result says redone", "redone" in page["result"], page["result"])
    # The redo that took the reject back sits under the turn it redid, beside that reject.
    redo = driver.wait("the redo in the list", """const r = [...document.querySelectorAll('#sessions .winrow')];
      const i = r.findIndex(x => x.textContent.includes('[redo] redo of window 2'));
      if (i < 0) return null;
      const owner = r.slice(0, i).reverse().find(x => !x.classList.contains('nested'));
      return [r[i].classList.contains('nested'), owner.querySelector('button.win').dataset.window];""")
    check("the redo that took the reject back is listed under the turn it redid (window 2)",
          redo == [True, "2"], redo)
    hunks_and_keyboard(driver, ws, expect)


def hunks_and_keyboard(driver, ws, expect):
    """Window 3 edited m three times: one diff, three hunks; reject hunk 2, see it rejected at
    the file without a jump, take it back; then a keyboard-only session-wide reject."""
    driver.click('button.win[data-window="3"]')
    driver.wait("m's diff", "return document.querySelectorAll('.file[data-path=\"m\"] tr.hunk').length")
    hunks = driver.js("return [...document.querySelectorAll('.file[data-path=\"m\"] tr.hunk')].map(r => r.dataset.state)")
    check("m, edited three times in one turn, shows one diff of three hunks, all in effect",
          hunks == ["in-effect"] * 3, hunks)
    counts = driver.js("return document.querySelector('.file[data-path=\"m\"] .counts').textContent")
    check("m's header counts its lines, +3 −3", counts == "+3 −3", counts)
    stray = driver.js("return [...document.getElementById('window').childNodes].filter(n => n.nodeType === 3 && n.textContent.trim()).map(n => n.textContent)")
    check("the window's view has no stray text between its parts (it showed \"null\")", stray == [], stray)
    turn = driver.wait("the turn's counts", "return document.getElementById('turn-counts').textContent")
    check("the turn says its files and +/− counts", turn == "1 file +3 −3", turn)
    mark = driver.js("return document.querySelector('.file[data-path=\"m\"] .mark').textContent")
    check("m is marked modified (M)", mark == "M", mark)
    names = driver.js("return [...document.querySelectorAll('main button')].map(b => b.getAttribute('aria-label') || b.textContent)")
    rejects = [n for n in names if n.startswith("Reject")]
    check("every Reject button has a name of its own", len(rejects) == len(set(rejects)) and
          "Reject hunk 2 of m" in rejects, rejects)
    ln = driver.js("return [...document.querySelectorAll('.file[data-path=\"m\"] tr.hunk')[1].nextElementSibling.querySelectorAll('td.ln')].map(t => t.textContent)")
    check("the unified view numbers the lines of both sides", ln == ["17", "17"], ln)
    # Keyboard: j to the file, n n to its second hunk, r to reject it.
    driver.js("document.activeElement.blur()")
    driver.keys("jnn")
    focused = driver.js("return document.activeElement.getAttribute('aria-label')")
    check("j then n n reach hunk 2 of m", focused == "Reject hunk 2 of m", focused)
    top = driver.js("return document.getElementById('main').scrollTop")
    driver.keys("r")
    driver.wait("hunk 2 rejected", "return document.querySelectorAll('.file[data-path=\"m\"] tr.hunk')[1]?.dataset.state === 'rejected'")
    expect["m"] = lines({3: "three", 37: "thirty-seven"}).encode()
    now = disk(ws)
    check("Reject hunk 2 reverted that hunk only, byte for byte", now == expect, f"{now} != {expect}")
    after = driver.js("return document.getElementById('main').scrollTop")
    check("the page did not jump (scroll position kept)", abs(after - top) < 5, (top, after))
    check("the focus stays on the rejected hunk's row", driver.js(
        "return !!document.activeElement.closest('.file[data-path=\"m\"]')"),
        driver.js("return document.activeElement.outerHTML.slice(0, 100)"))
    page = driver.js(PAGE_STATE)
    check("the result is at m, and m is still in effect (its other hunks are)",
          page["files"]["m"]["result"].startswith("reject of hunk 2 of m: undone")
          and page["files"]["m"]["state"] == "in-effect", page["files"]["m"])
    disabled = driver.js("return document.querySelector('button.reject-hunk[aria-label=\"Reject hunk 2 of m\"]').disabled")
    check("the rejected hunk is no longer offered", disabled is True, disabled)
    driver.click('.file[data-path="m"] .result button.redo')
    driver.wait("hunk 2 back", "return document.querySelectorAll('.file[data-path=\"m\"] tr.hunk')[1]?.dataset.state === 'in-effect'")
    expect["m"] = M3.encode()
    now = disk(ws)
    check("Take back put hunk 2 back byte for byte", now == expect, f"{now} != {expect}")

    words = driver.js("return wordSpans('let total = count + 1;', 'let total = count + 2;').map(p => typeof p === 'string' ? p : '[' + p.textContent + ']')")
    check("word-level highlight: only the part that differs from its pair is marked",
          words == ["let total = count + ", "[1]", ";"], words)
    driver.click("#view-toggle")
    driver.wait("side by side", "return document.querySelector('.file[data-path=\"m\"] table.diff.sbs')")
    widths = driver.js("const r = document.querySelector('table.sbs td.code.old').getBoundingClientRect(); return [r.width, document.querySelector('table.sbs').getBoundingClientRect().width]")
    check("side by side: two code columns of about half the table each",
          widths[0] > widths[1] * 0.4, widths)
    shot = SHOT.replace(".png", "-side-by-side.png")
    driver.screenshot(shot)
    check(f"side-by-side screenshot kept at {shot}", os.path.getsize(shot) > 10_000)

    # Focus order starts at the content: the first Tab stop is in <main>, not the session list.
    driver.js("document.activeElement.blur(); document.body.focus()")
    driver.keys("\ue004")
    first = driver.js("return document.activeElement.closest('main') !== null")
    check("the first Tab stop is in the content", first, driver.js("return document.activeElement.outerHTML.slice(0, 120)"))
    ratios = driver.js(CONTRAST, [".muted", ".state-in-effect", ".state-conflict", ".state-undone",
                                  "table.diff td.ln", "tr.hunk td", ".counts .plus", ".counts .minus"])
    low = {k: v for k, v in ratios.items() if v is not None and v < 4.5}
    measured = [v for v in ratios.values() if v is not None]
    check("text contrast is at least 4.5:1", not low and len(measured) >= 6, ratios)

    # Keyboard only: Enter on "Reject all in this session" asks; Enter again rejects.
    before = disk(ws)
    driver.js("document.querySelector('button.reject-session').focus()")
    driver.keys("\ue007")
    driver.wait("the session confirmation", "return document.activeElement?.classList.contains('confirm-reject-session')")
    check("one Enter on the session-wide reject only asks", disk(ws) == before)
    asked = driver.js("return document.querySelector('.confirm p').textContent")
    driver.keys("\ue007")
    driver.wait("the session rejected", "return document.getElementById('window-result').textContent.startsWith('session browser: undone')")
    result = driver.js("return document.getElementById('window-result').textContent")
    listed = re.search(r"still in effect \(([\d, ]*)\)", asked)
    listed = sorted(int(x) for x in listed.group(1).split(", ")) if listed and listed.group(1) else None
    tried = sorted(int(x) for x in re.findall(r"^window (\d+): ", result, re.M))
    check("the confirmation listed exactly the windows the session-wide reject then took "
          "(no redo or reject window among them)", listed == tried and listed, (asked, result))
    now = disk(ws)
    check("the session-wide reject undid every safe file (b and c stay, z skipped)",
          now["a"] == b"a0\n" and now["x"] == b"x0\n" and now["m"] == M0.encode()
          and now["b"] == b"user\n" and now["c"] == b"mine\n", now)
    driver.click('#window-result button.redo[aria-label^="Take back this reject of session"]')
    driver.wait("the session back", "return document.getElementById('window-result').textContent.startsWith('session browser: redone, 2 windows done')")
    now = disk(ws)
    check("one Undo this reject took the whole session-wide reject back, byte for byte",
          now == before, f"{now} != {before}")

    # Reject anyway: b holds the user's edit over the agent's line; the page shows what a
    # forced reject overwrites and asks first.
    driver.click('button.win[data-window="1"]')
    driver.wait("b's Reject anyway", "const b = document.querySelector('.file[data-path=\"b\"] button.reject-anyway'); return b && !b.hidden")
    driver.click('.file[data-path="b"] button.reject-anyway')
    driver.wait("the forced reject's confirmation", "return document.activeElement?.classList.contains('confirm-anyway')")
    panel = driver.js("return document.querySelector('.file[data-path=\"b\"] .anyway-box').textContent")
    check("Reject anyway shows the line it overwrites (user) and what comes back (b0), and asks",
          "user" in panel and "b0" in panel and "stored first" in panel and disk(ws)["b"] == b"user\n", panel)
    driver.keys("\ue007")
    driver.wait("b rejected", "return document.querySelector('.file[data-path=\"b\"] .result').textContent.startsWith('forced reject of b: undone')")
    now = disk(ws)
    check("the forced reject wrote b as it was before the agent, byte for byte", now["b"] == b"b0\n", now["b"])

    driver.screenshot(SHOT)


def many_files(driver, ws, env, url, count=250):
    """A window of `count` files (a session of its own, made while the page is open): the
    first 200 are drawn at once, "Show more" draws the rest, the filter finds one by path."""
    os.makedirs(os.path.join(ws, "many"), exist_ok=True)
    paths = [f"many/f{i}.txt" for i in range(count)]
    for p in paths:
        with open(os.path.join(ws, p), "w") as f:
            f.write("before\n")
    senv = dict(env, REWIND_SESSION="many")
    run = lambda *a: subprocess.run([RW, *a], cwd=ws, env=senv, check=True, stdout=subprocess.DEVNULL)
    run("window", "open", "--label", f"{count} files")
    run("snap", *paths)
    for p in paths:
        with open(os.path.join(ws, p), "a") as f:
            f.write("after\n")
    run("record", *paths)
    run("window", "close")
    driver.go(url.split("#")[0])
    button = driver.wait("the many-files window", "return [...document.querySelectorAll('button.win')].find(b => b.textContent.includes('files · 250 changes'))?.dataset.window")
    started = time.monotonic()
    driver.click(f'button.win[data-window="{button}"]')
    driver.wait("200 files drawn", "return document.querySelectorAll('#window .file').length === 200")
    took = time.monotonic() - started
    more = driver.js("return document.getElementById('show-more')?.textContent")
    check(f"a {count}-file window draws 200 files at once ({took:.2f} s) and offers the rest",
          more == f"Show {count - 200} more files ({count - 200} not shown)", more)
    driver.click("#show-more")
    driver.wait("all files drawn", f"return document.querySelectorAll('#window .file').length === {count}")
    driver.js("const f = document.getElementById('filter'); f.value = 'f249.'; f.dispatchEvent(new Event('input'))")
    found = driver.wait("the filter", "const p = [...document.querySelectorAll('#window .file')].map(d => d.dataset.path); return p.length === 1 && p")
    check("the filter narrows the files by path", found == ["many/f249.txt"], found)


CC_SESSION = "5f0c2d3e-43aa-4e1b-9c7d-0000000000b3"
# The lines each turn edits (one Edit call each), as the it-test
# review::each_hunk_of_a_three_turn_claude_code_session_with_repeated_edits_is_rejected_and_taken_back
CC_TURNS = [[5, 30], [10, 50], [15, 40, 55]]


def cc_text(edited):
    return "".join(f"line {i}{' edited' if i in edited else ''}\n" for i in range(1, 61))


def claude_code_session(ws, env):
    """Three Claude Code turns, each Editing cc.txt more than once, recorded through
    `rewind hook claude-code` with Claude Code's payloads (fixtures/hooks/claude-code)."""
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "hooks", "claude-code")
    henv = dict(env)
    henv.pop("REWIND_SESSION", None)
    path = os.path.join(ws, "cc.txt")

    def payload(name, **fields):
        with open(os.path.join(fixtures, name + ".json")) as f:
            p = json.loads(f.read().replace("/home/u/proj", ws))
        p["session_id"] = CC_SESSION
        p.update(fields)
        return p

    def hook(p):
        subprocess.run([RW, "hook", "claude-code"], input=json.dumps(p).encode(), cwd=ws, env=henv,
                       check=True, stdout=subprocess.DEVNULL)

    with open(path, "w") as f:
        f.write(cc_text([]))
    done, call = [], 0
    for t, edits in enumerate(CC_TURNS):
        hook(payload("user-prompt-submit", prompt=f"turn {t + 1}: edit cc.txt"))
        for line in edits:
            call += 1
            before = cc_text(done)
            done.append(line)
            edit = {"file_path": path, "old_string": f"line {line}\n", "new_string": f"line {line} edited\n",
                    "replace_all": False}
            hook(payload("pre-tool-use-edit", tool_input=edit, tool_use_id=f"toolu_b3_{call}"))
            with open(path, "w") as f:
                f.write(cc_text(done))
            hook(payload("post-tool-use-edit", tool_input=edit, tool_use_id=f"toolu_b3_{call}",
                         tool_response={"filePath": path, "oldString": edit["old_string"],
                                        "newString": edit["new_string"], "originalFile": before,
                                        "userModified": False, "replaceAll": False}))
        hook(payload("stop"))
    log = subprocess.run([RW, "--json", "log", "--session", CC_SESSION], cwd=ws, env=henv, check=True,
                         capture_output=True, text=True)
    windows = json.loads(log.stdout)["sessions"][0]["windows"]
    return sorted(w["id"] for w in windows if w["kind"] == "agent" and w["changes"])


def cc_hunks(driver):
    return driver.js("return [...document.querySelectorAll('.file[data-path=\"cc.txt\"] tr.hunk')].map(r => r.dataset.state)")


def claude_code_turns(driver, ws, env, url):
    """The issue's done-when, by clicks: a 3-turn Claude Code session (made through `rewind
    hook claude-code`) whose turns each Edit cc.txt several times. A hunk of an earlier
    turn is rejected from its turn's window, over the later turns' edits, and taken back,
    byte for byte each time; the take-back is listed as such, under the hunk reject it took
    back, and offers nothing to reject or take back; each hunk reject is listed under the turn
    it rejected."""
    turns = claude_code_session(ws, env)
    if not check("the Claude Code session has its three turns", len(turns) == 3, turns):
        return
    last = cc_text([line for edits in CC_TURNS for line in edits]).encode()
    driver.go(url.split("#")[0])
    driver.wait("the Claude Code session's turns", f"return document.querySelector('button.win[data-window=\"{turns[2]}\"]')")
    rejects = []
    for (turn, edits), n in [((turns[0], CC_TURNS[0]), 1), ((turns[1], CC_TURNS[1]), 2)]:
        driver.click(f'button.win[data-window="{turn}"]')
        driver.wait(f"cc.txt's hunks in window {turn}",
                    f"const h = [...document.querySelectorAll('.file[data-path=\"cc.txt\"] tr.hunk')];"
                    f" return document.querySelector('#window h1')?.textContent.startsWith('window {turn} ')"
                    f" && h.length === {len(edits)} && h.every(r => r.dataset.state === 'in-effect')")
        driver.click(f'.file[data-path="cc.txt"] button.reject-hunk[data-hunk="{n}"]')
        driver.wait(f"hunk {n} of window {turn} rejected",
                    f"return document.querySelectorAll('.file[data-path=\"cc.txt\"] tr.hunk')[{n - 1}]?.dataset.state === 'rejected'")
        result = driver.js("return document.querySelector('.file[data-path=\"cc.txt\"] .result').textContent")
        made = re.search(r"recorded as window (\d+)", result)
        rejects.append(made.group(1) if made else None)
        line = edits[n - 1]
        without = cc_text([l for e in CC_TURNS for l in e if l != line]).encode()
        with open(os.path.join(ws, "cc.txt"), "rb") as f:
            now = f.read()
        check(f"Reject hunk {n} of turn {turns.index(turn) + 1} (window {turn}) reverted its Edit of line {line} only, "
              "over the later turns' edits, byte for byte", now == without, now)
        states = cc_hunks(driver)
        check(f"window {turn} shows hunk {n} rejected, the others in effect",
              states == ["rejected" if i == n - 1 else "in-effect" for i in range(len(edits))], states)
        driver.click('.file[data-path="cc.txt"] .result button.redo')
        driver.wait(f"hunk {n} of window {turn} back",
                    f"return document.querySelectorAll('.file[data-path=\"cc.txt\"] tr.hunk')[{n - 1}]?.dataset.state === 'in-effect'")
        with open(os.path.join(ws, "cc.txt"), "rb") as f:
            now = f.read()
        check(f"Take back put hunk {n} of window {turn} back, byte for byte", now == last, now)

    # The take-back of the last hunk reject: listed as a take-back, under that reject.
    rows = driver.wait("the take-backs in the list", """
      const rows = [...document.querySelectorAll('#sessions .winrow')].map(r => ({ role: r.dataset.role,
        nested: r.classList.contains('nested'), window: r.querySelector('button.win').dataset.window,
        text: r.querySelector('button.win').firstChild.textContent, takeBack: !!r.querySelector('button.redo') }));
      const ours = rows.filter((r, i) => i > 0 && r.role === 'take-back' && arguments[0].includes(rows[i - 1].window));
      return ours.length === 2 && rows;""", rejects)
    for i, r in enumerate(rows):
        if r["role"] != "take-back" or rows[i - 1]["window"] not in rejects:
            continue
        above = rows[i - 1]
        check(f"take-back window {r['window']} is listed as a take-back, nested under the hunk reject it took back "
              f"(window {above['window']}), with no button of its own",
              r["nested"] and "[take back]" in r["text"] and "[reject]" not in r["text"] and not r["takeBack"]
              and above["role"] == "hunk-reject" and "taken back" in above["text"] and not above["takeBack"],
              (above, r))
    # Each hunk reject sits under the turn it rejected (its window, listed before it).
    for turn, reject in zip(turns[:2], rejects):
        at = next((i for i, r in enumerate(rows) if r["window"] == reject), None)
        owner = next((r["window"] for r in reversed(rows[:at or 0]) if not r["nested"]), None)
        check(f"hunk reject window {reject} is listed nested under the turn it rejected (window {turn})",
              at is not None and rows[at]["nested"] and rows[at]["role"] == "hunk-reject" and owner == str(turn),
              (at is not None and rows[at], owner))
    back = next(r["window"] for i, r in enumerate(rows) if r["role"] == "take-back" and rows[i - 1]["window"] in rejects)
    driver.click(f'button.win[data-window="{back}"]')
    driver.wait("the take-back's window", "return document.getElementById('take-back-note')")
    view = driver.js("""return { heading: document.querySelector('#window h1').textContent,
      buttons: [...document.querySelectorAll('#window button')].map(b => b.className || b.id).filter(c => /reject|redo/.test(c)) }""")
    check("the take-back's window says what it is and offers no Reject or Take back",
          "[take back]" in view["heading"] and view["buttons"] == [], view)


def main():
    tmp = tempfile.mkdtemp(prefix="rewind-browser.")
    procs = []
    driver = None
    try:
        ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "home")
        os.makedirs(ws)
        env = dict(os.environ, REWIND_HOME=home, REWIND_SESSION="browser", NO_COLOR="1",
                   HOME=os.path.join(tmp, "user-home"))
        env.pop("REWIND_WORKSPACE", None)
        scenario(ws, env)
        review = subprocess.Popen([RW, "review"], cwd=ws, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        procs.append(review)
        line = review.stdout.readline().strip()
        url = line.removeprefix("rewind review: ")
        if not url.startswith("http://127.0.0.1:"):
            check("rewind review printed its URL", False, line)
            return 1
        port = free_port()
        cd = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        procs.append(cd)
        driver = Driver(port)
        end = time.monotonic() + 30
        while True:
            try:
                if driver.call("GET", "/status", timeout=5).get("ready"):
                    break
            except (OSError, RuntimeError):
                pass
            if time.monotonic() > end:
                check("chromedriver started", False, "no answer within 30 s")
                return 1
            time.sleep(0.2)
        driver.start(os.path.join(tmp, "profile"))
        run(driver, ws, url)
        many_files(driver, ws, env, url)
        claude_code_turns(driver, ws, env, url)
        review.kill()
        review.wait()
        driver.click('button.win[data-window="1"]')
        driver.wait("the banner", "return document.getElementById('banner').classList.contains('shown')")
        text = driver.js("return document.getElementById('banner').textContent")
        check("when the server is gone the page says so", "not answering" in text, text)
    except Exception as e:  # a step that could not run is a failure, with its reason
        check("the browser run", False, repr(e))
    finally:
        if driver:
            driver.quit()
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"browser: {'FAIL' if FAILED else 'ok'} ({len(FAILED)} failed)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
