package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
)

// The contract: every test here runs unchanged on SQLite and PostgreSQL, so a
// backend that answers a call differently fails it.

func TestBackendAndPing(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		s := openStore(t, cfg)
		want := "sqlite"
		if cfg.DatabaseURL != "" {
			want = "postgres"
		}
		if got := s.Backend(); got != want {
			t.Errorf("Backend() = %q, want %q", got, want)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping() = %v, want nil", err)
		}
	})
}

func TestOrganizations(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		mustTx(t, s, func(q db.Queries) error { return q.CreateOrganization(ctx, newOrg("acme")) })

		err := inTx(t, s, func(q db.Queries) error { return q.CreateOrganization(ctx, newOrg("acme")) })
		wantErr(t, `CreateOrganization("acme") again`, err, db.ErrConflict)

		view(t, s, func(q db.Queries) error {
			got, err := q.GetOrganization(ctx, "acme")
			if err != nil {
				t.Fatalf(`GetOrganization("acme") = %v`, err)
			}
			if diff := cmp.Diff(newOrg("acme"), got); diff != "" {
				t.Errorf(`GetOrganization("acme") mismatch (-want +got):\n%s`, diff)
			}
			_, err = q.GetOrganization(ctx, "nope")
			wantErr(t, `GetOrganization("nope")`, err, db.ErrNotFound)
			return nil
		})
	})
}

func TestUsers(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"zoe", "bob", "amy"}, []string{"bob", "yan"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()

		err := inTx(t, s, func(q db.Queries) error { return q.CreateUser(ctx, newUser("a", "bob")) })
		wantErr(t, `CreateUser("a", "bob") again`, err, db.ErrConflict)
		err = inTx(t, s, func(q db.Queries) error { return q.CreateUser(ctx, newUser("nope", "bob")) })
		wantErr(t, `CreateUser("nope", "bob")`, err, db.ErrNotFound)

		mustTx(t, s, func(q db.Queries) error {
			if err := q.UpdateUserNotes(ctx, "a", "bob", "new notes"); err != nil {
				t.Errorf(`UpdateUserNotes("a", "bob") = %v, want nil`, err)
			}
			if err := q.UpdateUserProfileNotes(ctx, "a", "bob", "new profile"); err != nil {
				t.Errorf(`UpdateUserProfileNotes("a", "bob") = %v, want nil`, err)
			}
			// yan exists, but in organization b only.
			for _, id := range []string{"nope", "yan"} {
				wantErr(t, `UpdateUserNotes("a", "`+id+`")`, q.UpdateUserNotes(ctx, "a", id, "x"), db.ErrNotFound)
				wantErr(t, `UpdateUserProfileNotes("a", "`+id+`")`, q.UpdateUserProfileNotes(ctx, "a", id, "x"), db.ErrNotFound)
			}
			return nil
		})

		bobA := newUser("a", "bob")
		bobA.Notes, bobA.ProfileNotes = "new notes", "new profile"
		view(t, s, func(q db.Queries) error {
			got, err := q.GetUser(ctx, "a", "bob")
			if err != nil {
				t.Fatalf(`GetUser("a", "bob") = %v`, err)
			}
			if diff := cmp.Diff(bobA, got); diff != "" {
				t.Errorf(`GetUser("a", "bob") mismatch (-want +got):\n%s`, diff)
			}
			// The other organization's bob is a different person, untouched.
			got, err = q.GetUser(ctx, "b", "bob")
			if err != nil {
				t.Fatalf(`GetUser("b", "bob") = %v`, err)
			}
			if diff := cmp.Diff(newUser("b", "bob"), got); diff != "" {
				t.Errorf(`GetUser("b", "bob") mismatch (-want +got):\n%s`, diff)
			}
			_, err = q.GetUser(ctx, "a", "yan")
			wantErr(t, `GetUser("a", "yan")`, err, db.ErrNotFound)

			list, err := q.ListUsers(ctx, "a")
			if err != nil {
				t.Fatalf(`ListUsers("a") = %v`, err)
			}
			want := []db.User{newUser("a", "amy"), bobA, newUser("a", "zoe")}
			if diff := cmp.Diff(want, list); diff != "" {
				t.Errorf(`ListUsers("a") mismatch (-want +got):\n%s`, diff)
			}
			list, err = q.ListUsers(ctx, "nope")
			if err != nil || len(list) != 0 {
				t.Errorf(`ListUsers("nope") = %v, %v, want no users, nil`, list, err)
			}
			return nil
		})
	})
}

// checkUTC fails unless got is the instant want, in UTC.
func checkUTC(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("%s = %v (location %q), want %v in UTC", what, got, got.Location(), want)
	}
}

func TestTimesRoundTripInUTC(t *testing.T) {
	t.Parallel()
	// Not UTC, and microseconds: what a caller in another zone would pass.
	at := time.Date(2026, 11, 29, 10, 11, 12, 123456000, time.FixedZone("x", 3600))
	later := at.Add(time.Minute + time.Microsecond)
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		hash := []byte("token-hash")
		mustTx(t, s, func(q db.Queries) error {
			o := newOrg("a")
			o.CreatedAt = at
			u := newUser("a", "bob")
			u.CreatedAt = at
			if err := q.CreateOrganization(ctx, o); err != nil {
				return err
			}
			if err := q.CreateUser(ctx, u); err != nil {
				return err
			}
			if err := q.CreateToken(ctx, db.Token{TokenHash: hash, OrgID: "a", UserID: "bob", CreatedAt: at, ExpiresAt: later}); err != nil {
				return err
			}
			if err := q.RevokeToken(ctx, hash, later); err != nil {
				return err
			}
			if err := q.CreateMessage(ctx, db.Message{OrgID: "a", ID: 1, FromUserID: "bob", ToUserID: "bob", Question: "q", AskedAt: at, AskedSeq: 1}); err != nil {
				return err
			}
			if err := q.SaveDraft(ctx, "a", 1, "draft", later, false); err != nil {
				return err
			}
			return q.AnswerMessage(ctx, "a", 1, "answer", later, 2, nil)
		})

		view(t, s, func(q db.Queries) error {
			o, err := q.GetOrganization(ctx, "a")
			if err != nil {
				t.Fatalf("GetOrganization: %v", err)
			}
			checkUTC(t, "Organization.CreatedAt", o.CreatedAt, at)
			u, err := q.GetUser(ctx, "a", "bob")
			if err != nil {
				t.Fatalf("GetUser: %v", err)
			}
			checkUTC(t, "User.CreatedAt", u.CreatedAt, at)
			tok, err := q.GetToken(ctx, hash)
			if err != nil {
				t.Fatalf("GetToken: %v", err)
			}
			checkUTC(t, "Token.CreatedAt", tok.CreatedAt, at)
			checkUTC(t, "Token.ExpiresAt", tok.ExpiresAt, later)
			if tok.RevokedAt == nil {
				t.Fatalf("Token.RevokedAt = nil, want %v", later)
			}
			checkUTC(t, "Token.RevokedAt", *tok.RevokedAt, later)
			m, err := q.GetMessage(ctx, "a", 1)
			if err != nil {
				t.Fatalf("GetMessage: %v", err)
			}
			checkUTC(t, "Message.AskedAt", m.AskedAt, at)
			if m.DraftUpdatedAt == nil || m.AnsweredAt == nil {
				t.Fatalf("DraftUpdatedAt, AnsweredAt = %v, %v, want both %v", m.DraftUpdatedAt, m.AnsweredAt, later)
			}
			checkUTC(t, "Message.DraftUpdatedAt", *m.DraftUpdatedAt, later)
			checkUTC(t, "Message.AnsweredAt", *m.AnsweredAt, later)
			return nil
		})
	})
}

func TestNullableFields(t *testing.T) {
	t.Parallel()
	forEachAsked(t, "why?", func(t *testing.T, s db.Store, m db.Message) {
		ctx := t.Context()

		view(t, s, func(q db.Queries) error {
			u, err := q.GetUser(ctx, "a", "amy")
			if err != nil {
				t.Fatalf("GetUser: %v", err)
			}
			if u.DeactivatedAt != nil {
				t.Errorf("User.DeactivatedAt = %v, want nil", *u.DeactivatedAt)
			}
			return nil
		})
		got, err := getMessage(t, s, "a", m.ID)
		if err != nil {
			t.Fatalf("GetMessage(%d) = %v", m.ID, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("GetMessage(%d) of a new question mismatch (-want +got):\n%s", m.ID, diff)
		}
		if got.DraftText != nil || got.DraftUpdatedAt != nil || got.AnswerText != nil || got.AnsweredAt != nil || got.AnsweredSeq != nil || got.Answered() {
			t.Errorf("GetMessage(%d) of a new question = %+v, want no draft and no answer", m.ID, got)
		}

		// Empty strings are values, not NULL.
		mustTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "a", m.ID, "", t0, false) })
		m.DraftText, m.DraftUpdatedAt = ptr(""), ptr(t0)
		m = answer(t, s, m, "", t0)
		got, err = getMessage(t, s, "a", m.ID)
		if err != nil {
			t.Fatalf("GetMessage(%d) = %v", m.ID, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("GetMessage(%d) with empty draft and answer mismatch (-want +got):\n%s", m.ID, diff)
		}
		if !got.Answered() {
			t.Errorf("GetMessage(%d).Answered() = false, want true", m.ID)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"yan"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		tok := func(hash, user string) db.Token {
			return db.Token{TokenHash: []byte(hash), OrgID: "a", UserID: user, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		}
		mustTx(t, s, func(q db.Queries) error {
			for _, tk := range []db.Token{tok("amy1", "amy"), tok("amy2", "amy"), tok("amy3", "amy"), tok("bob1", "bob")} {
				if err := q.CreateToken(ctx, tk); err != nil {
					return err
				}
			}
			return nil
		})
		err := inTx(t, s, func(q db.Queries) error { return q.CreateToken(ctx, tok("amy1", "bob")) })
		wantErr(t, "CreateToken(existing hash)", err, db.ErrConflict)
		for _, user := range []string{"nope", "yan"} { // yan is in organization b
			err := inTx(t, s, func(q db.Queries) error { return q.CreateToken(ctx, tok("x-"+user, user)) })
			wantErr(t, `CreateToken(user "`+user+`")`, err, db.ErrNotFound)
		}

		getToken := func(hash string) db.Token {
			t.Helper()
			var got db.Token
			view(t, s, func(q db.Queries) error {
				var err error
				got, err = q.GetToken(ctx, []byte(hash))
				return err
			})
			return got
		}
		if diff := cmp.Diff(tok("amy1", "amy"), getToken("amy1")); diff != "" {
			t.Errorf("GetToken(amy1) mismatch (-want +got):\n%s", diff)
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetToken(ctx, []byte("nope"))
			wantErr(t, "GetToken(nope)", err, db.ErrNotFound)
			return nil
		})

		revokedAt := t0.Add(time.Minute)
		mustTx(t, s, func(q db.Queries) error { return q.RevokeToken(ctx, []byte("bob1"), revokedAt) })
		want := tok("bob1", "bob")
		want.RevokedAt = &revokedAt
		if diff := cmp.Diff(want, getToken("bob1")); diff != "" {
			t.Errorf("GetToken(bob1) after RevokeToken mismatch (-want +got):\n%s", diff)
		}
		err = inTx(t, s, func(q db.Queries) error { return q.RevokeToken(ctx, []byte("bob1"), revokedAt) })
		wantErr(t, "RevokeToken(bob1) again", err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { return q.RevokeToken(ctx, []byte("nope"), revokedAt) })
		wantErr(t, "RevokeToken(nope)", err, db.ErrNotFound)

		revokeAll := func(keep []byte) int64 {
			t.Helper()
			var n int64
			mustTx(t, s, func(q db.Queries) error {
				var err error
				n, err = q.RevokeUserTokens(ctx, "a", "amy", keep, revokedAt)
				return err
			})
			return n
		}
		if n := revokeAll([]byte("amy2")); n != 2 {
			t.Errorf("RevokeUserTokens(amy, keep amy2) = %d, want 2", n)
		}
		for hash, wantRevoked := range map[string]bool{"amy1": true, "amy2": false, "amy3": true} {
			if got := getToken(hash).RevokedAt != nil; got != wantRevoked {
				t.Errorf("GetToken(%s) revoked = %v, want %v", hash, got, wantRevoked)
			}
		}
		if n := revokeAll(nil); n != 1 {
			t.Errorf("RevokeUserTokens(amy, keep nil) = %d, want 1", n)
		}
		if getToken("amy2").RevokedAt == nil {
			t.Errorf("GetToken(amy2).RevokedAt = nil after RevokeUserTokens(keep nil), want set")
		}
		if n := revokeAll(nil); n != 0 {
			t.Errorf("RevokeUserTokens(amy, keep nil) again = %d, want 0", n)
		}
	})
}

func TestAllocate(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, nil, nil, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		type ids struct{ ID, Seq int64 }
		allocate := func(org string) ids {
			t.Helper()
			var got ids
			mustTx(t, s, func(q db.Queries) error {
				var err error
				got.ID, got.Seq, err = q.AllocateMessage(ctx, org)
				return err
			})
			return got
		}
		event := func(org string) int64 {
			t.Helper()
			var seq int64
			mustTx(t, s, func(q db.Queries) error {
				var err error
				seq, err = q.AllocateEvent(ctx, org)
				return err
			})
			return seq
		}
		steps := []struct {
			org  string
			msg  bool
			want ids
		}{
			{"a", true, ids{1, 1}},
			{"a", true, ids{2, 2}},
			{"b", true, ids{1, 1}},
			{"a", false, ids{0, 3}},
			{"b", false, ids{0, 2}},
			{"a", true, ids{3, 4}},
		}
		for i, st := range steps {
			var got ids
			if st.msg {
				got = allocate(st.org)
			} else {
				got.Seq = event(st.org)
			}
			if got != st.want {
				t.Errorf("step %d: allocate(%q, message=%v) = %+v, want %+v", i, st.org, st.msg, got, st.want)
			}
		}
		view(t, s, func(q db.Queries) error {
			o, err := q.GetOrganization(ctx, "a")
			if err != nil || o.LastMessageID != 3 || o.LastEventSeq != 4 {
				t.Errorf(`GetOrganization("a") = %d, %d, %v; want LastMessageID 3, LastEventSeq 4`, o.LastMessageID, o.LastEventSeq, err)
			}
			return nil
		})
		err := inTx(t, s, func(q db.Queries) error { _, _, err := q.AllocateMessage(ctx, "nope"); return err })
		wantErr(t, `AllocateMessage("nope")`, err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { _, err := q.AllocateEvent(ctx, "nope"); return err })
		wantErr(t, `AllocateEvent("nope")`, err, db.ErrNotFound)
	})
}

func TestMessagesStayInTheirOrganization(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"yan", "zed"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()

		msg := func(from, to string) db.Message {
			return db.Message{OrgID: "a", ID: 7, FromUserID: from, ToUserID: to, Question: "q", AskedAt: t0, AskedSeq: 1}
		}
		// yan exists, but in organization b: the composite keys refuse him in a.
		for _, m := range []db.Message{msg("amy", "yan"), msg("yan", "amy"), msg("amy", "nope")} {
			err := inTx(t, s, func(q db.Queries) error { return q.CreateMessage(ctx, m) })
			wantErr(t, "CreateMessage(a, "+m.FromUserID+" -> "+m.ToUserID+")", err, db.ErrNotFound)
		}
		mustTx(t, s, func(q db.Queries) error { return q.CreateMessage(ctx, msg("amy", "bob")) })
		err := inTx(t, s, func(q db.Queries) error { return q.CreateMessage(ctx, msg("bob", "amy")) })
		wantErr(t, "CreateMessage(a, id 7) again", err, db.ErrConflict)

		qa := ask(t, s, "a", "amy", "bob", "question in a", t0)
		if _, err := getMessage(t, s, "b", qa.ID); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("GetMessage(b, %d) = %v, want %v", qa.ID, err, db.ErrNotFound)
		}
		qb := ask(t, s, "b", "yan", "zed", "question in b", t0)
		if qa.ID != qb.ID {
			t.Fatalf("first question ids = %d in a, %d in b; want equal", qa.ID, qb.ID)
		}
		for _, want := range []db.Message{qa, qb} {
			got, err := getMessage(t, s, want.OrgID, want.ID)
			if err != nil {
				t.Fatalf("GetMessage(%s, %d) = %v", want.OrgID, want.ID, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GetMessage(%s, %d) mismatch (-want +got):\n%s", want.OrgID, want.ID, diff)
			}
		}

		// Writes through another organization touch nothing.
		err = inTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "b", 7, "d", t0, false) })
		wantErr(t, "SaveDraft(b, 7)", err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { return q.AnswerMessage(ctx, "b", 7, "x", t0, 9, nil) })
		wantErr(t, "AnswerMessage(b, 7)", err, db.ErrNotFound)
		if got, err := getMessage(t, s, "a", 7); err != nil || got.DraftText != nil || got.Answered() {
			t.Errorf("GetMessage(a, 7) after writes via b = %+v, %v; want no draft, unanswered", got, err)
		}
	})
}

func TestListInbox(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob", "cat"}, []string{"amy", "bob"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		m1 := ask(t, s, "a", "amy", "bob", "one", t0)
		m2 := ask(t, s, "a", "cat", "bob", "two", t0.Add(time.Second))
		ask(t, s, "a", "bob", "amy", "not to bob", t0)
		m4 := ask(t, s, "a", "cat", "bob", "four", t0.Add(2*time.Second))
		m5 := ask(t, s, "a", "amy", "bob", "five", t0.Add(3*time.Second))
		ask(t, s, "b", "amy", "bob", "other org", t0)
		answer(t, s, m2, "done", t0.Add(time.Minute))
		mustTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "a", m4.ID, "draft", t0, false) })
		m4.DraftText, m4.DraftUpdatedAt = ptr("draft"), ptr(t0)

		item := func(m db.Message) db.InboxItem {
			u := newUser("a", m.FromUserID)
			return db.InboxItem{Message: m, SenderName: u.Name, SenderOwnership: u.Ownership, SenderNotes: u.Notes, SenderProfileNotes: u.ProfileNotes}
		}
		tests := []struct {
			to      string
			afterID int64
			limit   int
			want    []db.InboxItem
		}{
			{"bob", 0, 10, []db.InboxItem{item(m1), item(m4), item(m5)}},
			{"bob", m1.ID, 10, []db.InboxItem{item(m4), item(m5)}},
			{"bob", 0, 2, []db.InboxItem{item(m1), item(m4)}},
			{"bob", m5.ID, 10, nil},
			{"cat", 0, 10, nil},
		}
		view(t, s, func(q db.Queries) error {
			for _, tt := range tests {
				got, err := q.ListInbox(ctx, "a", tt.to, tt.afterID, tt.limit)
				if err != nil {
					t.Fatalf("ListInbox(a, %s, %d, %d) = %v", tt.to, tt.afterID, tt.limit, err)
				}
				if len(tt.want) == 0 && len(got) == 0 {
					continue
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ListInbox(a, %s, %d, %d) mismatch (-want +got):\n%s", tt.to, tt.afterID, tt.limit, diff)
				}
			}
			return nil
		})
	})
}

func TestDraftAndAnswer(t *testing.T) {
	t.Parallel()
	forEachAsked(t, "q", func(t *testing.T, s db.Store, m db.Message) {
		ctx := t.Context()

		for i, draft := range []string{"first", "second"} {
			at := t0.Add(time.Duration(i+1) * time.Second)
			mustTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "a", m.ID, draft, at, false) })
			m.DraftText, m.DraftUpdatedAt = &draft, &at
		}
		m = answer(t, s, m, "final", t0.Add(time.Minute))
		err := inTx(t, s, func(q db.Queries) error { return q.AnswerMessage(ctx, "a", m.ID, "again", t0.Add(time.Hour), 99, nil) })
		wantErr(t, "AnswerMessage(answered)", err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "a", m.ID, "late draft", t0.Add(time.Hour), false) })
		wantErr(t, "SaveDraft(answered)", err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { return q.SaveDraft(ctx, "a", 404, "d", t0, false) })
		wantErr(t, "SaveDraft(unknown id)", err, db.ErrNotFound)
		err = inTx(t, s, func(q db.Queries) error { return q.AnswerMessage(ctx, "a", 404, "x", t0, 98, nil) })
		wantErr(t, "AnswerMessage(unknown id)", err, db.ErrNotFound)

		got, err := getMessage(t, s, "a", m.ID)
		if err != nil {
			t.Fatalf("GetMessage = %v", err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("GetMessage after draft, answer and refused writes mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestListReplies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob", "cat")
		m1 := ask(t, s, "a", "amy", "bob", "one", t0)
		m2 := ask(t, s, "a", "amy", "cat", "two", t0)
		m3 := ask(t, s, "a", "amy", "bob", "three", t0)
		ask(t, s, "a", "amy", "cat", "unanswered", t0)
		other := ask(t, s, "a", "bob", "amy", "not amy's", t0)
		// Answered in the order 3, 1, 2: replies come in answer order, not id order.
		m3 = answer(t, s, m3, "a3", t0.Add(1*time.Second))
		m1 = answer(t, s, m1, "a1", t0.Add(2*time.Second+time.Microsecond))
		m2 = answer(t, s, m2, "a2", t0.Add(3*time.Second))
		answer(t, s, other, "x", t0.Add(4*time.Second))

		reply := func(m db.Message) db.Reply { return db.Reply{Message: m, RecipientName: newUser("a", m.ToUserID).Name} }
		// allSeen: every reply has been shown, so only since and afterSeq filter.
		const allSeen = 1 << 62
		tests := []struct {
			name     string
			since    time.Time
			afterSeq int64
			seenSeq  int64
			limit    int
			want     []db.Reply
		}{
			{"all", time.Time{}, 0, allSeen, 10, []db.Reply{reply(m3), reply(m1), reply(m2)}},
			{"since is inclusive to the microsecond", *m1.AnsweredAt, 0, allSeen, 10, []db.Reply{reply(m1), reply(m2)}},
			{"since a microsecond later", m1.AnsweredAt.Add(time.Microsecond), 0, allSeen, 10, []db.Reply{reply(m2)}},
			{"since in another zone", m1.AnsweredAt.In(time.FixedZone("x", 3600)), 0, allSeen, 10, []db.Reply{reply(m1), reply(m2)}},
			{"after seq", time.Time{}, *m3.AnsweredSeq, allSeen, 10, []db.Reply{reply(m1), reply(m2)}},
			{"since and after seq", *m1.AnsweredAt, *m1.AnsweredSeq, allSeen, 10, []db.Reply{reply(m2)}},
			{"limit", time.Time{}, 0, allSeen, 2, []db.Reply{reply(m3), reply(m1)}},
			{"none left", time.Time{}, *m2.AnsweredSeq, allSeen, 10, nil},
			{"unseen ones whatever since says", t0.Add(time.Hour), 0, *m3.AnsweredSeq, 10, []db.Reply{reply(m1), reply(m2)}},
			{"unseen ones whatever the cursor says", time.Time{}, *m2.AnsweredSeq, *m1.AnsweredSeq, 10, []db.Reply{reply(m2)}},
		}
		view(t, s, func(q db.Queries) error {
			for _, tt := range tests {
				got, err := q.ListReplies(ctx, "a", "amy", tt.since, tt.afterSeq, tt.seenSeq, tt.limit)
				if err != nil {
					t.Fatalf("%s: ListReplies(a, amy, %v, %d, %d, %d) = %v", tt.name, tt.since, tt.afterSeq, tt.seenSeq, tt.limit, err)
				}
				if len(tt.want) == 0 && len(got) == 0 {
					continue
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: ListReplies(a, amy, %v, %d, %d, %d) mismatch (-want +got):\n%s", tt.name, tt.since, tt.afterSeq, tt.seenSeq, tt.limit, diff)
				}
			}
			got, err := q.ListReplies(ctx, "a", "cat", time.Time{}, 0, 0, 10)
			if err != nil || len(got) != 0 {
				t.Errorf("ListReplies(a, cat) = %v, %v; want none, nil", got, err)
			}
			return nil
		})
	})
}

func TestCountAndLast(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"amy", "bob"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		last := func(answered bool) (db.Message, error) {
			t.Helper()
			var m db.Message
			err := s.View(ctx, func(q db.Queries) error {
				var err error
				if answered {
					m, err = q.LastAnswer(ctx, "a", "amy", "bob")
				} else {
					m, err = q.LastQuestion(ctx, "a", "amy", "bob")
				}
				return err
			})
			return m, err
		}
		count := func(org, from, to string) int64 {
			t.Helper()
			var n int64
			view(t, s, func(q db.Queries) error {
				var err error
				n, err = q.CountQuestions(ctx, org, from, to)
				return err
			})
			return n
		}

		_, err := last(false)
		wantErr(t, "LastQuestion(amy -> bob) with none", err, db.ErrNotFound)
		_, err = last(true)
		wantErr(t, "LastAnswer(amy -> bob) with none", err, db.ErrNotFound)

		m1 := ask(t, s, "a", "amy", "bob", "one", t0)
		m2 := ask(t, s, "a", "amy", "bob", "two", t0)
		ask(t, s, "a", "bob", "amy", "reverse", t0)
		ask(t, s, "b", "amy", "bob", "other org", t0)
		for _, tt := range []struct {
			org, from, to string
			want          int64
		}{{"a", "amy", "bob", 2}, {"a", "bob", "amy", 1}, {"a", "amy", "amy", 0}, {"b", "amy", "bob", 1}, {"nope", "amy", "bob", 0}} {
			if got := count(tt.org, tt.from, tt.to); got != tt.want {
				t.Errorf("CountQuestions(%s, %s, %s) = %d, want %d", tt.org, tt.from, tt.to, got, tt.want)
			}
		}

		got, err := last(false)
		if diff := cmp.Diff(m2, got); err != nil || diff != "" {
			t.Errorf("LastQuestion(amy -> bob) = %v, mismatch (-want +got):\n%s", err, diff)
		}
		_, err = last(true)
		wantErr(t, "LastAnswer(amy -> bob) with none answered", err, db.ErrNotFound)

		// The newest answer is the one answered last, not the newest question.
		answer(t, s, m2, "two answered", t0.Add(time.Second))
		m1 = answer(t, s, m1, "one answered", t0.Add(2*time.Second))
		got, err = last(true)
		if diff := cmp.Diff(m1, got); err != nil || diff != "" {
			t.Errorf("LastAnswer(amy -> bob) = %v, mismatch (-want +got):\n%s", err, diff)
		}
	})
}

func TestInTxRollsBackOnError(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		errStop := errors.New("stop")
		err := s.InTx(ctx, func(q db.Queries) error {
			if err := q.CreateOrganization(ctx, newOrg("b")); err != nil {
				return err
			}
			if err := q.CreateUser(ctx, newUser("a", "bob")); err != nil {
				return err
			}
			if _, _, err := q.AllocateMessage(ctx, "a"); err != nil {
				return err
			}
			if err := q.UpdateUserNotes(ctx, "a", "amy", "changed"); err != nil {
				return err
			}
			return errStop
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("InTx(fn returning errStop) = %v, want errStop", err)
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetOrganization(ctx, "b")
			wantErr(t, "GetOrganization(b) after rollback", err, db.ErrNotFound)
			_, err = q.GetUser(ctx, "a", "bob")
			wantErr(t, "GetUser(a, bob) after rollback", err, db.ErrNotFound)
			amy, err := q.GetUser(ctx, "a", "amy")
			if err != nil || amy.Notes != newUser("a", "amy").Notes {
				t.Errorf("GetUser(a, amy) after rollback = %q, %v; want notes %q", amy.Notes, err, newUser("a", "amy").Notes)
			}
			return nil
		})
		if m := ask(t, s, "a", "amy", "amy", "q", t0); m.ID != 1 || m.AskedSeq != 1 {
			t.Errorf("first question after rollback numbered %d, seq %d; want 1, 1", m.ID, m.AskedSeq)
		}
	})
}

func TestViewReadsButDoesNotWrite(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		view(t, s, func(q db.Queries) error {
			users, err := q.ListUsers(ctx, "a")
			if err != nil || len(users) != 1 {
				t.Errorf("ListUsers(a) in View = %d users, %v; want 1, nil", len(users), err)
			}
			return nil
		})
		err := s.View(ctx, func(q db.Queries) error { return q.CreateOrganization(ctx, newOrg("b")) })
		if err == nil {
			t.Errorf("CreateOrganization in View = nil, want an error")
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetOrganization(ctx, "b")
			wantErr(t, "GetOrganization(b) after write in View", err, db.ErrNotFound)
			return nil
		})
	})
}

// TestAnswerMessageOnceUnderConcurrency races send_response's transaction:
// exactly one answer is stored, and every other caller is told ErrNotFound.
func TestAnswerMessageOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	forEachAsked(t, "q", func(t *testing.T, s db.Store, m db.Message) {

		const callers = 20
		errs := make([]error, callers)
		seqs := make([]int64, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				<-start
				ctx := context.WithoutCancel(t.Context())
				errs[i] = s.InTx(ctx, func(q db.Queries) error {
					seq, err := q.AllocateEvent(ctx, "a")
					if err != nil {
						return err
					}
					seqs[i] = seq
					return q.AnswerMessage(ctx, "a", m.ID, "answer "+string(rune('A'+i)), t0, seq, nil)
				})
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("callers %d and %d both answered", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, db.ErrNotFound):
				t.Errorf("caller %d: InTx(AllocateEvent, AnswerMessage) = %v, want nil or %v", i, err, db.ErrNotFound)
			}
		}
		if winner < 0 {
			t.Fatalf("no caller answered; errors: %v", errs)
		}
		got, err := getMessage(t, s, "a", m.ID)
		if err != nil {
			t.Fatalf("GetMessage = %v", err)
		}
		wantText := "answer " + string(rune('A'+winner))
		if got.AnswerText == nil || *got.AnswerText != wantText || got.AnsweredSeq == nil || *got.AnsweredSeq != seqs[winner] {
			t.Errorf("GetMessage after race = answer %v, seq %v; want %q, %d", got.AnswerText, got.AnsweredSeq, wantText, seqs[winner])
		}
	})
}

func TestMarkRepliesSeen(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy"}, []string{"amy"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seen := func(org string) int64 {
			t.Helper()
			var u db.User
			view(t, s, func(q db.Queries) (err error) { u, err = q.GetUser(ctx, org, "amy"); return err })
			return u.RepliesSeenSeq
		}
		for _, tt := range []struct {
			mark, want int64
		}{{5, 5}, {3, 5}, {9, 9}} { // it only ever rises
			mustTx(t, s, func(q db.Queries) error { return q.MarkRepliesSeen(ctx, "a", "amy", tt.mark) })
			if got := seen("a"); got != tt.want {
				t.Errorf("after MarkRepliesSeen(a, amy, %d): RepliesSeenSeq = %d, want %d", tt.mark, got, tt.want)
			}
		}
		if got := seen("b"); got != 0 {
			t.Errorf("amy of org b: RepliesSeenSeq = %d, want 0 (another organization)", got)
		}
	})
}

func TestGetTokenUser(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy"}, []string{"amy"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		tok := db.Token{TokenHash: []byte("hash-of-amy-b"), OrgID: "b", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		mustTx(t, s, func(q db.Queries) error { return q.CreateToken(ctx, tok) })
		view(t, s, func(q db.Queries) error {
			gotTok, gotUser, err := q.GetTokenUser(ctx, tok.TokenHash)
			if err != nil {
				t.Fatalf("GetTokenUser(amy of b) = %v", err)
			}
			if diff := cmp.Diff(tok, gotTok); diff != "" {
				t.Errorf("GetTokenUser token mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(newUser("b", "amy"), gotUser); diff != "" {
				t.Errorf("GetTokenUser user mismatch (-want +got): the token's own organization's user\n%s", diff)
			}
			_, _, err = q.GetTokenUser(ctx, []byte("no such hash"))
			wantErr(t, "GetTokenUser(unknown)", err, db.ErrNotFound)
			return nil
		})
	})
}
