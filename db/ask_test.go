package db_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
)

// TestAskPerson: PostgreSQL's one statement and SQLite's queries give the
// same outcome for each check, in the same order, and store a question only
// when every check passes.
func TestAskPerson(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob", "cal")
		seedOrg(t, s, "b", "dan")
		token := func(hash, user string, expires time.Time) {
			mustTx(t, s, func(q db.Queries) error {
				return q.CreateToken(ctx, db.Token{TokenHash: []byte(hash), OrgID: "a", UserID: user, CreatedAt: t0, ExpiresAt: expires})
			})
		}
		token("amy", "amy", t0.Add(time.Hour))
		token("amy-old", "amy", t0.Add(time.Minute))
		token("cal", "cal", t0.Add(time.Hour))
		mustTx(t, s, func(q db.Queries) error { return q.SetUserDeactivated(ctx, "a", "cal", ptr(t0)) })

		askAs := func(hash, to string) db.AskOutcome {
			t.Helper()
			var out db.AskOutcome
			mustTx(t, s, func(q db.Queries) (err error) {
				out, err = q.AskPerson(ctx, db.AskParams{TokenHash: []byte(hash), ToUserID: to, Question: "Why?", At: t0.Add(30 * time.Minute)})
				return err
			})
			return out
		}
		for _, tt := range []struct {
			hash, to string
			want     db.AskStatus
		}{
			{"nobody", "bob", db.AskBadToken},
			{"amy-old", "bob", db.AskBadToken}, // expired
			{"cal", "amy", db.AskBadToken},     // deactivated caller
			{"nobody", "nobody", db.AskBadToken},
			{"amy", "amy", db.AskSelf},
			{"amy", "dan", db.AskNoRecipient}, // another organization's user
			{"amy", "cal", db.AskRecipientDeactivated},
		} {
			if got := askAs(tt.hash, tt.to); got.Status != tt.want {
				t.Errorf("AskPerson(%s → %s) = status %d, want %d", tt.hash, tt.to, got.Status, tt.want)
			}
		}

		out := askAs("amy", "bob")
		want := db.AskOutcome{Status: db.Asked, ToName: newUser("a", "bob").Name, Message: db.Message{
			OrgID: "a", ID: 1, FromUserID: "amy", ToUserID: "bob", Question: "Why?", AskedAt: t0.Add(30 * time.Minute), AskedSeq: 1, ThreadID: 1}}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("AskPerson(amy → bob) mismatch (-want +got): refusals must number nothing\n%s", diff)
		}
		stored, err := getMessage(t, s, "a", 1)
		if err != nil || !cmp.Equal(stored, want.Message) {
			t.Errorf("stored question = %+v, %v; want %+v", stored, err, want.Message)
		}
	})
}

// TestLockUser: LockUser reads a user like GetUser, inside a write transaction.
func TestLockUser(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		mustTx(t, s, func(q db.Queries) error {
			u, err := q.LockUser(ctx, "a", "amy")
			if err != nil || !cmp.Equal(u, newUser("a", "amy")) {
				t.Errorf("LockUser(a, amy) = %+v, %v; want %+v", u, err, newUser("a", "amy"))
			}
			_, err = q.LockUser(ctx, "a", "nobody")
			wantErr(t, "LockUser(a, nobody)", err, db.ErrNotFound)
			return nil
		})
	})
}
