package relay

import (
	"errors"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestAskRefusals: each check of Ask (one statement on PostgreSQL, a
// sequence on SQLite) refuses with its own message, in the same order on
// both backends, and writes nothing; a good ask numbers the question and
// wakes its recipient.
func TestAskRefusals(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john", "gone")
		ctx := t.Context()
		f.org("other")
		f.user("other", "eve")
		umar, gone := Credentials{Token: f.login("acme", "umar")}, Credentials{Token: f.login("acme", "gone")}
		if _, err := f.s.DeactivateUser(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, "gone"); err != nil {
			t.Fatal(err)
		}
		john := Credentials{Token: f.login("acme", "john")}

		for _, tt := range []struct {
			name string
			cred Credentials
			to   string
			kind Kind
			want string
		}{
			{"no token", Credentials{}, "john", KindUnauthorized, errNotLoggedIn.Error()},
			{"unknown token", Credentials{Token: tokenPrefix + "x"}, "john", KindUnauthorized, errBadToken.Error()},
			{"deactivated caller", gone, "john", KindUnauthorized, errBadToken.Error()},
			{"bad token before self", Credentials{Token: tokenPrefix + "x"}, "umar", KindUnauthorized, errBadToken.Error()},
			{"self", umar, "UMAR", KindBadInput, "you cannot ask yourself: to_user_id must be someone else in your organization"},
			{"another organization", umar, "eve", KindNotFound, `no user "eve" in your organization: list_users shows who you can ask`},
			{"deactivated recipient", umar, "gone", KindConflict, `user "gone" is deactivated and cannot receive questions`},
		} {
			_, err := f.s.Ask(ctx, tt.cred, tt.to, "How do retries work?")
			var re *Error
			if !errors.As(err, &re) || re.Kind != tt.kind || err.Error() != tt.want {
				t.Errorf("%s: Ask = %v, want kind %d %q", tt.name, err, tt.kind, tt.want)
			}
		}

		wake, cancel := s.Subscribe(ctx, "acme", "john")
		defer cancel()
		res, err := f.s.Ask(ctx, umar, "john", "How do retries work?")
		if err != nil || res.MessageID != 1 || res.ToName != "john" || !res.AskedAt.Equal(f.s.clock()) {
			t.Fatalf("Ask = %+v, %v; want message 1 to john, asked now (refusals number nothing)", res, err)
		}
		<-wake // the recipient is woken once the question commits
		in, err := f.s.Inbox(ctx, john, 0)
		if err != nil || len(in.Questions) != 1 || in.Questions[0].From.UserID != "umar" {
			t.Errorf("john's inbox = %+v, %v; want umar's question", in, err)
		}

		f.advance(DefaultTokenTTL)
		if _, err := f.s.Ask(ctx, john, "umar", "Still there?"); !errors.Is(err, errBadToken) {
			t.Errorf("Ask with an expired token = %v, want %v", err, errBadToken)
		}
	})
}
