package relay

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Passwords of the fixtures: distinctive, so a test can search for them.
const (
	testAdminPassword = "admin-Secret-Horse-Battery"
	testUserPassword  = "user-Secret-Staple-42"
)

// fixture is the rules over a real store, with a clock the test moves.
type fixture struct {
	t   *testing.T
	s   *Service
	now atomic.Int64 // Unix nanoseconds
}

func newFixture(t *testing.T, store db.Store) *fixture {
	t.Helper()
	f := &fixture{t: t}
	f.now.Store(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	f.s = New(store, Options{HashConcurrency: 2, Now: func() time.Time { return time.Unix(0, f.now.Load()) }})
	f.s.refusalHold = 0 // the fixture's clock does not move while a refusal is held
	// A loaded test machine may take longer than hashWait to free a slot:
	// "busy" is tested where it is meant (hashqueue_test.go), not by chance.
	f.s.hash.wait = time.Minute
	return f
}

// newTeam is a fixture with organization acme and the given users in it.
func newTeam(t *testing.T, store db.Store, users ...string) *fixture {
	t.Helper()
	f := newFixture(t, store)
	f.org("acme")
	for _, u := range users {
		f.user("acme", u)
	}
	return f
}

// advance moves the fixture's clock on.
func (f *fixture) advance(d time.Duration) { f.now.Add(int64(d)) }

// org registers an organization with testAdminPassword.
func (f *fixture) org(orgID string) {
	f.t.Helper()
	if _, err := f.s.RegisterOrganization(f.t.Context(), NewOrganization{OrgID: orgID, Name: "Org " + orgID, AdminPassword: testAdminPassword}); err != nil {
		f.t.Fatalf("RegisterOrganization(%s) = %v", orgID, err)
	}
}

// user registers a user with testUserPassword.
func (f *fixture) user(orgID, userID string) {
	f.t.Helper()
	_, err := f.s.RegisterUser(f.t.Context(), Admin{OrgID: orgID, Password: testAdminPassword},
		NewUser{UserID: userID, Name: userID, Password: testUserPassword, Ownership: userID + "-repo"})
	if err != nil {
		f.t.Fatalf("RegisterUser(%s/%s) = %v", orgID, userID, err)
	}
}

// login logs a user in with testUserPassword and returns the token.
func (f *fixture) login(orgID, userID string) string {
	f.t.Helper()
	res, err := f.s.Login(f.t.Context(), orgID, userID, testUserPassword)
	if err != nil {
		f.t.Fatalf("Login(%s/%s) = %v", orgID, userID, err)
	}
	return res.AuthToken
}

// hashed runs fn and returns its error and how many argon2id hashes it computed.
func (f *fixture) hashed(fn func() error) (error, int64) {
	before := f.s.PasswordHashes()
	err := fn()
	return err, f.s.PasswordHashes() - before
}

// umarAndJohn is a team with umar and john, both logged in.
func umarAndJohn(t *testing.T, store db.Store) (f *fixture, umar, john Credentials) {
	t.Helper()
	f = newTeam(t, store, "umar", "john")
	return f, Credentials{Token: f.login("acme", "umar")}, Credentials{Token: f.login("acme", "john")}
}
