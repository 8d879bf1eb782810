package mcp

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ctalk/ctalk/db"
)

// Expected failures a person can act on. Their texts go back to the model;
// none may contain a secret or reveal another organization's data.
var (
	errNotLoggedIn = &inputError{msg: "not logged in: call login with your org_id, user_id and password, " +
		"then pass the returned auth_token (or configure an Authorization: Bearer header for this MCP server)"}
	errBadToken      = &inputError{msg: "auth_token is invalid, expired or revoked: call login again to get a new one"}
	errTokenMismatch = &inputError{msg: "the auth_token argument and the Authorization header name different tokens: " +
		"drop the auth_token argument to use the header, or fix the header"}
	errBadLogin = &inputError{msg: "login failed: the organization, user or password is wrong"}
	errBadAdmin = &inputError{msg: "the organization does not exist or the admin password is wrong"}
)

// errInternal is what the model sees for anything unexpected; the cause is logged once.
var errInternal = errors.New("internal error: ctalk could not complete the call; try again, and tell the ctalk operator if it keeps failing")

var errUnavailable = errors.New("ctalk's database is unavailable right now: try again in a minute")

// publicError turns an error from a tool into the text the model sees, logging
// unexpected errors once. Only inputError texts (built from validated,
// secret-free parts) pass through.
func publicError(ctx context.Context, log *slog.Logger, tool string, err error) string {
	var in *inputError
	switch {
	case errors.As(err, &in):
		return in.msg
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the call was cancelled or timed out before it completed; try again"
	case errors.Is(err, db.ErrUnavailable):
		log.WarnContext(ctx, "database unavailable", "tool", tool, "err", err)
		return errUnavailable.Error()
	}
	log.ErrorContext(ctx, "tool failed", "tool", tool, "err", err)
	return errInternal.Error()
}
