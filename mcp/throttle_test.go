package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// newThrottleHarness is newHarness with the tools in view, so a test can
// read the hasher's count of argon2id computations.
func newThrottleHarness(t *testing.T, s db.Store) (*harness, *tools) {
	t.Helper()
	h := &harness{t: t, clock: &fakeClock{now: testStart}, logs: &syncBuffer{}}
	tl := newTools(s, Options{HashConcurrency: 2, Now: h.clock.Now, Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
	srv := mcpserver.NewMCPServer("ctalk", "test", mcpserver.WithToolCapabilities(false))
	for _, st := range tl.serverTools() {
		srv.AddTool(st.Tool, st.Handler)
	}
	c, err := mcpclient.NewInProcessClient(srv)
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("client Start: %v", err)
	}
	if _, err := c.Initialize(t.Context(), mcpgo.InitializeRequest{}); err != nil {
		t.Fatalf("client Initialize: %v", err)
	}
	h.client = c
	return h, tl
}

// hashed runs tool and returns its result and how many argon2id hashes it computed.
func hashed(h *harness, tl *tools, tool string, args map[string]any) (*mcpgo.CallToolResult, int64) {
	h.t.Helper()
	before := tl.hash.runs.Load()
	res := h.call(tool, args)
	return res, tl.hash.runs.Load() - before
}

func lockedMsg(seconds int) string {
	return fmt.Sprintf("too many failed password attempts: retry in %d s", seconds)
}

// wantLocked runs tool, which must be refused as locked for seconds without hashing.
func wantLocked(h *harness, tl *tools, seconds int, tool string, args map[string]any) {
	h.t.Helper()
	res, n := hashed(h, tl, tool, args)
	if got := resultText(h.t, res); !res.IsError || got != lockedMsg(seconds) || n != 0 {
		h.t.Errorf("%s while locked = isError %v %q, %d hashes; want %q and 0 hashes", tool, res.IsError, got, n, lockedMsg(seconds))
	}
}

// wantHashed runs tool, which must succeed (or fail, if !ok) with exactly n hashes.
func wantHashed(h *harness, tl *tools, ok bool, n int64, tool string, args map[string]any) {
	h.t.Helper()
	res, got := hashed(h, tl, tool, args)
	if res.IsError == ok || got != n {
		h.t.Errorf("%s = isError %v %q, %d hashes; want isError %v, %d hashes", tool, res.IsError, resultText(h.t, res), got, !ok, n)
	}
}

// TestThrottleLoginNoHashing: a locked account is refused without hashing,
// even for the right password; the lock expires after the backoff, which
// doubles with further failures, and a success forgets the failures.
func TestThrottleLoginNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		h, tl := newThrottleHarness(t, s)
		h.org("acme")
		h.user("acme", "umar")
		h.user("acme", "john")
		token := h.login("acme", "umar")
		login := func(user, pw string) map[string]any {
			return map[string]any{"org_id": "acme", "user_id": user, "password": pw}
		}
		fail := func(n int) {
			t.Helper()
			for i := range n {
				wantHashed(h, tl, false, 1, "login", login("umar", "wrong-password-"+strconv.Itoa(i)))
			}
		}
		change := map[string]any{"auth_token": token, "old_password": testUserPassword, "new_password": "another-password-1"}

		fail(accountFreeFailures)
		wantLocked(h, tl, 2, "login", login("umar", testUserPassword))
		wantLocked(h, tl, 2, "change_password", change)
		wantHashed(h, tl, true, 1, "login", login("john", testUserPassword)) // another user of the org
		h.clock.Advance(time.Second)
		wantLocked(h, tl, 1, "login", login("umar", testUserPassword))
		h.clock.Advance(time.Second)
		wantHashed(h, tl, true, 1, "login", login("umar", testUserPassword)) // the lock is over

		// The success cleared the failures: the free ones are free again.
		fail(accountFreeFailures - 1)
		wantHashed(h, tl, true, 1, "login", login("umar", testUserPassword))

		// Past the free failures each one doubles the wait.
		fail(accountFreeFailures)
		h.clock.Advance(2 * time.Second)
		fail(1)
		wantLocked(h, tl, 4, "login", login("umar", testUserPassword))
		h.clock.Advance(4 * time.Second)
		wantHashed(h, tl, true, 2, "change_password", change) // verify the old password, hash the new one
	})
}

// TestThrottleAdminNoHashing: a locked admin password is refused by every
// admin tool without hashing; other organizations are unaffected.
func TestThrottleAdminNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		h, tl := newThrottleHarness(t, s)
		h.org("acme")
		h.org("other")
		h.user("acme", "john")
		admin := func(org, pw string, extra ...string) map[string]any {
			a := map[string]any{"org_id": org, "admin_password": pw, "user_id": "john"}
			for i := 0; i+1 < len(extra); i += 2 {
				a[extra[i]] = extra[i+1]
			}
			return a
		}
		newUser := []string{"user_id", "eve", "name", "Eve", "password", testUserPassword, "ownership", "x"}

		for i := range accountFreeFailures {
			wantHashed(h, tl, false, 1, "register_user", admin("acme", "wrong-admin-"+strconv.Itoa(i), newUser...))
		}
		for tool, args := range map[string]map[string]any{
			"register_user":             admin("acme", testAdminPassword, newUser...),
			"update_user_profile_notes": admin("acme", testAdminPassword, "profile_notes", "notes"),
			"reset_user_password":       admin("acme", testAdminPassword, "new_password", "another-password-1"),
			"deactivate_user":           admin("acme", testAdminPassword),
			"reactivate_user":           admin("acme", testAdminPassword),
		} {
			wantLocked(h, tl, 2, tool, args)
		}
		wantHashed(h, tl, true, 2, "register_user", admin("other", testAdminPassword, newUser...))
		h.clock.Advance(2 * time.Second)
		wantHashed(h, tl, true, 2, "register_user", admin("acme", testAdminPassword, newUser...))
	})
}

// TestThrottleAddressNoHashing: failures spread over many accounts lock the
// address they came from, without hashing, and no other address.
func TestThrottleAddressNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		h, tl := newThrottleHarness(t, s)
		h.org("acme")
		h.user("acme", "john")
		guesser := WithClientAddr(t.Context(), "203.0.113.9")
		neighbour := WithClientAddr(t.Context(), "203.0.113.10")
		login := func(ctx context.Context, user, pw string) (int64, error) {
			before := tl.hash.runs.Load()
			_, err := tl.login(ctx, loginArgs{OrgID: "acme", UserID: user, Password: pw})
			return tl.hash.runs.Load() - before, err
		}

		for i := range addrFreeFailures {
			if n, err := login(guesser, "guess-"+strconv.Itoa(i), "wrong-password"); !errors.Is(err, errBadLogin) || n != 1 {
				t.Fatalf("failed login %d from one address = %v, %d hashes; want %v, 1 hash", i+1, err, n, errBadLogin)
			}
		}
		if n, err := login(guesser, "john", testUserPassword); err == nil || err.Error() != lockedMsg(2) || n != 0 {
			t.Errorf("login(john) from the locked address = %v, %d hashes; want %q, 0 hashes", err, n, lockedMsg(2))
		}
		if n, err := login(neighbour, "john", testUserPassword); err != nil || n != 1 {
			t.Errorf("login(john) from another address = %v, %d hashes; want success, 1 hash", err, n)
		}
		h.clock.Advance(2 * time.Second)
		if n, err := login(guesser, "john", testUserPassword); err != nil || n != 1 {
			t.Errorf("login(john) from the guessing address after its lock = %v, %d hashes; want success, 1 hash", err, n)
		}
	})
}

// TestThrottleConcurrentGuesses: guesses sent at once get no more hashes
// than guesses sent one after another: every attempt beyond the free
// failures is refused without hashing, however many are in flight.
func TestThrottleConcurrentGuesses(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		h, tl := newThrottleHarness(t, s)
		h.org("acme")
		h.user("acme", "john")
		const guesses = 4 * accountFreeFailures
		errs := make([]error, guesses)
		before := tl.hash.runs.Load()
		var wg sync.WaitGroup
		for i := range guesses {
			wg.Go(func() {
				_, errs[i] = tl.login(t.Context(), loginArgs{OrgID: "acme", UserID: "john", Password: "guess-" + strconv.Itoa(i)})
			})
		}
		wg.Wait()
		hashes := tl.hash.runs.Load() - before
		wrong, refused := 0, 0
		for i, err := range errs {
			switch {
			case errors.Is(err, errBadLogin):
				wrong++
			case err != nil && strings.HasPrefix(err.Error(), "too many failed password attempts"):
				refused++
			default:
				t.Errorf("concurrent wrong login %d = %v, want %v or a throttle refusal", i, err, errBadLogin)
			}
		}
		if hashes > accountFreeFailures {
			t.Errorf("%d concurrent wrong logins for one account ran %d password hashes (%d refused as throttled); want at most %d",
				guesses, hashes, refused, accountFreeFailures)
		}
		// Every wrong password that was checked is counted: concurrent
		// failures must not overwrite each other's count.
		var rows []db.Throttle
		if err := s.View(t.Context(), func(q db.Queries) (err error) {
			rows, err = q.GetThrottles(t.Context(), userKey("acme", "john"), "")
			return err
		}); err != nil || len(rows) != 1 {
			t.Fatalf("GetThrottles(acme/john) = %+v, %v; want one row", rows, err)
		}
		if rows[0].Failures != int64(wrong) {
			t.Errorf("after %d concurrent wrong passwords were checked, the account's failure count is %d, want %d", wrong, rows[0].Failures, wrong)
		}
		// However they were counted, the account has failed more than its
		// free failures: the right password must wait.
		if _, err := tl.login(t.Context(), loginArgs{OrgID: "acme", UserID: "john", Password: testUserPassword}); err == nil ||
			!strings.HasPrefix(err.Error(), "too many failed password attempts") {
			t.Errorf("login(right password) after %d concurrent failures = %v, want it refused as throttled", guesses, err)
		}
	})
}
