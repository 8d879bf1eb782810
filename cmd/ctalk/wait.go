package main

// ctalk wait: for a Claude Code Stop hook with asyncRewake. It waits for the
// next question to the user or answer to their question and exits 2 with a
// one-line summary on stderr (which wakes the idle session), or 0 when its
// timeout passes first. Its cursor lives in the config directory, so an
// event is reported once, and one that arrived while no hook ran is reported
// at the next run.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Exit codes of ctalk wait.
const (
	waitNothing = 0 // the timeout passed
	waitFailed  = 1
	waitEvent   = 2 // something arrived: the summary is on stderr
)

// waitCommand runs `ctalk wait [--relay URL] [--timeout 10m]` and returns
// its exit code.
func waitCommand(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("ctalk wait", flag.ContinueOnError)
	fs.SetOutput(stderr)
	relay := fs.String("relay", "", "the relay's MCP URL (default: the one you logged in to)")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait before exiting 0")
	if err := fs.Parse(args); err != nil {
		return waitFailed
	}
	if fs.NArg() > 0 || *timeout <= 0 {
		fmt.Fprintln(stderr, "usage: ctalk wait [--relay URL] [--timeout 10m]")
		return waitFailed
	}
	summary, err := waitOnce(ctx, *relay, *timeout, getenv, logger)
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "ctalk wait:", err)
		return waitFailed
	case summary == "":
		return waitNothing
	}
	fmt.Fprintln(stderr, summary)
	return waitEvent
}

// waitOnce waits until the next events or the timeout, and returns their
// one-line summary ("" on timeout). The cursor moves past the events only
// after the summary is built, just before it is printed.
func waitOnce(ctx context.Context, relay string, timeout time.Duration, getenv func(string) string, logger *slog.Logger) (string, error) {
	dir, err := configDir(getenv)
	if err != nil {
		return "", err
	}
	endpoint := ""
	if relay != "" {
		if endpoint, err = relayURL(relay); err != nil {
			return "", err
		}
	}
	cred, err := loadCredentials(dir, endpoint)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	var c relayClient
	cursors := newCursorFile(dir, "wait", cred)
	cursor, first := resumeCursor(cursors)
	backoff := time.Second
	for {
		if c == nil {
			if c, err = connectRelay(ctx, cred.Relay, func() string { return cred.Token }); err != nil {
				c = nil
			} else {
				defer c.Close()
			}
		}
		if c != nil {
			// Rounded up: ctx ends the last call at the deadline itself.
			seconds := min(relayWaitSeconds, int((time.Until(deadline)+time.Second-1)/time.Second))
			if first {
				seconds = 0
			}
			var res relayEvents
			res, err = waitForEvents(ctx, c, cursor, max(seconds, 0))
			if err == nil {
				first, backoff = false, time.Second
				if len(res.Events) > 0 {
					summary := summarize(res.Events, res.More)
					if err := cursors.save(res.Events[len(res.Events)-1].Cursor); err != nil {
						return "", err
					}
					return summary, nil
				}
				if res.Cursor != "" && res.Cursor != cursor {
					cursor = res.Cursor // "latest", resolved
					if err := cursors.save(cursor); err != nil {
						return "", err
					}
				}
				if time.Until(deadline) <= 0 {
					return "", nil
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return "", nil // the timeout passed while the relay was unreachable
		}
		var refused *toolError
		if errors.As(err, &refused) {
			return "", fmt.Errorf("%w; if your login expired, run ctalk login --relay %s --org %s --user %s",
				err, cred.Relay, cred.Org, cred.User)
		}
		logger.Debug("relay unreachable; retrying", "err", err)
		select {
		case <-ctx.Done():
			return "", nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// summarize renders events as the one line a woken Claude reads: the
// coworker's words quoted and marked as theirs.
func summarize(events []relayEvent, more bool) string {
	e := events[0]
	who := fmt.Sprintf("%s (%s)", e.From.Name, e.From.UserID)
	var s string
	switch e.Kind {
	case "answer":
		s = fmt.Sprintf("ctalk: %s answered your question (message %d) — their words: %q. Show the user; check_replies has the full reply.",
			who, e.MessageID, clip(e.Answer, 300))
	default:
		s = fmt.Sprintf("ctalk: %s asks the user (message %d) — their words: %q. Show the user; answer only through "+
			"propose_response and send_response with the user's approval.", who, e.MessageID, clip(e.Question, 300))
	}
	if n := len(events) - 1; n > 0 || more {
		plus := fmt.Sprintf("%d more", n)
		if more {
			plus = "more"
		}
		s += fmt.Sprintf(" (And %s: check_inbox and check_replies list them.)", plus)
	}
	return strings.ReplaceAll(s, "\n", " ")
}
