#!/usr/bin/env bash
# The review page in a real browser (issue 28): headless Chromium driven over WebDriver by
# check_review.py. Installs Debian's `chromium` and `chromium-driver` with apt-get when they
# are missing and this is a root shell with apt-get; SKIPs (exit 0) with the reason when the
# browser cannot be had. tests/agents/run.sh (so README's test command and CI) calls it.
# Usage: tests/browser/run.sh
# Env:   REWIND_BIN=<path>  the rewind binary (default: the debug one, built if missing)
#        NO_BROWSER=1       skip
# Exit:  0 passed or skipped, 1 failed. The screenshots: target/browser/review.png and
#        target/browser/review-side-by-side.png.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP  browser test of rewind review: $*"; exit 0; }

[ -z "${NO_BROWSER:-}" ] || skip "NO_BROWSER is set"
command -v python3 >/dev/null || skip "python3 not found (the WebDriver client is Python)"

if [ -n "${REWIND_BIN:-}" ]; then
  RW=$REWIND_BIN
else
  RW="$ROOT/target/$(rustc -vV | sed -n 's/^host: //p')/debug/rewind"
  [ -x "$RW" ] || (cd "$ROOT" && cargo build --locked -q) || { echo "FAIL  cargo build"; exit 1; }
fi

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
if [ ! -x "$CHROMIUM" ] || [ ! -x "$CHROMEDRIVER" ]; then
  command -v apt-get >/dev/null || skip "no $CHROMIUM/$CHROMEDRIVER and no apt-get to install them"
  [ "$(id -u)" = 0 ] || skip "no $CHROMIUM/$CHROMEDRIVER, and installing them needs root (apt-get install chromium chromium-driver)"
  echo "== installing chromium and chromium-driver (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # The package lists may be missing on a fresh image: update once when no candidate shows.
  if ! apt-cache policy chromium-driver 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    timeout 300 apt-get update -qq >/dev/null 2>&1
  fi
  timeout 900 apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1 \
    || skip "apt-get install chromium chromium-driver failed (no package registry?)"
  [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ] || skip "installed, but $CHROMIUM or $CHROMEDRIVER is still missing"
fi

mkdir -p "$ROOT/target/browser"
echo "== rewind review in headless $("$CHROMIUM" --version 2>/dev/null | head -1)"
CHROMIUM=$CHROMIUM CHROMEDRIVER=$CHROMEDRIVER \
  timeout 300 python3 "$ROOT/tests/browser/check_review.py" "$RW" "$ROOT/target/browser/review.png"
