package main

// Issue 15's "connected agents at scale", measured: the real `ctalk serve`
// holding N open wait_for_messages calls, against a minimal net/http long
// poll (the floor) holding the same N connections from the same client in
// the same run, each server in its own process so that RSS is per server.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// waitsProtocol is the stateless protocol generation: each wait stands
// alone, as from a client behind a load balancer, and leaves no session.
const waitsProtocol = "2026-07-28"

// waitsMetricsToken serves /metrics on the relay's port in this benchmark.
const waitsMetricsToken = "waits-benchmark-metrics-token"

// floorEnv makes this test binary the floor server (TestWaitFloorServer).
const floorEnv = "CTALK_WAIT_FLOOR_ADDR"

// waitBody is the JSON-RPC body of a wait_for_messages call, the same bytes
// to ctalk and to the floor.
func waitBody(cursor string, timeout int) []byte {
	args := map[string]any{"timeout_seconds": timeout}
	if cursor != "" {
		args["cursor"] = cursor
	}
	return toolBody("wait_for_messages", args)
}

func toolBody(tool string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    waitsProtocol,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ctalk-waits-benchmark", "version": "0"},
		}},
	})
	return b
}

// waitsClient dials from several loopback source addresses, since the relay
// admits only so many requests from one address (DefaultMaxRequestsPerAddress).
type waitsClient struct {
	clients []*http.Client
}

func newWaitsClient(n int) *waitsClient {
	addrs := n/250 + 2
	c := &waitsClient{}
	for i := range addrs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(i/250), byte(2+i%250))}, Timeout: 30 * time.Second}
		c.clients = append(c.clients, &http.Client{Transport: &http.Transport{
			DialContext: d.DialContext, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
		}})
	}
	return c
}

func (c *waitsClient) closeIdle() {
	for _, hc := range c.clients {
		hc.CloseIdleConnections()
	}
}

// call posts body as user i (token tok, "" for none) and returns the
// JSON-RPC result's structured content, or the tool's error text as an
// error. written, if not nil, is called once the request is on the wire.
func (c *waitsClient) call(ctx context.Context, i int, url, tok, tool string, body []byte, written func()) (json.RawMessage, error) {
	if written != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { written() }})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", waitsProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.clients[i%len(c.clients)].Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				last = append([]byte(nil), bytes.TrimSpace(d)...)
			}
		}
		raw = last
	}
	var msg struct {
		Result *struct {
			IsError           bool `json:"isError"`
			Content           []struct{ Text string }
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, fmt.Errorf("decode %q: %w", raw, err)
	}
	switch {
	case msg.Error != nil:
		return nil, errors.New(msg.Error.Message)
	case msg.Result == nil:
		return nil, fmt.Errorf("no result: %s", raw)
	case msg.Result.IsError:
		var text []string
		for _, c := range msg.Result.Content {
			text = append(text, c.Text)
		}
		return nil, errors.New(strings.Join(text, " "))
	}
	return msg.Result.StructuredContent, nil
}

// openAll starts n calls of do, at most 128 not yet written at once (so
// the listener's backlog never overflows), and returns once all are written.
func openAll(n int, do func(i int, written func())) {
	sem := make(chan struct{}, 128)
	for i := range n {
		sem <- struct{}{}
		go do(i, sync.OnceFunc(func() { <-sem }))
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
}

// procCPU is the utime+stime of a process, in clock ticks (100 a second).
func procCPU(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the 3rd (state) on
	u, _ := strconv.ParseInt(f[11], 10, 64)                  // field 14, utime
	k, _ := strconv.ParseInt(f[12], 10, 64)                  // field 15, stime
	return u + k
}

// settle polls count until it reports want, or for a minute, then waits
// until the server's RSS stops growing; it returns the RSS (kB).
func settle(t *testing.T, what string, pid, want int, count func() int) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for got := count(); got != want; got = count() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d open waits after a minute, want %d", what, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss := procStatus(pid, "VmRSS")
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		r := procStatus(pid, "VmRSS")
		if r <= rss {
			return max(r, rss)
		}
		rss = r
	}
	return rss
}

// TestWaitFloorServer is the floor when this binary is started with
// CTALK_WAIT_FLOOR_ADDR: a minimal net/http long poll that reads the POST
// body, blocks until the client goes or 55 s pass, and writes a small JSON.
// GET /count says how many it holds.
func TestWaitFloorServer(t *testing.T) {
	addr := os.Getenv(floorEnv)
	if addr == "" {
		t.Skip("the floor server of TestTenThousandWaits, started by it")
	}
	var open atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err != nil {
			return
		}
		open.Add(1)
		defer open.Add(-1)
		timer := time.NewTimer(55 * time.Second)
		defer timer.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"events":[],"cursor":"0"}}}`)
	})
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, open.Load())
	})
	mux.HandleFunc("GET /mem", func(w http.ResponseWriter, r *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "%d %d %d", m.StackInuse, m.HeapInuse, runtime.NumGoroutine())
	})
	if err := http.ListenAndServe(addr, mux); err != nil {
		t.Fatal(err)
	}
}

// TestTenThousandWaits measures, at each N of CTALK_WAITS_N (default
// 1000,10000), on SQLite: the resident memory per open wait of `ctalk serve`
// and of the floor holding the same N connections from the same client, the
// ratio, ctalk's CPU over 10 s with the N waits open, the wake-up latency of
// questions asked at 50 a second to random waiting users, and that the
// per-user and per-process caps on waits still refuse beyond them. It
// asserts only that the waits and the caps work:
//
//	CTALK_CAPACITY=1 go test -run TestTenThousandWaits -v -timeout 30m ./cmd/ctalk
func TestTenThousandWaits(t *testing.T) {
	if os.Getenv("CTALK_CAPACITY") == "" {
		t.Skip("a measurement of minutes, not a check: set CTALK_CAPACITY=1 to run it (see BENCHMARKS.md)")
	}
	// Each wait is a socket on the client and one on the server.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) //nolint:errcheck // checked below through lim
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) //nolint:errcheck
	}
	bin := testkit.BuildCtalk(t, "waits")
	for _, s := range strings.Split(cmp.Or(os.Getenv("CTALK_WAITS_N"), "1000,10000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			t.Fatalf("CTALK_WAITS_N=%q: want numbers of waits such as 1000,10000", s)
		}
		if uint64(n)+256 > lim.Cur {
			t.Fatalf("%d waits need more open files than ulimit -n %d allows", n, lim.Cur)
		}
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			floor, floorQuiet := measureFloor(t, n)
			ctalk, ctalkQuiet := measureCtalk(t, bin, n)
			t.Logf("RESULT N=%d: RSS per wait ctalk %.1f KiB, floor %.1f KiB, ratio %.2f (target <= 1.5); "+
				"after 10 s more with nothing happening: ctalk %.1f KiB, floor %.1f KiB, ratio %.2f",
				n, ctalk, floor, ctalk/floor, ctalkQuiet, floorQuiet, ctalkQuiet/floorQuiet)
		})
	}
}

// measureFloor starts the floor in its own process, holds n waits on it
// and returns its RSS per wait (KiB) once they are open and after 10 s
// more with nothing happening.
func measureFloor(t *testing.T, n int) (float64, float64) {
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWaitFloorServer$")
	cmd.Env = append(os.Environ(), floorEnv+"="+addr, "CTALK_CAPACITY=")
	var stderr testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the floor: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }() //nolint:errcheck // killed
	count := func() int {
		resp, err := http.Get("http://" + addr + "/count")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		v, _ := strconv.Atoi(string(b))
		return v
	}
	for deadline := time.Now().Add(30 * time.Second); count() != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the floor did not start: %s", stderr.String())
		}
	}
	mem := func() (stack, heap, goroutines int) {
		resp, err := http.Get("http://" + addr + "/mem")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		fmt.Fscan(resp.Body, &stack, &heap, &goroutines) //nolint:errcheck // zeros say it failed
		return
	}
	pid := cmd.Process.Pid
	idle := procStatus(pid, "VmRSS")
	stack0, heap0, _ := mem()
	c := newWaitsClient(n)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	openAll(n, func(i int, written func()) {
		wg.Add(1)
		defer wg.Done()
		if _, err := c.call(ctx, i, "http://"+addr+"/mcp", "", "wait_for_messages", waitBody("", 55), written); err != nil && ctx.Err() == nil {
			failed.Add(1)
		}
		written()
	})
	held := settle(t, "floor", pid, n, count)
	opened := time.Since(start)
	stack1, heap1, goroutines := mem()
	cpu0 := procCPU(pid)
	time.Sleep(10 * time.Second)
	ticks := procCPU(pid) - cpu0
	quiet := procStatus(pid, "VmRSS")
	cancel()
	wg.Wait()
	c.closeIdle()
	if failed.Load() > 0 {
		t.Errorf("floor: %d waits failed", failed.Load())
	}
	per, perQuiet := float64(held-idle)/float64(n), float64(quiet-idle)/float64(n)
	t.Logf("RESULT N=%d floor: opened in %v; VmRSS idle %d kB, holding %d kB: %.1f KiB per wait "+
		"(Go stacks %.1f KiB, heap in use %.1f KiB); %d goroutines; idle CPU over 10 s %d ticks; "+
		"after those 10 s %d kB: %.1f KiB per wait",
		n, opened.Round(time.Millisecond), idle, held, per, perWaitKiB(stack1-stack0, n), perWaitKiB(heap1-heap0, n), goroutines, ticks,
		quiet, perQuiet)
	return per, perQuiet
}

// perWaitKiB is bytes shared by n waits, in KiB each.
func perWaitKiB(bytes, n int) float64 { return float64(bytes) / 1024 / float64(n) }

// seedWaiters creates organization acme with users 0..n-1 and an asker,
// and a token for each, straight in the database: argon2id logins for ten
// thousand users would take minutes.
func seedWaiters(t *testing.T, path string, n int) (tokens []string, asker string) {
	s, err := db.Open(t.Context(), db.Config{SQLitePath: path})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	tokens = make([]string, n+1)
	err = s.InTx(t.Context(), func(q db.Queries) error {
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := q.CreateOrganization(t.Context(), db.Organization{ID: "acme", Name: "Acme", AdminPasswordHash: "x", CreatedAt: now}); err != nil {
			return err
		}
		for i := range n + 1 {
			id := fmt.Sprintf("user%05d", i)
			if i == n {
				id = "asker"
			}
			if err := q.CreateUser(t.Context(), db.User{OrgID: "acme", ID: id, Name: id, PasswordHash: "x", Ownership: id + "-repo", CreatedAt: now}); err != nil {
				return err
			}
			b := make([]byte, 32)
			rand.Read(b)
			tokens[i] = "ctalk_" + base64.RawURLEncoding.EncodeToString(b)
			sum := sha256.Sum256([]byte(tokens[i]))
			if err := q.CreateToken(t.Context(), db.Token{TokenHash: sum[:], OrgID: "acme", UserID: id, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %d users: %v", n, err)
	}
	return tokens[:n], tokens[n]
}

// metricValue reads one unlabelled series of the relay's /metrics.
func metricValue(base, name string) int {
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+waitsMetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

// measureCtalk runs `ctalk serve` on SQLite with n waits and returns its
// RSS per wait (KiB) once they are open and after 10 s more with nothing
// happening, logging the rest.
func measureCtalk(t *testing.T, bin string, n int) (float64, float64) {
	path := filepath.Join(t.TempDir(), "relay.db")
	tokens, asker := seedWaiters(t, path, n)
	const perUser = 8 // the default CTALK_MAX_WAITS_PER_USER
	p := startServe(t, bin, "RELAY_DB_PATH="+path, "CTALK_METRICS_TOKEN="+waitsMetricsToken,
		"CTALK_MAX_WAITS="+strconv.Itoa(n+perUser-1), "CTALK_MAX_CONCURRENT_REQUESTS="+strconv.Itoa(n+256))
	defer p.cmd.Process.Kill()
	pid := p.cmd.Process.Pid
	url := p.base + "/mcp"
	idle := procStatus(pid, "VmRSS")
	stack0, heap0 := metricValue(p.base, "go_memstats_stack_inuse_bytes"), metricValue(p.base, "go_memstats_heap_inuse_bytes")
	c := newWaitsClient(n)
	defer c.closeIdle()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// Each user keeps one wait open, passing its cursor back, as an agent
	// does all day; arrived says when each user's last wait returned with
	// an event, and waiting whether the user has a wait out.
	var (
		mu       sync.Mutex
		arrived  = make([]chan time.Time, n)
		waiting  = make([]bool, n)
		asked    = make([]bool, n) // a question to the user is on its way
		failures atomic.Int64
		lastErr  atomic.Value
		wg       sync.WaitGroup
	)
	for i := range arrived {
		arrived[i] = make(chan time.Time, 16)
	}
	start := time.Now()
	openAll(n, func(i int, written func()) {
		wg.Add(1)
		defer wg.Done()
		cursor := ""
		for ctx.Err() == nil {
			mu.Lock()
			waiting[i] = true
			mu.Unlock()
			res, err := c.call(ctx, i, url, tokens[i], "wait_for_messages", waitBody(cursor, 55), written)
			at := time.Now()
			mu.Lock()
			waiting[i] = false
			mu.Unlock()
			written()
			if err != nil {
				if ctx.Err() == nil {
					failures.Add(1)
					lastErr.Store(err.Error())
					time.Sleep(time.Second)
				}
				continue
			}
			var out struct {
				Events []struct{} `json:"events"`
				Cursor string     `json:"cursor"`
			}
			json.Unmarshal(res, &out) //nolint:errcheck // an empty cursor starts over, which only repeats events
			cursor = out.Cursor
			if len(out.Events) > 0 {
				arrived[i] <- at
			}
		}
	})
	openWaits := func() int {
		if f := failures.Load(); f > 0 {
			t.Fatalf("%d waits failed; the last: %v", f, lastErr.Load())
		}
		return metricValue(p.base, "ctalk_waits_open")
	}
	held := settle(t, "ctalk", pid, n, openWaits)
	opened := time.Since(start)
	goroutines := metricValue(p.base, "go_goroutines")
	stack1, heap1 := metricValue(p.base, "go_memstats_stack_inuse_bytes"), metricValue(p.base, "go_memstats_heap_inuse_bytes")
	per := float64(held-idle) / float64(n)
	t.Logf("RESULT N=%d ctalk: opened in %v; VmRSS idle %d kB, holding %d kB: %.1f KiB per wait "+
		"(Go stacks %.1f KiB, heap in use %.1f KiB); %d goroutines (%.1f per wait)",
		n, opened.Round(time.Millisecond), idle, held, per, perWaitKiB(stack1-stack0, n), perWaitKiB(heap1-heap0, n),
		goroutines, float64(goroutines)/float64(n))

	// Idle CPU: nothing happens but the n waits being held; two windows,
	// since the first may still see the collector and scavenger at work
	// after the waits came in.
	var quiet int64
	for w := range 2 {
		cpu0 := procCPU(pid)
		time.Sleep(10 * time.Second)
		ticks := procCPU(pid) - cpu0
		t.Logf("RESULT N=%d ctalk idle CPU over 10 s (window %d) with %d waits open: %d ticks = %.2f s (%.1f%% of one core)",
			n, w+1, n, ticks, float64(ticks)/100, float64(ticks)/10)
		if w == 0 { // as the floor's: after 10 s with nothing happening
			quiet = procStatus(pid, "VmRSS")
			stack2, heap2 := metricValue(p.base, "go_memstats_stack_inuse_bytes"), metricValue(p.base, "go_memstats_heap_inuse_bytes")
			t.Logf("RESULT N=%d ctalk after those 10 s: VmRSS %d kB: %.1f KiB per wait (Go stacks %.1f KiB, heap in use %.1f KiB)",
				n, quiet, float64(quiet-idle)/float64(n), perWaitKiB(stack2-stack0, n), perWaitKiB(heap2-heap0, n))
		}
	}

	// The caps: user 0 has one wait open; of perUser more, perUser-1 are
	// admitted and one refused; then the process is full (n+perUser-1)
	// and the asker's first wait is refused too.
	capCtx, capCancel := context.WithCancel(ctx)
	extra := make(chan error, perUser)
	for range perUser {
		go func() {
			_, err := c.call(capCtx, 0, url, tokens[0], "wait_for_messages", waitBody("latest", 55), nil)
			extra <- err
		}()
	}
	var userRefusal string
	select {
	case err := <-extra:
		if err != nil {
			userRefusal = err.Error()
		}
	case <-time.After(10 * time.Second):
	}
	if !strings.Contains(userRefusal, "too many open waits for you") {
		t.Errorf("the %dth wait of one user: %q, want it refused (too many open waits for you)", perUser+1, userRefusal)
	}
	settle(t, "ctalk with the extra waits", pid, n+perUser-1, openWaits)
	_, err := c.call(ctx, 1, url, asker, "wait_for_messages", waitBody("latest", 1), nil)
	if err == nil || !strings.Contains(err.Error(), "too many open waits") {
		t.Errorf("a wait beyond CTALK_MAX_WAITS=%d: %v, want it refused (too many open waits)", n+perUser-1, err)
	}
	t.Logf("RESULT N=%d caps: user's %dth wait refused: %q; process's %dth: %v", n, perUser+1, userRefusal, n+perUser, err)
	capCancel()
	for range perUser - 1 {
		<-extra
	}
	settle(t, "ctalk after the extra waits", pid, n, openWaits)

	// Wake-ups: questions at 50 a second to random waiting users, each
	// timed from when it was sent and from when it was acknowledged until
	// the waiter's response arrived.
	const rate, events = 50, 500
	var fromSend, fromAck []time.Duration
	var lmu sync.Mutex
	var awg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	for range events {
		<-tick.C
		var i int
		for {
			i = mrand.IntN(n)
			mu.Lock()
			free := waiting[i] && !asked[i]
			asked[i] = asked[i] || free
			mu.Unlock()
			if free {
				break
			}
		}
		awg.Add(1)
		go func() {
			defer awg.Done()
			sent := time.Now()
			_, err := c.call(ctx, n+i, url, asker, "ask_person", toolBody("ask_person", map[string]any{"to_user_id": fmt.Sprintf("user%05d", i), "question": "ping"}), nil)
			acked := time.Now()
			if err != nil {
				t.Errorf("ask user%05d: %v", i, err)
				return
			}
			select {
			case at := <-arrived[i]:
				mu.Lock()
				asked[i] = false
				mu.Unlock()
				lmu.Lock()
				fromSend = append(fromSend, at.Sub(sent))
				fromAck = append(fromAck, max(0, at.Sub(acked)))
				lmu.Unlock()
			case <-time.After(10 * time.Second):
				t.Errorf("user%05d's wait did not return within 10 s of a question", i)
			}
		}()
	}
	tick.Stop()
	awg.Wait()
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return -1
		}
		slices.Sort(d)
		return d[int(math.Round(p*float64(len(d)-1)))].Round(100 * time.Microsecond)
	}
	t.Logf("RESULT N=%d ctalk wake-up, %d questions at %d/s to random waiting users: from ask sent p50 %v p99 %v max %v; from ask acknowledged p50 %v p99 %v",
		n, len(fromSend), rate, pct(fromSend, .5), pct(fromSend, .99), pct(fromSend, 1), pct(fromAck, .5), pct(fromAck, .99))
	cancel()
	wg.Wait()
	if f := failures.Load(); f > 0 {
		t.Errorf("%d waits failed; the last: %v", f, lastErr.Load())
	}
	return per, float64(quiet-idle) / float64(n)
}
