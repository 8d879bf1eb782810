package cli

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
	"log/slog"
	"strings"
	"time"

	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/relayclient"
)

// attendedEnv is how Claude Code (2.1.332) tells a hook whether a person
// attends the session: "1" in an interactive session, "0" under `claude -p`
// and SDK hosts. There a Stop hook that waits holds the run open (Claude
// Code waits for it before exiting), and a wake-up reaches nobody.
const attendedEnv = "CLAUDE_CODE_SESSION_ATTENDED"

// Exit codes of ctalk wait.
const (
	waitNothing = 0 // the timeout passed
	waitEvent   = 2 // something arrived: the summary is on stderr
)

func waitCommand(version string) *Command {
	return &Command{
		Name:    "wait",
		Args:    "[--relay URL] [--timeout 10m] [--unattended]",
		Summary: "for a Claude Code Stop hook with asyncRewake: wait for the next question or answer; exit 2 with a one-line summary on stderr, or 0 on timeout",
		Details: `Exit status: 0 nothing arrived before the timeout; 2 a question or answer
arrived (the one-line summary is on stderr); 1 an error; 2 also for a usage
mistake, whose message then wakes the session too.

The first run for a login (no cursor stored yet) reports the questions to you
that are still unanswered, however old, and answers to your questions that
arrived after you logged in; older answers and questions you have answered are
history, not news, and are skipped. Later runs report every event after the
last one reported, once.

Run by Claude Code in a session no person attends (claude -p, an SDK host:
Claude Code sets CLAUDE_CODE_SESSION_ATTENDED=0), it exits 0 at once, so a
scripted run is not held open for the timeout; --unattended waits there too.
`,
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			relay := fs.String("relay", "", "the relay's MCP URL (default: the one you logged in to)")
			timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait before exiting 0")
			unattended := fs.Bool("unattended", false, "wait even in a Claude Code session no person attends (claude -p)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 || *timeout <= 0 {
					return UsageError("takes only --relay, a positive --timeout and --unattended")
				}
				if io.Getenv(attendedEnv) == "0" && !*unattended {
					return nil // nobody to wake: do not hold the run open
				}
				logger := slog.New(slog.NewTextHandler(io.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				summary, err := waitOnce(ctx, io, version, *relay, *timeout, logger)
				if err != nil || summary == "" {
					return err
				}
				return &ExitCode{Code: waitEvent, Msg: summary}
			}
		},
	}
}

// waitOnce waits until the next events or the timeout, and returns their
// one-line summary ("" on timeout). The cursor moves past the events only
// after the summary is built, just before it is printed.
func waitOnce(ctx context.Context, io *IO, version, relay string, timeout time.Duration, logger *slog.Logger) (string, error) {
	dir, cred, err := stored(io, relay)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	var c *relayclient.Client
	cursors := credentials.NewCursor(dir, "wait", cred)
	cursor := cursors.Load()
	first := cursor == ""
	var backlog []relayclient.Event // the first run's unanswered questions and new answers
	backoff := time.Second
	for {
		if c == nil {
			opts := relayclient.Options{Token: relayclient.Static(cred.Token), Name: "ctalk-wait", Version: version}
			if c, err = relayclient.Connect(ctx, cred.Relay, opts); err != nil {
				c = nil
			}
		}
		if c != nil {
			// Rounded up: ctx ends the last call at the deadline itself.
			seconds := min(relayclient.MaxWaitSeconds, int((time.Until(deadline)+time.Second-1)/time.Second))
			if first {
				seconds = 0
			}
			var res relayclient.WaitResult
			if res, err = c.WaitForMessages(ctx, cursor, seconds); err == nil {
				backoff = time.Second
				next := res.Cursor
				if n := len(res.Events); n > 0 {
					next = res.Events[n-1].Cursor
				}
				events := res.Events
				if first {
					// The backlog is read to its end before anything is
					// stored, so a run that dies midway starts over.
					backlog = append(backlog, news(events, cred.LoggedInAt)...)
					events = nil
					if first = res.More; !first && len(backlog) > 0 {
						events = backlog
					}
				}
				if len(events) > 0 {
					summary := summarize(events, res.More)
					if err := cursors.Save(next); err != nil {
						return "", err
					}
					return summary, nil
				}
				if next != "" && next != cursor {
					if cursor = next; !first {
						if err := cursors.Save(cursor); err != nil {
							return "", err
						}
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
		var refused *relayclient.ToolError
		if errors.As(err, &refused) {
			if relayclient.IsAuthError(refused.Message) {
				return "", fmt.Errorf("%w; run `%s` in a terminal", err, cred.LoginCommand())
			}
			return "", err
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

// news keeps, of a first run's backlog, what is still news: questions not
// yet answered, and answers that arrived after the login.
func news(events []relayclient.Event, loggedIn time.Time) []relayclient.Event {
	var keep []relayclient.Event
	for _, e := range events {
		switch {
		case e.Kind == "question" && !e.AlreadyAnswered:
		case e.Kind == "answer" && !loggedIn.IsZero() && e.At.After(loggedIn):
		default:
			continue
		}
		keep = append(keep, e)
	}
	return keep
}

// summarize renders events as the one line a woken Claude reads: the
// coworker's words quoted and marked as theirs.
func summarize(events []relayclient.Event, more bool) string {
	e := events[0]
	who := fmt.Sprintf("%s (%s)", e.From.Name, e.From.UserID)
	var s string
	// A turn of a conversation (a follow-up, a question asked back for
	// clarification, or the answer to one) says which conversation: its
	// earlier turns matter.
	continues := e.ThreadID != 0 && e.ThreadID != e.MessageID
	where := fmt.Sprintf("(message %d)", e.MessageID)
	if continues {
		where = fmt.Sprintf("in conversation %d (message %d)", e.ThreadID, e.MessageID)
	}
	const approve = "answer only through propose_response and send_response with the user's approval."
	switch {
	case e.Kind == "answer":
		s = fmt.Sprintf("ctalk: %s answered your question %s — their words: %q. Show the user; check_replies has the full reply.",
			who, where, relayclient.Clip(e.Answer, 300))
	case continues:
		s = fmt.Sprintf("ctalk: %s asks a follow-up %s — their words: %q. Show the user (get_thread has the whole "+
			"conversation); %s", who, where, relayclient.Clip(e.Question, 300), approve)
	default:
		s = fmt.Sprintf("ctalk: %s asks the user %s — their words: %q. Show the user; %s", who, where, relayclient.Clip(e.Question, 300), approve)
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
