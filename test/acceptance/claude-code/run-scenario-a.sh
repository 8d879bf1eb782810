#!/usr/bin/env bash
# Scenario A: HTTP transport with a header token, claude -p: ask, inbox, propose, send (elicitation: -p cancels;
# an SDK host and an Elicitation hook answer it), replies.
# Builds ./cmd/ctalk of the checkout this script lives in, or set CTALK_BIN (a built ctalk) or CTALK_SRC.
# Claude Code: CLAUDE_BIN, else $TOOLS (default $HOME/.cache/ctalk-acceptance)/node_modules/.bin, else PATH.
# KEEP=1 keeps the scratch directory (logs of every side). Last stdout line: the result; exit 0 on success.
exec timeout -s TERM -k 10 ${SCENARIO_TIMEOUT:-300} python3 "$(dirname "$0")/scenarios.py" a "$@"
