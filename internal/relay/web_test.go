package relay

import (
	"errors"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestWebSession: a web session works only with the web resource, slides
// its idle expiry forward on use up to the absolute one, and ends at
// sign-out, at a password reset and at deactivation.
func TestWebSession(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := t.Context()
		admin := Admin{OrgID: "acme", Password: testAdminPassword}

		if _, err := f.s.SignInWeb(ctx, "acme", "umar", "wrong-password"); !errors.Is(err, errBadLogin) {
			t.Fatalf("SignInWeb with a wrong password = %v, want %v", err, errBadLogin)
		}
		sess, err := f.s.SignInWeb(ctx, "ACME", "umar", testUserPassword)
		if err != nil || !sess.ExpiresAt.Equal(f.s.clock().Add(WebSessionIdle)) {
			t.Fatalf("SignInWeb = %+v, %v; want a session expiring in 12 h", sess, err)
		}
		web := Credentials{Bearer: sess.Token, Resource: WebResource}
		if me, err := f.s.WebSessionUser(ctx, web); err != nil || me.UserID != "umar" || me.OrgName != "Org acme" {
			t.Fatalf("WebSessionUser = %+v, %v", me, err)
		}
		// The audience rule: the session is no MCP token, and an MCP token no session.
		if _, err := f.s.Whoami(ctx, Credentials{Bearer: sess.Token}); !errors.Is(err, errBadToken) {
			t.Errorf("Whoami on /mcp with a web session = %v, want %v", err, errBadToken)
		}
		if _, err := f.s.CheckAccess(ctx, sess.Token, WebResource); !errors.Is(err, ErrInsufficientScope) {
			t.Errorf("CheckAccess with a web session = %v, want %v (no ctalk scope)", err, ErrInsufficientScope)
		}
		mcp := f.login("acme", "umar")
		if _, err := f.s.WebSessionUser(ctx, Credentials{Bearer: mcp, Resource: WebResource}); !errors.Is(err, errBadToken) {
			t.Errorf("WebSessionUser with an MCP token = %v, want %v", err, errBadToken)
		}

		// Idle expiry slides, at most every few minutes, never past 7 days.
		f.advance(2 * time.Minute)
		me, _ := f.s.WebSessionUser(ctx, web)
		if !me.SessionExpiresAt.Equal(sess.ExpiresAt) {
			t.Errorf("after 2 min the expiry moved to %v; want it kept (%v)", me.SessionExpiresAt, sess.ExpiresAt)
		}
		for range 16 { // 16 × 11 h 50 min > 7 days
			f.advance(12*time.Hour - 10*time.Minute)
			var next WebMe
			if next, err = f.s.WebSessionUser(ctx, web); err != nil {
				break
			}
			me = next
		}
		created := sess.ExpiresAt.Add(-WebSessionIdle)
		if err == nil || !me.SessionExpiresAt.Equal(created.Add(WebSessionMaxAge)) {
			t.Errorf("a session used every 12 h: last expiry %v, err %v; want it to end at %v", me.SessionExpiresAt, err, created.Add(WebSessionMaxAge))
		}
		sess, _ = f.s.SignInWeb(ctx, "acme", "umar", testUserPassword)
		f.advance(WebSessionIdle)
		if _, err := f.s.WebSessionUser(ctx, Credentials{Bearer: sess.Token, Resource: WebResource}); !errors.Is(err, errBadToken) {
			t.Errorf("a session idle for 12 h = %v, want %v", err, errBadToken)
		}

		// Sign-out, reset and deactivation end sessions.
		for _, end := range []struct {
			name string
			fn   func(Credentials) error
		}{
			{"sign-out", func(c Credentials) error { return f.s.SignOutWeb(ctx, c) }},
			{"reset", func(Credentials) error {
				_, err := f.s.ResetUserPassword(ctx, admin, "umar", testUserPassword)
				return err
			}},
			{"deactivation", func(Credentials) error {
				_, err := f.s.DeactivateUser(ctx, admin, "umar")
				return err
			}},
		} {
			sess, err := f.s.SignInWeb(ctx, "acme", "umar", testUserPassword)
			if err != nil {
				t.Fatalf("%s: SignInWeb = %v", end.name, err)
			}
			c := Credentials{Bearer: sess.Token, Resource: WebResource}
			if err := end.fn(c); err != nil {
				t.Fatalf("%s = %v", end.name, err)
			}
			if _, err := f.s.WebSessionUser(ctx, c); !errors.Is(err, errBadToken) {
				t.Errorf("after %s the session = %v, want %v", end.name, err, errBadToken)
			}
			if err := f.s.SignOutWeb(ctx, c); err != nil {
				t.Errorf("signing out a dead session = %v, want nil", err)
			}
		}
	})
}

// TestWebQuestions: GetQuestion answers a missing, another person's and
// another organization's question alike; ListMyQuestions lists mine,
// newest first, answered or not, without marking replies seen.
func TestWebQuestions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := umarAndJohn(t, s)
		ctx := t.Context()
		f.user("acme", "cal")
		f.org("other")
		f.user("other", "eve")
		f.user("other", "fay")
		eve := Credentials{Token: f.login("other", "eve")}
		cal := Credentials{Token: f.login("acme", "cal")}
		q1, _ := f.s.Ask(ctx, umar, "john", "first?")
		q2, _ := f.s.Ask(ctx, umar, "cal", "second?")
		var theirs AskResult
		for range 3 { // message 3 of "other": acme has no message 3
			theirs, _ = f.s.Ask(ctx, eve, "fay", "theirs?")
		}
		if _, err := f.s.Propose(ctx, john, q1.MessageID, "yes"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Send(ctx, john, q1.MessageID, "yes", Approval{}); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.GetQuestion(ctx, john, q1.MessageID)
		if err != nil || got.Question != "first?" || got.From.UserID != "umar" || got.Answer == nil || *got.Answer != "yes" {
			t.Errorf("GetQuestion(john, q1) = %+v, %v", got, err)
		}
		_, missing := f.s.GetQuestion(ctx, john, 999)
		for _, tt := range []struct {
			name string
			cred Credentials
			id   int64
		}{{"asked of cal", john, q2.MessageID}, {"another organization's id", john, theirs.MessageID}, {"my own question", umar, q1.MessageID}} {
			_, err := f.s.GetQuestion(ctx, tt.cred, tt.id)
			var re *Error
			if !errors.As(err, &re) || re.Kind != KindNotFound {
				t.Errorf("%s: GetQuestion = %v, want not found", tt.name, err)
			}
			if tt.id == theirs.MessageID && err.Error() != "there is no question 3 in your inbox: check_inbox lists the questions you can answer" {
				t.Errorf("%s: %q; want the missing message's words", tt.name, err)
			}
		}
		if missing == nil {
			t.Error("GetQuestion(999) succeeded")
		}

		mine, err := f.s.ListMyQuestions(ctx, umar, 0)
		if err != nil || len(mine.Questions) != 2 || mine.More ||
			mine.Questions[0].MessageID != q2.MessageID || mine.Questions[0].Answer != nil ||
			mine.Questions[1].Answer == nil || *mine.Questions[1].Answer != "yes" || mine.Questions[1].To.Name != "john" {
			t.Errorf("ListMyQuestions(umar) = %+v, %v; want q2 waiting, then q1 answered yes", mine, err)
		}
		if other, _ := f.s.ListMyQuestions(ctx, cal, 0); len(other.Questions) != 0 {
			t.Errorf("cal's questions = %+v, want none", other)
		}
		r, err := f.s.CheckReplies(ctx, umar, "", "")
		if err != nil || len(r.Replies) != 1 || r.Replies[0].Answer != "yes" {
			t.Errorf("check_replies after the web listing = %+v, %v; want the answer still there", r, err)
		}
	})
}
