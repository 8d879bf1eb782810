package db_test

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	ctalksql "github.com/ctalk/ctalk/sql"
)

var (
	forEachBackend    = dbtest.ForEachBackend
	forEachConfig     = dbtest.ForEachConfig
	newConfig         = dbtest.NewConfig
	newPostgresSchema = dbtest.NewPostgresSchema
	pgConn            = dbtest.PGConn
	pgExec            = dbtest.PGExec
	openStore         = dbtest.Open
	backends          = dbtest.Backends
)

// migrationVersions lists the versions of the embedded migrations of a backend, ascending.
func migrationVersions(t *testing.T, backend string) []int64 {
	t.Helper()
	entries, err := fs.ReadDir(ctalksql.Migrations, backend+"/migrations")
	if err != nil {
		t.Fatalf("read %s migrations: %v", backend, err)
	}
	var versions []int64
	for _, e := range entries {
		v, err := goose.NumericComponent(e.Name())
		if err != nil {
			t.Fatalf("migration %s: %v", e.Name(), err)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	if len(versions) == 0 {
		t.Fatalf("no %s migrations embedded", backend)
	}
	return versions
}

// mustTx runs fn in one transaction and fails the test if it does not commit.
func mustTx(t *testing.T, s db.Store, fn func(q db.Queries) error) {
	t.Helper()
	if err := s.InTx(t.Context(), fn); err != nil {
		t.Fatalf("InTx: %v", err)
	}
}

// inTx runs fn in one transaction and returns its error.
func inTx(t *testing.T, s db.Store, fn func(q db.Queries) error) error {
	t.Helper()
	return s.InTx(t.Context(), fn)
}

// view runs fn in a read-only transaction and fails the test on error.
func view(t *testing.T, s db.Store, fn func(q db.Queries) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// wantErr fails the test unless err wraps want.
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", call, err, want)
	}
}

// t0 is the base time of the fixtures: UTC, with microseconds, so that values
// stored on either backend come back equal.
var t0 = time.Date(2026, 11, 29, 10, 11, 12, 123456000, time.UTC)

func newOrg(id string) db.Organization {
	return db.Organization{ID: id, Name: "Org " + id, AdminPasswordHash: "admin-hash-" + id, CreatedAt: t0}
}

func newUser(orgID, id string) db.User {
	return db.User{
		OrgID: orgID, ID: id, Name: "Name of " + id, PasswordHash: "hash-" + id,
		Ownership: id + " owns " + orgID, Notes: "notes of " + id, ProfileNotes: "profile of " + id,
		CreatedAt: t0,
	}
}

// seedOrg creates an organization and its users in one transaction.
func seedOrg(t *testing.T, s db.Store, orgID string, userIDs ...string) {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		if err := q.CreateOrganization(t.Context(), newOrg(orgID)); err != nil {
			return err
		}
		for _, id := range userIDs {
			if err := q.CreateUser(t.Context(), newUser(orgID, id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// forEachTwoOrgs runs fn on each backend once organizations a and b are
// seeded with aUsers and bUsers: the tests of what one organization must
// never see of another.
func forEachTwoOrgs(t *testing.T, aUsers, bUsers []string, fn func(t *testing.T, s db.Store)) {
	t.Helper()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", aUsers...)
		seedOrg(t, s, "b", bUsers...)
		fn(t, s)
	})
}

// forEachAsked runs fn on each backend once amy, in organization a, has
// asked bob question at t0; m is that question.
func forEachAsked(t *testing.T, question string, fn func(t *testing.T, s db.Store, m db.Message)) {
	t.Helper()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", "amy", "bob")
		fn(t, s, ask(t, s, "a", "amy", "bob", question, t0))
	})
}

// ask stores a question the way a tool does (number it, then insert it) and
// returns it as it was stored.
func ask(t *testing.T, s db.Store, orgID, from, to, question string, at time.Time) db.Message {
	t.Helper()
	m := db.Message{OrgID: orgID, FromUserID: from, ToUserID: to, Question: question, AskedAt: at}
	mustTx(t, s, func(q db.Queries) error {
		var err error
		if m.ID, m.AskedSeq, err = q.AllocateMessage(t.Context(), orgID); err != nil {
			return err
		}
		m.ThreadID = m.ID // a first question starts its conversation
		return q.CreateMessage(t.Context(), m)
	})
	return m
}

// answer answers a question the way a tool does and returns it as answered.
func answer(t *testing.T, s db.Store, m db.Message, text string, at time.Time) db.Message {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		seq, err := q.AllocateEvent(t.Context(), m.OrgID)
		if err != nil {
			return err
		}
		if err := q.AnswerMessage(t.Context(), m.OrgID, m.ID, text, at, seq, nil); err != nil {
			return err
		}
		m.AnswerText, m.AnsweredAt, m.AnsweredSeq = &text, &at, &seq
		return nil
	})
	return m
}

// getMessage reads a message in a read-only transaction.
func getMessage(t *testing.T, s db.Store, orgID string, id int64) (db.Message, error) {
	t.Helper()
	var m db.Message
	err := s.View(t.Context(), func(q db.Queries) error {
		var err error
		m, err = q.GetMessage(t.Context(), orgID, id)
		return err
	})
	return m, err
}

func ptr[T any](v T) *T { return &v }
