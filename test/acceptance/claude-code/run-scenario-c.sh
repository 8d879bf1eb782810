#!/usr/bin/env bash
# Scenario C: interactive Claude Code under tmux: channel events from the bridge (as is, and with protocol
# 2026-07-28 hidden), and the elicitation dialog accepted with a key press. EXPECT_CHANNELS=1 fails
# the run unless a channel event reaches the model.
# Builds ./cmd/ctalk of the checkout this script lives in, or set CTALK_BIN (a built ctalk) or CTALK_SRC.
# Claude Code: CLAUDE_BIN, else $TOOLS (default $HOME/.cache/ctalk-acceptance)/node_modules/.bin, else PATH.
# KEEP=1 keeps the scratch directory (logs of every side). Last stdout line: the result; exit 0 on success.
exec timeout -s TERM -k 10 ${SCENARIO_TIMEOUT:-300} python3 "$(dirname "$0")/scenarios.py" c "$@"
