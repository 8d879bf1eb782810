package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
)

// errInternal is what the model sees for anything unexpected; the cause is logged once.
var errInternal = errors.New("internal error: ctalk could not complete the call; try again, and tell the ctalk operator if it keeps failing")

var errUnavailable = errors.New("ctalk's database is unavailable right now: try again in a minute")

// argError is an argument that could not be decoded; its text names the
// argument, never its value.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// publicError turns an error from a tool into the text the model sees, logging
// unexpected errors once, and says which outcome the metrics count. Only the
// rules' expected failures (built from validated, secret-free parts) pass
// through; every kind is an error result. A call the client cancelled is
// the client's doing; one that ran out of time, or found the database
// down, is ctalk's.
func publicError(ctx context.Context, log *slog.Logger, tool string, err error) (string, metrics.Outcome) {
	var re *relay.Error
	switch {
	case errors.As(err, &re):
		return re.Error(), metrics.UserError
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		outcome := metrics.UserError
		if errors.Is(err, context.DeadlineExceeded) {
			outcome = metrics.InternalError
		}
		return "the call was cancelled or timed out before it completed; try again", outcome
	case errors.Is(err, db.ErrUnavailable):
		log.WarnContext(ctx, "database unavailable", "tool", tool, "err", err)
		return errUnavailable.Error(), metrics.InternalError
	}
	log.ErrorContext(ctx, "tool failed", "tool", tool, "err", err)
	return errInternal.Error(), metrics.InternalError
}

// argumentError explains undecodable arguments without echoing their values.
func argumentError(err error) string {
	var in *argError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &in):
		return in.msg
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("argument %s has the wrong type: send a %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	}
	return "the arguments are not a valid JSON object: send the tool's arguments as named fields"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64":
		return "number"
	}
	return goKind
}

// callers lists the panicking goroutine's frames (function, file, line).
// Unlike debug.Stack it prints no argument words, which can reveal the
// length of a password.
func callers() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	var b strings.Builder
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}
