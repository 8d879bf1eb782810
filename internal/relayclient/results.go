package relayclient

// Result types of the tools the local commands decode. Their JSON matches
// what the relay renders (mcp/wait.go, mcp/accounts.go).
//
// TODO(merge): once the server's result types are exported from
// internal/relay, use those instead of these copies.

import (
	"context"
	"strings"
	"time"
)

// MaxWaitSeconds is the longest wait_for_messages the relay honours.
const MaxWaitSeconds = 55

// Person is who asked or answered.
type Person struct {
	UserID    string `json:"user_id"`
	Name      string `json:"name"`
	Ownership string `json:"ownership,omitempty"`
	Notes     string `json:"notes,omitempty"`
}

// Event is one event of a wait_for_messages result.
type Event struct {
	// Kind is "question" (asked of you) or "answer" (to a question you asked).
	Kind      string `json:"kind"`
	Cursor    string `json:"cursor"`
	MessageID int64  `json:"message_id"`
	// From is who asked the question, or who answered it.
	From     Person    `json:"from"`
	Question string    `json:"question"`
	Answer   string    `json:"answer,omitempty"`
	At       time.Time `json:"at"`
	// AlreadyAnswered marks a question you have answered since it was asked.
	AlreadyAnswered bool `json:"already_answered,omitempty"`
}

// WaitResult is a wait_for_messages result.
type WaitResult struct {
	Events   []Event `json:"events"`
	Cursor   string  `json:"cursor"`
	More     bool    `json:"more"`
	TimedOut bool    `json:"timed_out"`
	Notice   string  `json:"notice"`
	NextStep string  `json:"next_step"`
}

// LoginResult is a login result.
type LoginResult struct {
	AuthToken string    `json:"auth_token"`
	ExpiresAt time.Time `json:"expires_at"`
	OrgID     string    `json:"org_id"`
	UserID    string    `json:"user_id"`
	Name      string    `json:"name"`
	Note      string    `json:"note"`
}

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
