package server_test

// A legitimate login during password floods: a registration flood from one
// address, and a wrong-login flood from an untrusted peer that rotates its
// X-Forwarded-For. The normal run asserts the login still works; with
// CTALK_HOSTILE_MEASURE=1 it measures its median latency against its quiet
// median in the same run (see BENCHMARKS.md, "Under hostile traffic").

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
)

// untrustedPeer is a loopback address the test server does not trust as a
// proxy (serve trusts 127.0.0.1 and ::1): its X-Forwarded-For is ignored.
const untrustedPeer = "127.0.0.2"

// rotatingForwardedFor sends every request from untrustedPeer with a new
// random X-Forwarded-For, as an attacker on the host would.
type rotatingForwardedFor struct{ base *http.Transport }

func newRotatingForwardedFor() rotatingForwardedFor {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(untrustedPeer)}}
	return rotatingForwardedFor{&http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 256}}
}

func (r rotatingForwardedFor) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", rand.IntN(256), rand.IntN(256), rand.IntN(256)))
	return r.base.RoundTrip(req)
}

// floodTally counts a flood's results by kind.
type floodTally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *floodTally) add(res *sdk.CallToolResult) {
	kind := "ok"
	switch msg := resultText(res); {
	case !res.IsError:
	case strings.Contains(msg, "busy") || strings.Contains(msg, "already checking"):
		kind = "busy"
	case strings.Contains(msg, "retry in"):
		kind = "throttled"
	case strings.HasPrefix(msg, "protocol error"):
		kind = "protocol error"
	case strings.Contains(msg, "internal error"):
		kind = "internal error"
	default:
		kind = "refused"
	}
	f.mu.Lock()
	f.counts[kind]++
	f.mu.Unlock()
}

// floodCalls numbers flood calls across floods, so each names a new organization.
var floodCalls atomic.Int64

// startFlood runs width callers of call, each calling again as soon as it
// has an answer, until stop; stop lets the calls in flight finish (a call
// cut off is another matter, logged as such) and tallies the results.
func startFlood(width int, call func(ctx context.Context, i int) *sdk.CallToolResult) (stop func() map[string]int) {
	var stopped atomic.Bool
	tally := &floodTally{counts: map[string]int{}}
	var wg sync.WaitGroup
	for range width {
		wg.Go(func() {
			for !stopped.Load() {
				tally.add(call(context.Background(), int(floodCalls.Add(1))))
			}
		})
	}
	return func() map[string]int {
		stopped.Store(true)
		wg.Wait()
		return tally.counts
	}
}

// timeLogins logs in at least n times in a row and for at least span,
// failing the test on any failure, and returns the latencies.
func timeLogins(t *testing.T, cs *sdk.ClientSession, n int, span time.Duration) []time.Duration {
	t.Helper()
	ds := make([]time.Duration, 0, n)
	for end := time.Now().Add(span); len(ds) < n || time.Now().Before(end); {
		start := time.Now()
		loginWith(t, cs, "acme", "legit", userPassword)
		ds = append(ds, time.Since(start))
	}
	return ds
}

// TestLoginDuringPasswordFloods: during a register_organization flood from
// one address and a wrong-login flood from an untrusted peer rotating its
// X-Forwarded-For, a legitimate login from another address still succeeds,
// no call fails with an internal error, and nothing is logged at ERROR.
// Both backends.
func TestLoginDuringPasswordFloods(t *testing.T) {
	if _, err := net.Listen("tcp", untrustedPeer+":0"); err != nil {
		t.Skipf("cannot use %s as a second loopback address: %v", untrustedPeer, err)
	}
	measure := os.Getenv("CTALK_HOSTILE_MEASURE") == "1"
	width, logins, rounds, span := 20, 3, 1, time.Duration(0)
	if measure {
		// Each flooded span covers a few of the flood's 2 s cycles (its
		// waiting calls come back busy together).
		width, logins, rounds, span = 200, 7, 3, 5*time.Second
	}
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		floodLogins(t, s, width, logins, rounds, span, measure)
	})
}

func floodLogins(t *testing.T, s db.Store, width, logins, rounds int, span time.Duration, measure bool) {
	e := &env{logs: &testkit.SyncBuffer{}}
	e.logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Two hash slots: the production default.
	e.url = serve(t, s, mcp.Options{Version: "e2e", Logger: e.logger, HashConcurrency: 2}, e.logger)

	legit := dial(t, e.url, "", forwardedFor("198.51.100.10"), nil)
	registerOrg(t, legit, "acme", "Acme")
	registerUser(t, legit, "acme", "legit", "Legit", "legit-repo")
	registerUser(t, legit, "acme", "victim", "Victim", "victim-repo")

	registrar := dial(t, e.url, "", forwardedFor("203.0.113.66"), nil)
	guesser := &sdk.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: newRotatingForwardedFor()}, MaxRetries: -1}
	gs, err := sdk.NewClient(&sdk.Implementation{Name: "flood", Version: "0"}, nil).Connect(t.Context(), guesser, nil)
	if err != nil {
		t.Fatalf("connect from %s: %v", untrustedPeer, err)
	}
	defer gs.Close()
	floods := []struct {
		name string
		call func(ctx context.Context, i int) *sdk.CallToolResult
	}{
		{"registration", func(ctx context.Context, i int) *sdk.CallToolResult {
			return tryCall(ctx, registrar, "register_organization",
				args{"org_id": fmt.Sprintf("flood-%d", i), "name": "Flood", "admin_password": adminPassword})
		}},
		{"wrong-login", func(ctx context.Context, i int) *sdk.CallToolResult {
			return tryCall(ctx, gs, "login", args{"org_id": "acme", "user_id": "victim", "password": fmt.Sprintf("guess-%d", i)})
		}},
	}
	// Quiet and flooded logins alternate, so the other load on the machine
	// weighs on both alike.
	var quiet []time.Duration
	flooded := map[string][]time.Duration{}
	counts := map[string]map[string]int{}
	for range rounds {
		for _, fl := range floods {
			quiet = append(quiet, timeLogins(t, legit, logins, span)...)
			stop := startFlood(width, fl.call)
			time.Sleep(200 * time.Millisecond) // let the flood fill the queue
			flooded[fl.name] = append(flooded[fl.name], timeLogins(t, legit, logins, span)...)
			if counts[fl.name] == nil {
				counts[fl.name] = map[string]int{}
			}
			for k, n := range stop() {
				counts[fl.name][k] += n
			}
		}
	}
	regCounts, guessCounts := counts["registration"], counts["wrong-login"]
	t.Logf("registration flood (%d-way, one address): %v", width, regCounts)
	t.Logf("wrong-login flood (%d-way, %s rotating X-Forwarded-For): %v", width, untrustedPeer, guessCounts)
	for name, counts := range map[string]map[string]int{"registration": regCounts, "wrong-login": guessCounts} {
		if counts["internal error"] > 0 {
			t.Errorf("%s flood: %d internal errors", name, counts["internal error"])
		}
	}
	// The budgets: 10 registrations per address, 5 failures per account and
	// 20 per address, each then one more per expired backoff (2 s, 4 s, ...):
	// far below the flood's hundreds, which rotating addresses would get.
	if counts := regCounts["ok"]; counts > 15 {
		t.Errorf("registration flood from one address registered %d organizations, want about its budget of 10", counts)
	}
	if counts := guessCounts["refused"]; counts > 20 {
		t.Errorf("rotating X-Forwarded-For from an untrusted peer got %d guesses checked, want at most the 20 free", counts)
	}
	if strings.Contains(e.logs.String(), "level=ERROR") {
		t.Errorf("the server logged an ERROR during the floods:\n%s", e.logs.String())
	}
	if measure {
		med := func(ds []time.Duration) time.Duration {
			slices.Sort(ds)
			return ds[len(ds)/2]
		}
		q := med(quiet)
		t.Logf("%s: legitimate login, median of %d: quiet %v; during the registration flood %v (%.1f×); during the wrong-login flood %v (%.1f×)",
			s.Backend(), len(quiet), q.Round(time.Millisecond),
			med(flooded["registration"]).Round(time.Millisecond), float64(med(flooded["registration"]))/float64(q),
			med(flooded["wrong-login"]).Round(time.Millisecond), float64(med(flooded["wrong-login"]))/float64(q))
	}
}
