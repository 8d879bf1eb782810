// Package bench is `ctalk bench`, a load generator for a running relay. It
// registers throwaway organizations and users through MCP, logs everyone
// in, then drives the mix
// of calls a team's Claude Code sessions make (ask, check the inbox, draft
// and send an answer, check replies, whoami) and reports throughput,
// latency, errors, and whether any call saw another organization's data.
//
// It talks to the relay through relayclient, a lean client on plain
// net/http: on a small machine the load generator shares the CPU with the
// relay, and a lean client keeps the measurement about the relay.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/internal/relayclient"
)

// The tools of the mix, in report order.
var Tools = []string{"ask_person", "check_inbox", "propose_response", "send_response", "check_replies", "whoami"}

// benchUser is one logged-in person and what the mix remembers for them.
type benchUser struct {
	org   int
	id    string
	peers []string // the others in the organization
	conn  *relayclient.Client

	mu     sync.Mutex
	inbox  []int64 // unanswered questions seen by check_inbox
	cursor string  // check_replies cursor
}

// bench is one run's shared state.
type bench struct {
	cfg     Config
	run     string // random id: organization names and markers
	users   []*benchUser
	claimed sync.Map // benchClaim → struct{}: one answerer per question
	calls   atomic.Int64
	errs    atomic.Int64
	leaks   atomic.Int64
	mu      sync.Mutex
	leak    string // the first leak seen
}

type benchClaim struct {
	org int
	id  int64
}

// marker tags every text of organization i; a result of another
// organization's call that contains it is a leak.
func (b *bench) marker(i int) string { return fmt.Sprintf("bm%so%dx", b.run, i) }

// leakedOrg returns an organization other than own whose marker is in body, or -1.
func (b *bench) leakedOrg(body []byte, own int) int {
	prefix := []byte("bm" + b.run + "o")
	for rest := body; ; {
		i := bytes.Index(rest, prefix)
		if i < 0 {
			return -1
		}
		rest = rest[i+len(prefix):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j > 0 && j < len(rest) && rest[j] == 'x' {
			if n, _ := strconv.Atoi(string(rest[:j])); n != own {
				return n
			}
		}
	}
}

// Run registers the organizations and users, drives the mix for
// cfg.Duration and reports.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	var rb [4]byte
	rand.Read(rb[:])
	b := &bench{cfg: cfg, run: hex.EncodeToString(rb[:])}
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		MaxIdleConns: cfg.Concurrency + 16, MaxIdleConnsPerHost: cfg.Concurrency + 16, IdleConnTimeout: time.Minute,
	}}
	defer hc.CloseIdleConnections()
	start := time.Now()
	b.logf("bench: registering %d organizations × %d users and logging them in (password hashing is deliberately slow)",
		cfg.Orgs, cfg.Users)
	if err := b.setup(ctx, hc); err != nil {
		return nil, err
	}
	b.logf("bench: %d users ready in %s; driving the mix with %d clients for %s",
		len(b.users), time.Since(start).Round(100*time.Millisecond), cfg.Concurrency, cfg.Duration)
	return b.drive(ctx), nil
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.Progress != nil {
		fmt.Fprintf(b.cfg.Progress, format+"\n", args...)
	}
}

// setup registers the organizations and users and logs everyone in, a few at a time.
func (b *bench) setup(ctx context.Context, hc *http.Client) error {
	admin, password := "bench-admin-"+b.run+"-pw", "bench-user-"+b.run
	anon, err := b.connect(ctx, hc, "")
	if err != nil {
		return err
	}
	ids := make([]string, b.cfg.Users)
	for i := range ids {
		ids[i] = "u" + strconv.Itoa(i+1) // the same ids in every organization
	}
	orgID := func(i int) string { return "bench-" + b.run + "-" + strconv.Itoa(i) }
	parallel := min(b.cfg.Concurrency, 4)
	err = forEach(ctx, b.cfg.Orgs, parallel, func(i int) error {
		return retry(ctx, func() error {
			return anon.Call(ctx, "register_organization", map[string]any{
				"org_id": orgID(i), "name": "Bench org " + b.marker(i), "admin_password": admin}, nil)
		})
	})
	if err != nil {
		return err
	}
	b.users = make([]*benchUser, 0, b.cfg.Orgs*b.cfg.Users)
	for o := range b.cfg.Orgs {
		for i, id := range ids {
			peers := append(append([]string{}, ids[:i]...), ids[i+1:]...)
			b.users = append(b.users, &benchUser{org: o, id: id, peers: peers})
		}
	}
	return forEach(ctx, len(b.users), parallel, func(i int) error {
		u := b.users[i]
		m := b.marker(u.org)
		err := retry(ctx, func() error {
			return anon.Call(ctx, "register_user", map[string]any{
				"org_id": orgID(u.org), "admin_password": admin, "user_id": u.id, "name": "Bench " + u.id + " " + m,
				"password": password, "ownership": "area " + u.id + " of " + m, "notes": "notes of " + m,
			}, nil)
		})
		if err != nil {
			return err
		}
		var login relayclient.LoginResult
		err = retry(ctx, func() (err error) {
			login, err = anon.Login(ctx, orgID(u.org), u.id, password)
			return err
		})
		if err != nil {
			return err
		}
		u.conn, err = b.connect(ctx, hc, login.AuthToken)
		return err
	})
}

// setupTries bounds how often setup retries one call the relay throttled.
const setupTries = 10

// retry runs call again, after the delay the relay asks for, while the
// relay refuses it as busy or too fast. The relay checks one password per
// client address at a time, and every setup call checks or hashes one, so
// parallel setup from one machine meets these refusals by design.
func retry(ctx context.Context, call func() error) error {
	for try := 1; ; try++ {
		err := call()
		var te *relayclient.ToolError
		if err == nil || try == setupTries || !errors.As(err, &te) {
			return err
		}
		wait, ok := te.RetryAfter()
		if !ok {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

// connect opens a session with the relay as the owner of token ("" for none).
func (b *bench) connect(ctx context.Context, hc *http.Client, token string) (*relayclient.Client, error) {
	return relayclient.Connect(ctx, b.cfg.Endpoint, relayclient.Options{
		HTTPClient: hc, Token: relayclient.Static(token), Name: "ctalk-bench", Version: b.cfg.Version})
}

// forEach runs fn(0..n-1) on up to parallel goroutines and returns the first error.
func forEach(ctx context.Context, n, parallel int, fn func(i int) error) error {
	var next atomic.Int64
	errc := make(chan error, parallel)
	for range parallel {
		go func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					next.Store(int64(n)) // stop the others
					errc <- err
					return
				}
			}
			errc <- ctx.Err()
		}()
	}
	var first error
	for range parallel {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// drive runs the mix on cfg.Concurrency workers for cfg.Duration. Calls in
// flight at the end complete and count.
func (b *bench) drive(ctx context.Context) *Report {
	stop := make(chan struct{})
	perWorker := make([]map[string]*toolStats, b.cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range b.cfg.Concurrency {
		perWorker[w] = map[string]*toolStats{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.worker(ctx, w, stop, perWorker[w])
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timer := time.NewTimer(b.cfg.Duration)
	defer timer.Stop()
	var last int64
	for running := true; running; {
		select {
		case <-tick.C:
			n := b.calls.Load()
			b.logf("bench: %3.0fs  %8d calls  %6d/s  errors %d  leaks %d",
				time.Since(start).Seconds(), n, n-last, b.errs.Load(), b.leaks.Load())
			last = n
		case <-timer.C:
			close(stop)
			running = false
		case <-ctx.Done():
			close(stop)
			running = false
		}
	}
	<-done
	rep := &Report{Elapsed: time.Since(start), Tools: map[string]*toolStats{}, Leaks: b.leaks.Load(), LeakSample: b.leak}
	for _, m := range perWorker {
		for name, s := range m {
			rep.tool(name).merge(s)
		}
	}
	return rep
}

// worker plays the users w, w+C, w+2C, … in turn.
func (b *bench) worker(ctx context.Context, w int, stop <-chan struct{}, stats map[string]*toolStats) {
	rng := mrand.New(mrand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	for turn := 0; ; turn++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		n := len(b.users)
		u := b.users[(w+turn*b.cfg.Concurrency)%n]
		if b.cfg.Concurrency >= n {
			u = b.users[w%n]
		}
		switch r := rng.IntN(100); {
		case r < 25:
			b.ask(ctx, u, rng, stats)
		case r < 50:
			b.checkInbox(ctx, u, stats)
		case r < 65:
			b.answer(ctx, u, stats)
		case r < 85:
			b.checkReplies(ctx, u, stats)
		default:
			b.call(ctx, u, "whoami", map[string]any{}, stats)
		}
	}
}

// call runs one tool call as u, timing it and checking its result for leaks.
func (b *bench) call(ctx context.Context, u *benchUser, tool string, args map[string]any, stats map[string]*toolStats) *relayclient.Result {
	t0 := time.Now()
	res, err := u.conn.CallTool(ctx, tool, args)
	d := time.Since(t0)
	if ctx.Err() != nil {
		return nil // interrupted: neither a result nor an error of the relay's
	}
	s := stats[tool]
	if s == nil {
		s = &toolStats{}
		stats[tool] = s
	}
	s.Calls++
	s.hist.add(d)
	b.calls.Add(1)
	if err == nil && res.IsError {
		err = errors.New(res.Text)
	}
	if res != nil {
		if o := b.leakedOrg(res.Raw, u.org); o >= 0 {
			b.leaks.Add(1)
			b.mu.Lock()
			if b.leak == "" {
				b.leak = fmt.Sprintf("%s by %s of organization %d returned data of organization %d", tool, u.id, u.org, o)
			}
			b.mu.Unlock()
		}
	}
	if err != nil {
		s.Errors++
		b.errs.Add(1)
		s.sample(err.Error(), 1)
		return nil
	}
	return res
}

func (b *bench) ask(ctx context.Context, u *benchUser, rng *mrand.Rand, stats map[string]*toolStats) {
	to := u.peers[rng.IntN(len(u.peers))]
	b.call(ctx, u, "ask_person", map[string]any{"to_user_id": to,
		"question": fmt.Sprintf("How does area %s handle retries? (%d, %s)", to, rng.Int32(), b.marker(u.org))}, stats)
}

func (b *bench) checkInbox(ctx context.Context, u *benchUser, stats map[string]*toolStats) {
	res := b.call(ctx, u, "check_inbox", map[string]any{}, stats)
	var inbox struct {
		Questions []struct {
			MessageID int64 `json:"message_id"`
		} `json:"questions"`
	}
	if res == nil || json.Unmarshal(res.Structured, &inbox) != nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.inbox = u.inbox[:0]
	for _, q := range inbox.Questions {
		u.inbox = append(u.inbox, q.MessageID)
	}
}

// answer drafts and sends the answer to a question in u's inbox that no
// other worker has claimed, checking the inbox first when it knows of none.
func (b *bench) answer(ctx context.Context, u *benchUser, stats map[string]*toolStats) {
	id := b.claim(u)
	if id == 0 {
		b.checkInbox(ctx, u, stats)
		if id = b.claim(u); id == 0 {
			return
		}
	}
	text := fmt.Sprintf("Three attempts with backoff, says %s. (%s)", u.id, b.marker(u.org))
	args := map[string]any{"message_id": id, "draft_text": text}
	if b.call(ctx, u, "propose_response", args, stats) != nil {
		b.call(ctx, u, "send_response", map[string]any{"message_id": id, "final_text": text}, stats)
	}
}

// claim takes a question from u's known inbox for this worker alone, or returns 0.
func (b *bench) claim(u *benchUser) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.inbox) > 0 {
		id := u.inbox[0]
		u.inbox = u.inbox[1:]
		if _, taken := b.claimed.LoadOrStore(benchClaim{u.org, id}, struct{}{}); !taken {
			return id
		}
	}
	return 0
}

func (b *bench) checkReplies(ctx context.Context, u *benchUser, stats map[string]*toolStats) {
	u.mu.Lock()
	args := map[string]any{"cursor": u.cursor}
	u.mu.Unlock()
	res := b.call(ctx, u, "check_replies", args, stats)
	var out struct {
		Cursor string `json:"cursor"`
	}
	if res != nil && json.Unmarshal(res.Structured, &out) == nil {
		u.mu.Lock()
		u.cursor = out.Cursor
		u.mu.Unlock()
	}
}
