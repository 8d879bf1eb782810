// Command driver is the client side of test/replicas/run.sh: it talks to
// ctalk replicas (through HAProxy, or to one replica directly) with the
// project's relay client and fails, exiting non-zero, when what it checks
// does not hold. run.sh starts and stops the processes; the driver only
// calls tools.
//
//	driver tools -url URL
//	    every tool through the balancer; HAProxy's X-Served-By header shows
//	    that every replica served some of them
//	driver wake -ask URL -wait URL -events N -pairs P [-max-p99 D]
//	    a question asked on one replica wakes a wait_for_messages held on
//	    another: latency from the ask's start to the waiter's result
//	driver load -url URL [-workers W] [-duration D] [-retry-after P]
//	    ask_person from W clients (each failed call retried once, after P) until D
//	    passes or SIGTERM; then every acknowledged question must be
//	    readable, and no call may have failed twice
//
// Each subcommand prints one line starting with "RESULT" for run.sh.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ctalk/ctalk/internal/relayclient"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: driver tools|wake|load [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "tools":
		err = tools(ctx, args)
	case "wake":
		err = wake(ctx, args)
	case "load":
		err = load(ctx, args)
	default:
		err = fmt.Errorf("unknown subcommand %q: use tools, wake or load", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

// servedBy counts HAProxy's X-Served-By response header per server.
type servedBy struct {
	mu   sync.Mutex
	seen map[string]int
	next http.RoundTripper
}

func (s *servedBy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil {
		if name := resp.Header.Get("X-Served-By"); name != "" {
			s.mu.Lock()
			s.seen[name]++
			s.mu.Unlock()
		}
	}
	return resp, err
}

func httpClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &http.Client{Timeout: 90 * time.Second, Transport: rt}
}

func connect(ctx context.Context, url, token string, hc *http.Client) (*relayclient.Client, error) {
	return relayclient.Connect(ctx, url, relayclient.Options{HTTPClient: hc, Token: relayclient.Static(token), Name: "replicas-driver"})
}

// retry repeats a call the relay refused as too fast (password checks are
// throttled per client address), after the delay it asks for.
func retry(ctx context.Context, call func() error) error {
	for try := 1; ; try++ {
		err := call()
		var te *relayclient.ToolError
		if err == nil || try == 20 || !errors.As(err, &te) {
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

// org is a registered organization with logged-in users.
type org struct {
	id, admin string
	tokens    map[string]string
}

const userPassword = "replica-user-password-1"

// newOrg registers an organization and users through anon and logs each in.
func newOrg(ctx context.Context, anon *relayclient.Client, prefix string, users ...string) (*org, error) {
	o := &org{id: prefix + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36), admin: "replica-admin-password-1",
		tokens: map[string]string{}}
	err := retry(ctx, func() error {
		return anon.Call(ctx, "register_organization", map[string]any{"org_id": o.id, "name": "Replicas " + o.id, "admin_password": o.admin}, nil)
	})
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		err := retry(ctx, func() error {
			return anon.Call(ctx, "register_user", map[string]any{"org_id": o.id, "admin_password": o.admin, "user_id": u,
				"name": "User " + u, "password": userPassword, "ownership": "the " + u + " service"}, nil)
		})
		if err != nil {
			return nil, err
		}
		var login relayclient.LoginResult
		err = retry(ctx, func() (err error) {
			login, err = anon.Login(ctx, o.id, u, userPassword)
			return err
		})
		if err != nil {
			return nil, err
		}
		o.tokens[u] = login.AuthToken
	}
	return o, nil
}

// tools calls every tool through the balancer.
func tools(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tools", flag.ExitOnError)
	url := fs.String("url", "", "the balancer's MCP URL")
	want := fs.Int("replicas", 3, "replicas that must each serve some calls")
	fs.Parse(args)
	sb := &servedBy{seen: map[string]int{}, next: http.DefaultTransport}
	hc := httpClient(sb)
	anon, err := connect(ctx, *url, "", hc)
	if err != nil {
		return err
	}
	o, err := newOrg(ctx, anon, "tools", "ann", "bob", "cat")
	if err != nil {
		return err
	}
	as := map[string]*relayclient.Client{}
	for u, tok := range o.tokens {
		if as[u], err = connect(ctx, *url, tok, hc); err != nil {
			return err
		}
	}
	called := map[string]bool{}
	call := func(c *relayclient.Client, tool string, a map[string]any, out any) error {
		called[tool] = true
		if err := retry(ctx, func() error { return c.Call(ctx, tool, a, out) }); err != nil {
			return fmt.Errorf("%s through the balancer: %w", tool, err)
		}
		return nil
	}
	called["register_organization"], called["register_user"], called["login"] = true, true, true
	admin := func(extra map[string]any) map[string]any {
		m := map[string]any{"org_id": o.id, "admin_password": o.admin}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	var ask relayclient.WaitResult
	var asked struct {
		MessageID int64 `json:"message_id"`
	}
	steps := []func() error{
		func() error { return call(as["ann"], "whoami", nil, nil) },
		func() error { return call(as["ann"], "list_users", nil, nil) },
		func() error { return call(as["ann"], "get_user_profile", map[string]any{"user_id": "bob"}, nil) },
		func() error {
			return call(as["bob"], "update_my_notes", map[string]any{"notes": "I know the billing retry logic"}, nil)
		},
		func() error {
			return call(anon, "update_user_profile_notes", admin(map[string]any{"user_id": "bob", "profile_notes": "billing"}), nil)
		},
		func() error { return call(as["ann"], "find_owner", map[string]any{"topic": "billing retry"}, nil) },
		func() error {
			return call(as["ann"], "ask_person", map[string]any{"to_user_id": "bob", "question": "How do billing retries work?"}, &asked)
		},
		func() error {
			return call(as["bob"], "wait_for_messages", map[string]any{"cursor": "", "timeout_seconds": 5}, &ask)
		},
		func() error { return call(as["bob"], "check_inbox", nil, nil) },
		func() error {
			return call(as["bob"], "propose_response", map[string]any{"message_id": asked.MessageID, "draft_text": "Three tries, backoff.", "share": true}, nil)
		},
		func() error {
			return call(as["bob"], "send_response", map[string]any{"message_id": asked.MessageID, "final_text": "Three tries, backoff.", "share": true}, nil)
		},
		func() error { return call(as["ann"], "check_replies", nil, nil) },
		func() error { return call(as["ann"], "get_thread", map[string]any{"message_id": asked.MessageID}, nil) },
		func() error {
			return call(as["ann"], "search_answers", map[string]any{"query": "billing retries"}, nil)
		},
		func() error {
			// A public address literal (no DNS here); turned off again two
			// steps on, before anyone asks ann, so nothing is ever sent.
			return call(as["ann"], "notification_settings", map[string]any{"channel": "webhook",
				"address": "https://93.184.216.34/ctalk-replicas", "on_questions": true}, nil)
		},
		func() error { return call(as["ann"], "notification_settings", nil, nil) },
		func() error { return call(as["ann"], "notification_settings", map[string]any{"channel": "none"}, nil) },
		func() error { return call(as["ann"], "list_connected_clients", nil, nil) },
		func() error {
			// No OAuth client is connected: an unknown id is refused with a
			// message, which is the tool answering.
			called["revoke_connected_client"] = true
			res, err := as["ann"].CallTool(ctx, "revoke_connected_client", map[string]any{"id": "no-such-connection"})
			if err != nil {
				return fmt.Errorf("revoke_connected_client through the balancer: %w", err)
			}
			if !res.IsError || res.Text == "" {
				return fmt.Errorf("revoke_connected_client of an unknown id: want a refusal, got %s", res.Text)
			}
			return nil
		},
		func() error {
			return call(as["cat"], "change_password", map[string]any{"old_password": userPassword, "new_password": "replica-user-password-2"}, nil)
		},
		func() error {
			return call(anon, "reset_user_password", admin(map[string]any{"user_id": "cat", "new_password": "replica-user-password-3"}), nil)
		},
		func() error { return call(anon, "deactivate_user", admin(map[string]any{"user_id": "cat"}), nil) },
		func() error { return call(anon, "reactivate_user", admin(map[string]any{"user_id": "cat"}), nil) },
		func() error { return call(as["ann"], "logout", nil, nil) },
		func() error {
			return call(anon, "delete_organization", admin(map[string]any{"confirm_org_id": o.id}), nil)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if len(ask.Events) == 0 || ask.Events[0].MessageID != asked.MessageID {
		return fmt.Errorf("wait_for_messages did not return the question asked (message %d): %+v", asked.MessageID, ask)
	}
	list, err := anon.ListTools(ctx)
	if err != nil {
		return err
	}
	if len(called) != len(list) {
		return fmt.Errorf("called %d tools, the relay lists %d: add the missing ones to the driver", len(called), len(list))
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.seen) < *want {
		return fmt.Errorf("only %d replicas served calls (%v); want %d: is HAProxy balancing round-robin?", len(sb.seen), sb.seen, *want)
	}
	fmt.Printf("RESULT tools=%d ok; calls per replica %v\n", len(called), sb.seen)
	return nil
}

// wake measures cross-replica wake-ups: P pairs of users, each pair's asker
// on one replica and waiter on another, N events in all.
func wake(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("wake", flag.ExitOnError)
	askURL := fs.String("ask", "", "MCP URL of the replica that asks")
	waitURL := fs.String("wait", "", "MCP URL of the replica that waits")
	events := fs.Int("events", 100, "events to measure")
	pairs := fs.Int("pairs", 10, "asker/waiter pairs running at once")
	maxP99 := fs.Duration("max-p99", 0, "fail when p99 exceeds this (0: report only)")
	jitter := fs.Duration("jitter", 0, "wait a random time up to this before each ask, so asks do not line up with a poll")
	label := fs.String("label", "", "label of the RESULT line")
	fs.Parse(args)
	hc := httpClient(nil)
	anon, err := connect(ctx, *askURL, "", hc)
	if err != nil {
		return err
	}
	var users []string
	for i := range *pairs {
		users = append(users, "a"+strconv.Itoa(i), "w"+strconv.Itoa(i))
	}
	o, err := newOrg(ctx, anon, "wake", users...)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var lat []time.Duration
	per := (*events + *pairs - 1) / *pairs
	errc := make(chan error, *pairs)
	for i := range *pairs {
		go func() { errc <- wakePair(ctx, o, i, per, *askURL, *waitURL, *jitter, hc, &mu, &lat) }()
	}
	for range *pairs {
		if err := <-errc; err != nil {
			return err
		}
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	fmt.Printf("RESULT wake%s events=%d p50=%s p99=%s max=%s\n", *label, len(lat),
		p(0.50).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	if *maxP99 > 0 && p(0.99) > *maxP99 {
		return fmt.Errorf("cross-replica wake-up p99 %s exceeds %s", p(0.99), *maxP99)
	}
	return nil
}

func wakePair(ctx context.Context, o *org, i, n int, askURL, waitURL string, jitter time.Duration, hc *http.Client, mu *sync.Mutex, lat *[]time.Duration) error {
	asker, err := connect(ctx, askURL, o.tokens["a"+strconv.Itoa(i)], hc)
	if err != nil {
		return err
	}
	waiter, err := connect(ctx, waitURL, o.tokens["w"+strconv.Itoa(i)], hc)
	if err != nil {
		return err
	}
	cursor := "latest"
	// Spread the pairs over time so their asks do not land together.
	time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
	for range n {
		type waited struct {
			res relayclient.WaitResult
			at  time.Time
			err error
		}
		done := make(chan waited, 1)
		go func() {
			res, err := waiter.WaitForMessages(ctx, cursor, 30)
			done <- waited{res, time.Now(), err}
		}()
		// Let the wait reach its replica and park before the question.
		time.Sleep(150 * time.Millisecond)
		if jitter > 0 {
			time.Sleep(rand.N(jitter))
		}
		start := time.Now()
		var asked struct {
			MessageID int64 `json:"message_id"`
		}
		if err := asker.Call(ctx, "ask_person", map[string]any{"to_user_id": "w" + strconv.Itoa(i), "question": "wake-up probe"}, &asked); err != nil {
			return err
		}
		w := <-done
		if w.err != nil {
			return w.err
		}
		if len(w.res.Events) == 0 || w.res.Events[len(w.res.Events)-1].MessageID != asked.MessageID {
			return fmt.Errorf("pair %d: the wait returned %+v, not question %d", i, w.res, asked.MessageID)
		}
		cursor = w.res.Cursor
		mu.Lock()
		*lat = append(*lat, w.at.Sub(start))
		mu.Unlock()
	}
	return nil
}

// load asks questions from several clients until -duration passes or
// SIGTERM, retrying each failed call once, then checks that every
// acknowledged question can be read back.
func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	url := fs.String("url", "", "the balancer's MCP URL")
	workers := fs.Int("workers", 6, "clients asking at once")
	duration := fs.Duration("duration", time.Minute, "longest run; SIGTERM ends it sooner")
	pause := fs.Duration("retry-after", time.Second, "pause before the one retry of a failed call")
	label := fs.String("label", "", "label of the RESULT line")
	fs.Parse(args)
	// Set up before the signal can end the run: its context is separate.
	setup := context.WithoutCancel(ctx)
	hc := httpClient(nil)
	anon, err := connect(setup, *url, "", hc)
	if err != nil {
		return err
	}
	users := []string{"reader"}
	for i := range *workers {
		users = append(users, "w"+strconv.Itoa(i))
	}
	o, err := newOrg(setup, anon, "load", users...)
	if err != nil {
		return err
	}
	fmt.Println("load: asking") // run.sh waits for this line
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	var (
		mu             sync.Mutex
		acked          []int64
		calls, retried atomic.Int64
		failed         atomic.Int64
		firstFail      atomic.Value
	)
	var wg sync.WaitGroup
	for i := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := connect(setup, *url, o.tokens["w"+strconv.Itoa(i)], hc)
			if err != nil {
				failed.Add(1)
				firstFail.CompareAndSwap(nil, err.Error())
				return
			}
			for n := 0; runCtx.Err() == nil; n++ {
				var asked struct {
					MessageID int64 `json:"message_id"`
				}
				a := map[string]any{"to_user_id": "reader", "question": fmt.Sprintf("load %d/%d", i, n)}
				// A call once started completes: the end of the run must
				// not turn into failed calls.
				callCtx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), 30*time.Second)
				calls.Add(1)
				err := c.Call(callCtx, "ask_person", a, &asked)
				if err != nil {
					// Once, after a pause: by then HAProxy's health check
					// has taken a dead replica out, and the connections it
					// held to it are known closed.
					retried.Add(1)
					time.Sleep(*pause)
					err = c.Call(callCtx, "ask_person", a, &asked)
				}
				cancel()
				if err != nil {
					failed.Add(1)
					firstFail.CompareAndSwap(nil, err.Error())
					continue
				}
				mu.Lock()
				acked = append(acked, asked.MessageID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Every acknowledged question is in the reader's inbox, through the balancer.
	reader, err := connect(setup, *url, o.tokens["reader"], hc)
	if err != nil {
		return err
	}
	seen := map[int64]bool{}
	for after := int64(0); ; {
		var inbox struct {
			Questions []struct {
				MessageID int64 `json:"message_id"`
			} `json:"questions"`
		}
		if err := reader.Call(setup, "check_inbox", map[string]any{"after_message_id": after}, &inbox); err != nil {
			return err
		}
		if len(inbox.Questions) == 0 {
			break
		}
		for _, m := range inbox.Questions {
			seen[m.MessageID] = true
			after = max(after, m.MessageID)
		}
	}
	lost := 0
	for _, id := range acked {
		if !seen[id] {
			lost++
		}
	}
	fmt.Printf("RESULT load%s calls=%d acknowledged=%d retried=%d failed_after_retry=%d lost=%d\n",
		*label, calls.Load(), len(acked), retried.Load(), failed.Load(), lost)
	switch {
	case lost > 0:
		return fmt.Errorf("%d acknowledged questions are not readable afterwards", lost)
	case failed.Load() > 0:
		return fmt.Errorf("%d calls failed even when retried once; first: %v", failed.Load(), firstFail.Load())
	case len(acked) == 0:
		return errors.New("no question was acknowledged")
	}
	return nil
}
