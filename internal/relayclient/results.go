package relayclient

// The results the local commands decode are the relay's own exported types,
// the very structs the server renders, so the two cannot drift apart.

import (
	"context"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

// MaxWaitSeconds is the longest wait_for_messages the relay honours.
const MaxWaitSeconds = relay.MaxWaitSeconds

// Person is who asked or answered.
type Person = relay.Person

// Event is one event of a wait_for_messages result.
type Event = relay.WaitEvent

// WaitResult is a wait_for_messages result.
type WaitResult = relay.WaitResult

// LoginResult is a login result.
type LoginResult = relay.LoginResult

// WaitForMessages calls wait_for_messages once: events after cursor
// ("latest" for events from now on, "" for all), waiting up to seconds.
func (c *Client) WaitForMessages(ctx context.Context, cursor string, seconds int) (WaitResult, error) {
	var res WaitResult
	err := c.Call(ctx, "wait_for_messages", map[string]any{"cursor": cursor, "timeout_seconds": max(seconds, 0)}, &res)
	return res, err
}

// Login calls login; the token is in the result, never in an error.
func (c *Client) Login(ctx context.Context, org, user, password string) (LoginResult, error) {
	var res LoginResult
	err := c.Call(ctx, "login", map[string]any{"org_id": org, "user_id": user, "password": password}, &res)
	return res, err
}

// IsAuthError reports whether a tool's error message says the caller is
// not logged in or the token no longer works (invalid, expired, revoked):
// the cases a new login fixes.
func IsAuthError(msg string) bool {
	return strings.HasPrefix(msg, "not logged in") || strings.Contains(msg, "auth_token is invalid, expired or revoked")
}

// Clip shortens a coworker's text to at most n runes on one line, for a
// summary that quotes it.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
