package relay

import "fmt"

// Kind classifies an expected failure, so each face can map it (an MCP
// error result, an HTTP status, a form message).
type Kind int

// The kinds of expected failure.
const (
	// KindBadInput: an argument is missing, malformed or out of range.
	KindBadInput Kind = iota + 1
	// KindUnauthorized: no valid token, or a wrong password.
	KindUnauthorized
	// KindNotFound: the named user or message is not there for the caller.
	KindNotFound
	// KindConflict: the state forbids the call (already exists, already answered).
	KindConflict
	// KindThrottled: too many failed password attempts; retry later.
	KindThrottled
	// KindForbidden: the caller is signed in but lacks the role the call needs.
	KindForbidden
)

// Error is an expected failure a person can act on. Its message is safe to
// show as is: it is built from validated, secret-free parts and never
// reveals another organization's data. Any other error a method returns is
// internal: faces log it and show a generic message.
type Error struct {
	Kind Kind
	msg  string
}

// Error returns the message, which is safe to show the caller as is.
func (e *Error) Error() string { return e.msg }

func errorf(kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, msg: fmt.Sprintf(format, args...)}
}

func badInput(format string, args ...any) error { return errorf(KindBadInput, format, args...) }

// Expected failures shared by several methods.
var (
	errNotLoggedIn = &Error{Kind: KindUnauthorized, msg: "not logged in: call login with your org_id, user_id and password, " +
		"then pass the returned auth_token (or configure an Authorization: Bearer header for this MCP server)"}
	errBadToken      = &Error{Kind: KindUnauthorized, msg: "auth_token is invalid, expired or revoked: call login again to get a new one"}
	errTokenMismatch = &Error{Kind: KindUnauthorized, msg: "the auth_token argument and the Authorization header name different tokens: " +
		"drop the auth_token argument to use the header, or fix the header"}
	errBadLogin = &Error{Kind: KindUnauthorized, msg: "login failed: the organization, user or password is wrong"}
	errBadAdmin = &Error{Kind: KindUnauthorized, msg: "the organization does not exist or the admin password is wrong"}
)

// ErrBadAdminPassword is the refusal of a wrong admin password (errors.Is
// tells it apart from a session that stopped working, which is
// KindUnauthorized too).
var ErrBadAdminPassword error = errBadAdmin
