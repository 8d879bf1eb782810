package server_test

// End-to-end proof of the account rules: logout, password changes and
// resets, deactivation, and password-guessing throttles, through the real
// HTTP server on both backends and both protocol generations.

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mcp"
)

const (
	newPassword = "a-brand-new-password"
	// The throttle's free failures, as set in internal/relay/throttle.go.
	accountFreeFailures = 5
	addrFreeFailures    = 20
)

// throttledMsg is the refusal while an account or address is locked: the
// first lock lasts 2 s, so a prompt retry is told 1 or 2 s.
var throttledMsg = regexp.MustCompile(`^too many failed password attempts: retry in [12] s$`)

type loginOut struct {
	AuthToken string    `json:"auth_token"`
	ExpiresAt time.Time `json:"expires_at"`
}

type passwordOut struct {
	UserID        string `json:"user_id"`
	Status        string `json:"status"`
	TokensRevoked int64  `json:"other_tokens_revoked"`
}

// loginWith logs in with pw and returns the token.
func loginWith(t *testing.T, cs *sdk.ClientSession, orgID, userID, pw string) string {
	t.Helper()
	got := callOK[loginOut](t, cs, "login", args{"org_id": orgID, "user_id": userID, "password": pw})
	if got.AuthToken == "" {
		t.Fatalf("login(%s/%s) returned no auth_token", orgID, userID)
	}
	return got.AuthToken
}

// loginFails logs in with pw, which must fail, and returns the message.
func loginFails(t *testing.T, cs *sdk.ClientSession, orgID, userID, pw string) string {
	t.Helper()
	return callErr(t, cs, "login", args{"org_id": orgID, "user_id": userID, "password": pw})
}

// checkTokens fails unless each token works (live) or is refused as revoked.
func checkTokens(t *testing.T, cs *sdk.ClientSession, live bool, tokens ...string) {
	t.Helper()
	for i, tok := range tokens {
		res := call(t, cs, "whoami", args{"auth_token": tok})
		if msg := resultText(res); live && res.IsError {
			t.Errorf("whoami(token %d) = %q, want it to work", i, msg)
		} else if !live && (!res.IsError || !strings.Contains(msg, "revoked")) {
			t.Errorf("whoami(token %d) = isError %v %q, want it refused as revoked", i, res.IsError, msg)
		}
	}
}

// checkPasswordSwitched fails unless acme's userID logs in with newPassword
// and userPassword (old, as the test names it) is refused with badLogin.
func checkPasswordSwitched(t *testing.T, cs *sdk.ClientSession, userID, badLogin, old string) {
	t.Helper()
	loginWith(t, cs, "acme", userID, newPassword)
	if got := loginFails(t, cs, "acme", userID, userPassword); got != badLogin {
		t.Errorf("login with %s = %q, want %q", old, got, badLogin)
	}
}

// forwardedFor is the header a proxy in front of ctalk adds for a client at
// addr; the test server trusts its loopback peer as that proxy.
func forwardedFor(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// TestAccountLogout: logout revokes the token at once, on a second server
// sharing the database too; whoami shows when a token expires.
func TestAccountLogout(t *testing.T) {
	t.Parallel()
	forEachProtocol(t, func(t *testing.T, protocol string) {
		dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
			a, b := newEnv(t, dbtest.Open(t, cfg)), newEnv(t, dbtest.Open(t, cfg))
			anonA, anonB := dial(t, a.url, protocol, nil, nil), dial(t, b.url, protocol, nil, nil)
			umar, _ := team(t, anonA, "acme")
			before := time.Now()
			tok := callOK[loginOut](t, anonA, "login", args{"org_id": "acme", "user_id": "umar", "password": userPassword})
			onB := dial(t, b.url, protocol, bearer(tok.AuthToken), nil)
			who := callOK[userOut](t, onB, "whoami", args{})
			if who.UserID != "umar" || who.TokenExpiresAt == nil || !who.TokenExpiresAt.Equal(tok.ExpiresAt) {
				t.Errorf("whoami on server B = %s, token_expires_at %v; want umar, %v (login's expires_at)", who.UserID, who.TokenExpiresAt, tok.ExpiresAt)
			}
			if exp := tok.ExpiresAt; exp.Before(before.Add(mcp.DefaultTokenTTL-time.Minute)) || exp.After(time.Now().Add(mcp.DefaultTokenTTL+time.Minute)) {
				t.Errorf("login expires_at = %v, want about %v from now", exp, mcp.DefaultTokenTTL)
			}

			out := callOK[struct{ Status string }](t, dial(t, a.url, protocol, bearer(tok.AuthToken), nil), "logout", args{})
			if !strings.Contains(out.Status, "logged out") {
				t.Errorf("logout status = %q, want it to say logged out", out.Status)
			}
			checkTokens(t, anonB, false, tok.AuthToken)
			checkTokens(t, anonA, false, tok.AuthToken)
			if msg := callErr(t, onB, "check_inbox", args{}); !strings.Contains(msg, "revoked") {
				t.Errorf("check_inbox on server B with the logged-out header token = %q, want it refused as revoked", msg)
			}
			if msg := callErr(t, anonB, "logout", args{"auth_token": tok.AuthToken}); !strings.Contains(msg, "login again") {
				t.Errorf("logout again on server B = %q, want it refused: log in again", msg)
			}
			checkTokens(t, anonB, true, umar) // umar's other token is untouched
		})
	})
}

// TestAccountChangePassword: the old password is required; success revokes
// the user's other tokens but not the one in use.
func TestAccountChangePassword(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		anon, first, john := w.anon, w.umar, w.john
		current, other := login(t, anon, "acme", "umar"), login(t, anon, "acme", "umar")
		cs := w.dial(t, bearer(current))
		badLogin := loginFails(t, anon, "acme", "umar", "not-the-password")

		msg := callErr(t, cs, "change_password", args{"old_password": "not-my-password", "new_password": newPassword})
		if !strings.Contains(msg, "old_password is wrong") {
			t.Errorf("change_password(wrong old password) = %q, want it to say old_password is wrong", msg)
		}
		checkTokens(t, anon, true, first, current, other)
		if got := loginFails(t, anon, "acme", "umar", newPassword); got != badLogin {
			t.Errorf("login with the refused new password = %q, want %q", got, badLogin)
		}
		third := login(t, anon, "acme", "umar")

		res := callOK[passwordOut](t, cs, "change_password", args{"old_password": userPassword, "new_password": newPassword})
		if res.UserID != "umar" || res.TokensRevoked != 3 {
			t.Errorf("change_password = %+v, want umar with 3 other tokens revoked", res)
		}
		checkTokens(t, anon, true, current, john)
		checkTokens(t, anon, false, first, other, third)
		checkPasswordSwitched(t, anon, "umar", badLogin, "the old password")
	})
}

// TestAccountResetPassword: with the admin password, an admin resets a
// user's password, revoking every token of theirs.
func TestAccountResetPassword(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		anon, umar, john := w.anon, w.umar, w.john
		john2 := login(t, anon, "acme", "john")
		reset := args{"org_id": "acme", "admin_password": "wrong-admin-password", "user_id": "john", "new_password": newPassword}

		if msg := callErr(t, anon, "reset_user_password", reset); !strings.Contains(msg, "admin password is wrong") {
			t.Errorf("reset_user_password(wrong admin password) = %q, want it to say the admin password is wrong", msg)
		}
		checkTokens(t, anon, true, john, john2)
		badLogin := loginFails(t, anon, "acme", "john", newPassword)
		login(t, anon, "acme", "john") // the old password still works: a third token

		reset["admin_password"] = adminPassword
		res := callOK[passwordOut](t, anon, "reset_user_password", reset)
		if res.UserID != "john" || res.TokensRevoked != 3 {
			t.Errorf("reset_user_password = %+v, want john with all 3 tokens revoked", res)
		}
		checkTokens(t, anon, false, john, john2)
		checkTokens(t, anon, true, umar)
		checkPasswordSwitched(t, anon, "john", badLogin, "the password before the reset")
	})
}

// TestAccountDeactivate: a deactivated user's tokens and password stop
// working, their messages stay; reactivation allows logging in again.
func TestAccountDeactivate(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		anon, umar, john := w.anon, w.umar, w.john
		johnCS := w.dial(t, bearer(john))
		asked := ask(t, anon, umar, "john", seedQuestion)
		answer(t, anon, john, asked, seedAnswer)
		fromJohn := ask(t, anon, john, "umar", "Can you review my retry change?")
		badLogin := loginFails(t, anon, "acme", "john", "not-the-password")
		admin := func(tool, pw string) *sdk.CallToolResult {
			return call(t, anon, tool, args{"org_id": "acme", "admin_password": pw, "user_id": "john"})
		}

		if res := admin("deactivate_user", "wrong-admin-password"); !res.IsError || !strings.Contains(resultText(res), "admin password is wrong") {
			t.Errorf("deactivate_user(wrong admin password) = %q, want it refused", resultText(res))
		}
		checkTokens(t, anon, true, john)
		if res := admin("deactivate_user", adminPassword); res.IsError || !strings.Contains(resultText(res), `"deactivated": true`) {
			t.Fatalf("deactivate_user = %q, want john marked deactivated", resultText(res))
		}
		checkTokens(t, anon, false, john)
		if msg := callErr(t, johnCS, "check_inbox", args{}); !strings.Contains(msg, "revoked") {
			t.Errorf("check_inbox with a deactivated user's header token = %q, want it refused", msg)
		}
		if got := loginFails(t, anon, "acme", "john", userPassword); got != badLogin {
			t.Errorf("login of a deactivated user = %q, want the wrong-password message %q", got, badLogin)
		}
		if msg := callErr(t, anon, "ask_person", args{"auth_token": umar, "to_user_id": "john", "question": "Still there?"}); !strings.Contains(msg, "deactivated") {
			t.Errorf("ask_person to a deactivated user = %q, want it to say they are deactivated", msg)
		}

		// The other party still sees what was said.
		replies := callOK[repliesOut](t, anon, "check_replies", args{"auth_token": umar})
		want := []replyOut{{MessageID: asked, AnsweredBy: personOut{UserID: "john", Name: "John"}, Question: seedQuestion, Answer: seedAnswer}}
		if diff := cmp.Diff(want, replies.Replies); diff != "" {
			t.Errorf("check_replies(umar) after deactivating john mismatch (-want +got):\n%s", diff)
		}
		inbox := callOK[inboxOut](t, anon, "check_inbox", args{"auth_token": umar})
		if len(inbox.Questions) != 1 || inbox.Questions[0].MessageID != fromJohn || inbox.Questions[0].From.UserID != "john" {
			t.Errorf("check_inbox(umar) after deactivating john = %+v, want john's question %d", inbox.Questions, fromJohn)
		}

		if res := admin("reactivate_user", adminPassword); res.IsError || strings.Contains(resultText(res), `"deactivated"`) {
			t.Fatalf("reactivate_user = %q, want john active", resultText(res))
		}
		checkTokens(t, anon, false, john)
		checkTokens(t, anon, true, login(t, anon, "acme", "john"))
	})
}

// TestThrottleAccount: after the free failures an account is locked, even
// for the right password; other accounts are not.
func TestThrottleAccount(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		anon := w.anon
		registerOrg(t, anon, "other", "Other")
		registerUser(t, anon, "other", "umar", "Umar", "x")
		cs := w.dial(t, forwardedFor("198.51.100.7"))

		badLogin := loginFails(t, cs, "acme", "umar", "wrong-password-0")
		for i := 1; i < accountFreeFailures; i++ {
			if got := loginFails(t, cs, "acme", "umar", "wrong-password-"+strconv.Itoa(i)); got != badLogin {
				t.Errorf("failed login %d = %q, want %q", i+1, got, badLogin)
			}
		}
		for name, c := range map[string]*sdk.ClientSession{"same address": cs, "another address": anon} {
			if got := loginFails(t, c, "acme", "umar", userPassword); !throttledMsg.MatchString(got) {
				t.Errorf("login(acme/umar, right password, %s) after %d failures = %q, want %v", name, accountFreeFailures, got, throttledMsg)
			}
		}
		loginWith(t, cs, "acme", "john", userPassword)
		loginWith(t, cs, "other", "umar", userPassword)

		reg := func(org, pw string) *sdk.CallToolResult {
			return call(t, cs, "register_user", args{"org_id": org, "admin_password": pw, "user_id": "eve",
				"name": "Eve", "password": userPassword, "ownership": "x"})
		}
		for i := range accountFreeFailures {
			if res := reg("acme", "wrong-admin-"+strconv.Itoa(i)); !strings.Contains(resultText(res), "admin password is wrong") {
				t.Errorf("register_user with wrong admin password %d = %q, want it refused", i+1, resultText(res))
			}
		}
		if res := reg("acme", adminPassword); !res.IsError || !throttledMsg.MatchString(resultText(res)) {
			t.Errorf("register_user(acme, right admin password) after %d failures = %q, want %v", accountFreeFailures, resultText(res), throttledMsg)
		}
		if res := reg("other", adminPassword); res.IsError {
			t.Errorf("register_user(other org) = %q, want success: another organization's admin is not throttled", resultText(res))
		}
		users := callOK[usersOut](t, anon, "list_users", args{"auth_token": login(t, anon, "acme", "john")})
		if len(users.Users) != 2 {
			t.Errorf("list_users(acme) = %+v, want no eve: a throttled register_user stores nothing", users.Users)
		}
	})
}

// TestThrottleAddress: failures spread over many accounts from one address
// lock that address, not another.
func TestThrottleAddress(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		guesser := w.dial(t, forwardedFor("203.0.113.9"))
		neighbour := w.dial(t, forwardedFor("203.0.113.10"))

		badLogin := loginFails(t, guesser, "acme", "umar", "wrong-password")
		for i := 1; i < addrFreeFailures; i++ {
			if got := loginFails(t, guesser, "acme", "guess-"+strconv.Itoa(i), "wrong-password"); got != badLogin {
				t.Errorf("failed login %d from one address = %q, want %q", i+1, got, badLogin)
			}
		}
		if got := loginFails(t, guesser, "acme", "john", userPassword); !throttledMsg.MatchString(got) {
			t.Errorf("login(john, right password) from the guessing address = %q, want %v", got, throttledMsg)
		}
		loginWith(t, neighbour, "acme", "john", userPassword)
		loginWith(t, neighbour, "acme", "umar", userPassword)
	})
}

// TestThrottleConcurrentGuesses: wrong passwords sent at once are throttled
// like wrong passwords sent one after another.
func TestThrottleConcurrentGuesses(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		const guesses = 4 * accountFreeFailures
		clients := make([]*sdk.ClientSession, guesses)
		for i := range clients {
			clients[i] = w.dial(t, forwardedFor("198.51.100."+strconv.Itoa(i+1)))
		}
		msgs := make([]string, guesses)
		waitAll(guesses, func(i int) {
			msgs[i] = resultText(tryCall(t.Context(), clients[i], "login",
				args{"org_id": "acme", "user_id": "john", "password": "guess-" + strconv.Itoa(i)}))
		})
		checked := 0
		for _, msg := range msgs {
			if !strings.HasPrefix(msg, "too many failed password attempts") {
				checked++
			}
		}
		if checked > accountFreeFailures {
			t.Errorf("%d wrong passwords for one account sent at once: %d were checked, want at most %d (the rest refused as throttled)",
				guesses, checked, accountFreeFailures)
		}
	})
}
