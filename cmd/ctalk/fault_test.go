package main

// Fault tests: what a team relying on ctalk would notice when the process,
// the database or the disk misbehaves. The ones that drive the real binary
// are skipped with -short (they build it).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
)

const faultAdminPassword = "fault-admin-password-0123"

// serveProc is a running `ctalk serve` binary.
type serveProc struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	port   int
	stderr *testkit.SyncBuffer
	exited chan int // the exit code, once
}

// startServe runs the binary with env as its whole environment (plus PORT)
// and waits until /health answers.
func startServe(t *testing.T, bin string, env ...string) *serveProc {
	t.Helper()
	p := &serveProc{port: testkit.FreePort(t), stderr: &testkit.SyncBuffer{}, exited: make(chan int, 1)}
	p.base = "http://127.0.0.1:" + strconv.Itoa(p.port)
	p.cmd = exec.Command(bin, "serve")
	p.cmd.Env = append([]string{"PORT=" + strconv.Itoa(p.port)}, env...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start ctalk serve: %v", err)
	}
	go func() { p.cmd.Wait(); p.exited <- p.cmd.ProcessState.ExitCode() }() //nolint:errcheck // the exit code says it
	t.Cleanup(func() { p.cmd.Process.Kill() })
	waitHealthy(t, p.base, p.exited)
	return p
}

// faultClient is the HTTP client of the fault tests' MCP connections.
func faultClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
}

// faultTeam registers organization acme with the users and returns a
// logged-in connection for each, all through MCP.
func faultTeam(t *testing.T, base string, hc *http.Client, users ...string) map[string]*relayclient.Client {
	t.Helper()
	return testkit.Team{AdminPassword: faultAdminPassword, UserPassword: faultAdminPassword, Users: users, HTTPClient: hc}.Seed(t, base+"/mcp")
}

// reconnect is the same user's connection to another running relay.
func reconnect(t *testing.T, c *relayclient.Client, base string) *relayclient.Client {
	t.Helper()
	n, err := c.Reconnect(t.Context(), base+"/mcp")
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return n
}

// askLog records what the clients were told about their questions.
type askLog struct {
	mu      sync.Mutex
	acked   map[string]int64 // question → the message id the relay acknowledged
	pending map[string]bool  // sent without an answer: in flight when the relay went away
	refused []string         // tool errors
}

func newAskLog() *askLog { return &askLog{acked: map[string]int64{}, pending: map[string]bool{}} }

func (l *askLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// askUntil asks questions to u0 until stop closes or the relay stops
// answering; each question is unique.
func askUntil(ctx context.Context, c *relayclient.Client, prefix string, l *askLog, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		q := fmt.Sprintf("%s question %d: how do retries work?", prefix, i)
		l.mu.Lock()
		l.pending[q] = true
		l.mu.Unlock()
		res, err := c.CallTool(ctx, "ask_person", map[string]any{"to_user_id": "u0", "question": q})
		l.mu.Lock()
		switch {
		case err != nil: // the relay went away: the question stays pending
			l.mu.Unlock()
			return
		case res.IsError:
			delete(l.pending, q)
			l.refused = append(l.refused, res.Text)
		default:
			var out struct {
				MessageID int64 `json:"message_id"`
			}
			if jsonErr := json.Unmarshal(res.Structured, &out); jsonErr != nil || out.MessageID == 0 {
				l.refused = append(l.refused, "undecodable ask_person result: "+string(res.Structured))
			}
			delete(l.pending, q)
			l.acked[q] = out.MessageID
		}
		l.mu.Unlock()
	}
}

// inbox reads every question in c's inbox, page by page: question → ids.
func inbox(t *testing.T, c *relayclient.Client) map[string][]int64 {
	t.Helper()
	got := map[string][]int64{}
	for after := int64(0); ; {
		var page struct {
			Questions []struct {
				MessageID int64  `json:"message_id"`
				Question  string `json:"question"`
			} `json:"questions"`
			More bool `json:"more"`
		}
		if err := c.Call(t.Context(), "check_inbox", map[string]any{"after_message_id": after}, &page); err != nil {
			t.Fatalf("check_inbox after %d: %v", after, err)
		}
		for _, q := range page.Questions {
			got[q.Question] = append(got[q.Question], q.MessageID)
			after = q.MessageID
		}
		if !page.More {
			return got
		}
	}
}

// checkAcknowledged fails unless every acknowledged question is stored once
// under its id, and nothing is stored that was neither acknowledged nor in flight.
func checkAcknowledged(t *testing.T, l *askLog, stored map[string][]int64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for q, id := range l.acked {
		if ids := stored[q]; len(ids) != 1 || ids[0] != id {
			t.Errorf("acknowledged %.60q as message %d; stored as %v, want exactly [%d]", q, id, ids, id)
		}
	}
	for q, ids := range stored {
		if len(ids) > 1 {
			t.Errorf("%.60q is stored %d times (%v), want once", q, len(ids), ids)
		}
		if _, ok := l.acked[q]; !ok && !l.pending[q] {
			t.Errorf("%.60q is stored but was never asked", q)
		}
	}
	if len(l.refused) > 0 {
		t.Errorf("%d asks were refused; first: %s", len(l.refused), l.refused[0])
	}
}

func integrityCheck(t *testing.T, path string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var res string
	if err := conn.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Errorf("PRAGMA integrity_check on %s = %q, %v; want ok", path, res, err)
	}
}

// TestKill9 kills `ctalk serve` (SQLite) with SIGKILL while 8 clients ask
// questions, three times: after each restart every acknowledged question is
// stored and readable, none twice.
func TestKill9(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "fault")
	dbPath := filepath.Join(t.TempDir(), "relay.sqlite3")
	env := []string{"RELAY_DB_PATH=" + dbPath}
	hc := faultClient()
	p := startServe(t, bin, env...)
	conns := faultTeam(t, p.base, hc, "u0", "u1", "u2", "u3", "u4")
	l := newAskLog()
	for cycle := range 3 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		before := l.count()
		for c := range 8 {
			conn := reconnect(t, conns["u"+strconv.Itoa(1+c%4)], p.base)
			wg.Add(1)
			go func() {
				defer wg.Done()
				askUntil(t.Context(), conn, fmt.Sprintf("cycle %d client %d", cycle, c), l, stop)
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); l.count() < before+200 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9: %v", err)
		}
		<-p.exited
		close(stop)
		wg.Wait()
		t.Logf("cycle %d: killed with %d questions acknowledged so far (%d sent without an answer over all kills)", cycle, l.count(), len(l.pending))

		p = startServe(t, bin, env...)
		checkAcknowledged(t, l, inbox(t, reconnect(t, conns["u0"], p.base)))
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	integrityCheck(t, dbPath)
}

// TestSQLiteSynchronousUnderKill9 answers "would synchronous(normal) also pass
// TestKill9?" without changing ctalk: a helper process writes with db/sqlite.go's
// settings (WAL, immediate transactions, busy timeout) and the synchronous
// mode under test, acknowledging each commit on stdout, and is killed with
// SIGKILL mid-write. Both modes keep every acknowledged row, as they must:
// kill -9 loses the process, not the operating system's page cache, and in
// WAL mode a commit is in the WAL file (in that cache) before COMMIT returns.
// What normal gives up is durability across power loss or a kernel crash,
// which no test here can cause; see BENCHMARKS.md for the measured cost.
func TestSQLiteSynchronousUnderKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: skipping the kill -9 helper processes")
	}
	for _, mode := range []string{"full", "normal"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "sync.sqlite3")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteSyncHelper$")
			cmd.Env = append(os.Environ(), "CTALK_SYNC_HELPER="+path+"|"+mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			acks := make(chan []string, 1)
			go func() {
				b, _ := io.ReadAll(out)
				acks <- strings.Split(strings.TrimSpace(string(b)), "\n")
			}()
			time.Sleep(1500 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			lines := <-acks
			cmd.Wait()
			var acked []string
			for _, l := range lines {
				if rest, ok := strings.CutPrefix(l, "ack "); ok {
					acked = append(acked, rest)
				}
			}
			if len(acked) < 10 {
				t.Fatalf("the helper acknowledged %d writes in 1.5s, want some: %q", len(acked), lines)
			}
			conn, err := sql.Open("sqlite3", syncHelperDSN(path, mode))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stored := map[string]int{}
			rows, err := conn.Query("SELECT writer || ' ' || n FROM t")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k string
				rows.Scan(&k)
				stored[k]++
			}
			rows.Close()
			lost := 0
			for _, k := range acked {
				if stored[k] != 1 {
					lost++
				}
			}
			t.Logf("synchronous(%s): %d commits acknowledged in 1.5s (%.0f/s), %d stored after kill -9, %d acknowledged ones lost",
				mode, len(acked), float64(len(acked))/1.5, len(stored), lost)
			if lost > 0 {
				t.Errorf("synchronous(%s) lost %d of %d acknowledged commits to kill -9", mode, lost, len(acked))
			}
		})
	}
}

// syncHelperDSN is db/sqlite.go's DSN with the synchronous mode under test.
func syncHelperDSN(path, mode string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(on)" +
		"&_pragma=synchronous(" + mode + ")&_txlock=immediate"
}

// TestSQLiteSyncHelper is the helper process of TestSQLiteSynchronousUnderKill9.
func TestSQLiteSyncHelper(t *testing.T) {
	spec := os.Getenv("CTALK_SYNC_HELPER")
	if spec == "" {
		t.Skip("the helper process of TestSQLiteSynchronousUnderKill9")
	}
	path, mode, _ := strings.Cut(spec, "|")
	conn, err := sql.Open("sqlite3", syncHelperDSN(path, mode))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, writer INTEGER, n INTEGER, body TEXT)"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				tx, err := conn.Begin()
				if err == nil {
					_, err = tx.Exec("INSERT INTO t (writer, n, body) VALUES (?, ?, ?)", w, n, strings.Repeat("q", 200))
					if err == nil {
						err = tx.Commit()
					} else {
						tx.Rollback()
					}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %d %d\n", w, n) // only after COMMIT returned
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// callRecord is one timed tool call.
type callRecord struct {
	start, end time.Time
	err        error // transport failure
	isError    bool
	text       string
}

// TestPostgresRestartUnderLoad runs ctalk against PostgreSQL through a proxy
// and takes the database away under load: while it is down, calls fail fast
// with the clear "database is unavailable" error; once it is back, calls
// succeed again without restarting ctalk.
func TestPostgresRestartUnderLoad(t *testing.T) {
	t.Parallel()
	dbURL, _ := dbtest.NewPostgresSchema(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testkit.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	port := testkit.FreePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr testkit.SyncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve"}, env{"PORT": strconv.Itoa(port), "DATABASE_URL": u.String()}.getenv,
			strings.NewReader(""), &testkit.SyncBuffer{}, &stderr)
	}()
	waitHealthy(t, base, exited)
	hc := faultClient()
	conns := faultTeam(t, base, hc, "u0", "u1", "u2", "u3", "u4")

	var mu sync.Mutex
	var calls []callRecord
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		conn := conns["u"+strconv.Itoa(1+c)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tool, args := "ask_person", map[string]any{"to_user_id": "u0", "question": fmt.Sprintf("client %d question %d", c, i)}
				if i%2 == 1 {
					tool, args = "whoami", map[string]any{}
				}
				r := callRecord{start: time.Now()}
				res, err := conn.CallTool(t.Context(), tool, args)
				r.end, r.err = time.Now(), err
				if res != nil {
					r.isError, r.text = res.IsError, res.Text
				}
				mu.Lock()
				calls = append(calls, r)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	downAt := time.Now()
	proxy.Down()
	time.Sleep(5 * time.Second)
	healthDown := healthStatus(base)
	upAt := time.Now()
	proxy.Up(t)
	time.Sleep(6 * time.Second)
	close(stop)
	wg.Wait()
	healthUp := healthStatus(base)

	var before, cut, during, after, afterOK int
	var recovered time.Time
	for _, r := range calls {
		ok := r.err == nil && !r.isError
		switch {
		case r.end.Before(downAt):
			before++
			if !ok {
				t.Errorf("a call before the database went down failed: %v %q", r.err, r.text)
			}
		case r.start.Before(downAt):
			cut++ // in flight when the connections were cut
			t.Logf("call in flight at the cut: ok %v, err %v, text %q", ok, r.err, r.text)
		case r.end.Before(upAt):
			during++
			if d := r.end.Sub(r.start); d > 5*time.Second {
				t.Errorf("a call while the database was down took %v, want it to fail fast", d)
			}
			if ok || r.err != nil || !strings.Contains(r.text, "database is unavailable") {
				t.Errorf("a call while the database was down = ok %v, err %v, text %q; want the tool error saying the database is unavailable",
					ok, r.err, r.text)
			}
		case r.start.After(upAt):
			after++
			if ok {
				afterOK++
				if recovered.IsZero() {
					recovered = r.end
				}
			} else if r.start.After(upAt.Add(3 * time.Second)) {
				t.Errorf("a call %v after the database came back failed: %v %q", r.start.Sub(upAt).Round(time.Millisecond), r.err, r.text)
			}
		}
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "tool failed") {
			t.Logf("ctalk logged: %s", line) // the calls cut mid-query (if any)
		}
	}
	t.Logf("calls: %d before, %d cut, %d while down, %d after (%d ok); recovered %v after the database came back; /health %d down, %d up",
		before, cut, during, after, afterOK, recovered.Sub(upAt).Round(time.Millisecond), healthDown, healthUp)
	if before == 0 || during == 0 || afterOK == 0 {
		t.Errorf("want calls before, during and (succeeding) after the outage")
	}
	if healthDown != http.StatusServiceUnavailable || healthUp != http.StatusOK {
		t.Errorf("/health = %d while down and %d after, want 503 then 200", healthDown, healthUp)
	}
	select {
	case code := <-exited:
		t.Fatalf("ctalk serve exited (%d) during the outage; stderr:\n%s", code, stderr.String())
	default:
	}
}

func healthStatus(base string) int {
	resp, err := http.Get(base + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSIGTERMUnderLoad sends SIGTERM to `ctalk serve` while 8 clients ask
// questions and two long polls wait: the calls in flight complete, new
// connections are refused at once, and the process exits 0 within
// CTALK_SHUTDOWN_TIMEOUT. Every question stored was acknowledged to its
// client (no call was cut off after it committed) and every acknowledged one
// is stored.
func TestSIGTERMUnderLoad(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "fault")
	const drain = 5 * time.Second
	const waitSeconds = 3
	dbPath := filepath.Join(t.TempDir(), "relay.sqlite3")
	p := startServe(t, bin, "RELAY_DB_PATH="+dbPath, "CTALK_SHUTDOWN_TIMEOUT="+drain.String())
	hc := faultClient()
	conns := faultTeam(t, p.base, hc, "u0", "u1", "u2", "u3", "u4", "w1", "w2")

	l := newAskLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 8 {
		conn := reconnect(t, conns["u"+strconv.Itoa(1+c%4)], p.base)
		wg.Add(1)
		go func() {
			defer wg.Done()
			askUntil(t.Context(), conn, fmt.Sprintf("client %d", c), l, stop)
		}()
	}
	// Two long polls for people nobody asks: they are in flight until they time out.
	waits := make(chan callRecord, 2)
	for _, w := range []string{"w1", "w2"} {
		go func() {
			r := callRecord{start: time.Now()}
			res, err := conns[w].CallTool(t.Context(), "wait_for_messages", map[string]any{"timeout_seconds": waitSeconds, "cursor": "latest"})
			r.end, r.err = time.Now(), err
			if res != nil {
				r.isError, r.text = res.IsError, res.Text
			}
			waits <- r
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); l.count() < 100 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	termAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	// New connections: refused once the listener closes, and from then on.
	var refusedAt time.Time
	var acceptedAfter int
	dialDone := make(chan struct{})
	go func() {
		defer close(dialDone)
		for time.Since(termAt) < waitSeconds*time.Second {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.port), time.Second)
			switch {
			case err == nil:
				c.Close()
				if !refusedAt.IsZero() {
					acceptedAfter++
				}
			case errors.Is(err, syscall.ECONNREFUSED) && refusedAt.IsZero():
				refusedAt = time.Now()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var code int
	select {
	case code = <-p.exited:
	case <-time.After(drain + 2*time.Second):
		t.Fatalf("ctalk serve still running %v after SIGTERM (drain %v)", drain+2*time.Second, drain)
	}
	exitedAfter := time.Since(termAt)
	close(stop)
	wg.Wait()
	<-dialDone

	if code != 0 || !strings.Contains(p.stderr.String(), "ctalk stopped") {
		t.Errorf("ctalk serve after SIGTERM = exit %d, want 0 and a clean stop; stderr:\n%s", code, p.stderr.String())
	}
	if exitedAfter > drain+time.Second {
		t.Errorf("ctalk serve exited %v after SIGTERM, want within CTALK_SHUTDOWN_TIMEOUT=%v", exitedAfter, drain)
	}
	if refusedAt.IsZero() || refusedAt.Sub(termAt) > time.Second || acceptedAfter > 0 {
		t.Errorf("new connections: first refused %v after SIGTERM, %d accepted after that; want refused within 1s, none accepted",
			refusedAt.Sub(termAt), acceptedAfter)
	}
	for range 2 {
		r := <-waits
		if r.err != nil || r.isError {
			t.Errorf("wait_for_messages in flight at SIGTERM = %v %q, want it to complete", r.err, r.text)
		}
	}
	t.Logf("SIGTERM: connections refused after %v, exit %d after %v; %d questions acknowledged, %d in flight at the end",
		refusedAt.Sub(termAt).Round(time.Millisecond), code, exitedAfter.Round(time.Millisecond), l.count(), len(l.pending))

	// Read the file directly: every stored question was acknowledged, and the reverse.
	stored := storedQuestions(t, dbPath)
	l.mu.Lock()
	for q := range stored {
		if _, ok := l.acked[q]; !ok {
			t.Errorf("%.60q was stored but its client never got the answer: a call was cut off after it committed", q)
		}
	}
	l.pending = map[string]bool{}
	l.mu.Unlock()
	checkAcknowledged(t, l, stored)
}

// mountTmpfs mounts a tmpfs of size on a new directory until the test ends,
// or skips the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to make a full or read-only disk (%v: %s): needs root with CAP_SYS_ADMIN", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func remount(dir, mode string) error {
	out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// serveInProcess runs `ctalk serve` in this process until stop, which
// returns its exit code.
func serveInProcess(t *testing.T, e env) (base string, stderr *testkit.SyncBuffer, stop func() int) {
	t.Helper()
	port := testkit.FreePort(t)
	e["PORT"] = strconv.Itoa(port)
	base = "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(t.Context())
	stderr = &testkit.SyncBuffer{}
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve"}, e.getenv, strings.NewReader(""), &testkit.SyncBuffer{}, stderr)
	}()
	waitHealthy(t, base, exited)
	var once sync.Once
	code := 0
	stop = func() int {
		once.Do(func() { cancel(); code = <-exited })
		return code
	}
	t.Cleanup(func() { stop() })
	return base, stderr, stop
}

// tmpfsRelay is `ctalk serve` in this process over a SQLite file on a tmpfs
// of its own, with u0 and u1 registered.
type tmpfsRelay struct {
	dir, dbPath string
	stderr      *testkit.SyncBuffer
	stop        func() int
	conns       map[string]*relayclient.Client
}

// serveOnTmpfs starts a tmpfsRelay on a tmpfs of size; under -short it
// skips the test, named what.
func serveOnTmpfs(t *testing.T, size, what string) tmpfsRelay {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping " + what)
	}
	r := tmpfsRelay{dir: mountTmpfs(t, size)}
	r.dbPath = filepath.Join(r.dir, "relay.sqlite3")
	var base string
	base, r.stderr, r.stop = serveInProcess(t, env{"RELAY_DB_PATH": r.dbPath})
	r.conns = faultTeam(t, base, faultClient(), "u0", "u1")
	return r
}

// storedQuestions reads the questions in a SQLite file: question → ids.
func storedQuestions(t *testing.T, path string) map[string][]int64 {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query("SELECT question, id FROM messages")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[string][]int64{}
	for rows.Next() {
		var q string
		var id int64
		if err := rows.Scan(&q, &id); err != nil {
			t.Fatal(err)
		}
		stored[q] = append(stored[q], id)
	}
	return stored
}

// TestSQLiteDiskFull fills the disk under ctalk's SQLite file: asks fail
// with a clear tool error (and the log says why), nothing acknowledged is
// lost, the file stays intact, and once space is freed asks succeed again
// without a restart.
func TestSQLiteDiskFull(t *testing.T) {
	t.Parallel()
	r := serveOnTmpfs(t, "4m", "the full-disk test")
	dir, dbPath, stderr, stop, conns := r.dir, r.dbPath, r.stderr, r.stop, r.conns
	l := newAskLog()
	long := strings.TrimSpace(strings.Repeat("Why does the retry loop back off like this? ", 80)) // ~3.5 KB
	ask := func(i int) *relayclient.Result {
		q := fmt.Sprintf("question %d: %s", i, long)
		res, err := conns["u1"].CallTool(t.Context(), "ask_person", map[string]any{"to_user_id": "u0", "question": q})
		if err != nil {
			t.Fatalf("ask %d: transport error %v, want a tool result", i, err)
		}
		if !res.IsError {
			var out struct {
				MessageID int64 `json:"message_id"`
			}
			json.Unmarshal(res.Structured, &out)
			l.mu.Lock()
			l.acked[q] = out.MessageID
			l.mu.Unlock()
		}
		return res
	}
	for i := range 20 {
		if res := ask(i); res.IsError {
			t.Fatalf("ask %d before the disk filled: %s", i, res.Text)
		}
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	f.Close()
	failed := 0
	for i := 20; i < 220; i++ {
		if res := ask(i); res.IsError {
			failed++
			if !strings.Contains(res.Text, "database is unavailable") {
				t.Errorf("ask on a full disk = %q, want the tool error saying the database is unavailable", res.Text)
			}
		}
	}
	if failed == 0 {
		t.Fatalf("200 asks of 3.5 KB on a full disk all succeeded: the disk was not full")
	}
	// The operator's log names the cause. (It says "disk I/O error", not
	// "full": the SQLite driver misses ENOSPC inside *os.PathError; see
	// BENCHMARKS.md.)
	var logged string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, `msg="database unavailable"`) && strings.Contains(line, "sqlite3:") {
			logged = line
			break
		}
	}
	if logged == "" {
		t.Errorf("ctalk's log has no warning with the SQLite error for the full disk:\n%s", stderr.String())
	}
	os.Remove(filler)
	var recovered bool
	for i := 220; i < 240 && !recovered; i++ {
		recovered = !ask(i).IsError
	}
	if !recovered {
		t.Errorf("asks still fail after the disk was freed, want them to succeed without a restart")
	}
	t.Logf("full disk: %d of 200 asks refused with %q; ctalk logged %s; recovered after freeing space: %v",
		failed, errUnavailableText, logged, recovered)
	if code := stop(); code != 0 {
		t.Errorf("ctalk serve = exit %d after cancel, want 0", code)
	}
	integrityCheck(t, dbPath)
	checkAcknowledged(t, l, storedQuestions(t, dbPath))
}

// errUnavailableText is the tool error for an unavailable database (mcp/errors.go).
const errUnavailableText = "ctalk's database is unavailable right now: try again in a minute"

// TestSQLiteReadOnlyLocation: a read-only RELAY_DB_PATH, new or existing,
// stops `ctalk serve` at once with a clear error and leaves the file as it
// was; a read-only remount under a running ctalk is refused by Linux.
func TestSQLiteReadOnlyLocation(t *testing.T) {
	t.Parallel()
	r := serveOnTmpfs(t, "8m", "the read-only disk test")
	dir, dbPath, stop, conns := r.dir, r.dbPath, r.stop, r.conns
	l := newAskLog()
	for i := range 10 {
		q := fmt.Sprintf("question %d", i)
		var out struct {
			MessageID int64 `json:"message_id"`
		}
		if err := conns["u1"].Call(t.Context(), "ask_person", map[string]any{"to_user_id": "u0", "question": q}, &out); err != nil {
			t.Fatal(err)
		}
		l.acked[q] = out.MessageID
	}
	if err := remount(dir, "ro"); err == nil {
		t.Errorf("remounting read-only under a running ctalk succeeded; want Linux to refuse it (files open for writing)")
		remount(dir, "rw")
	} else {
		t.Logf("read-only remount under a running ctalk: refused (%v)", err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("ctalk serve = exit %d after cancel, want 0", code)
	}
	before, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := remount(dir, "ro"); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	for _, path := range []string{dbPath, filepath.Join(dir, "new.sqlite3")} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code, _, stderr := runCtalk(t, ctx, env{"RELAY_DB_PATH": path, "PORT": strconv.Itoa(testkit.FreePort(t))}, "serve")
		cancel()
		if code != 1 || !strings.Contains(stderr, "RELAY_DB_PATH") || !strings.Contains(stderr, "not writable") {
			t.Errorf("ctalk serve on read-only %s = exit %d, stderr %q; want exit 1 naming RELAY_DB_PATH as not writable", path, code, stderr)
		}
		oneLine(t, "ctalk serve on a read-only disk", stderr)
	}
	after, err := os.ReadFile(dbPath)
	if err != nil || string(after) != string(before) {
		t.Errorf("the database file changed while its disk was read-only (%v)", err)
	}
	if err := remount(dir, "rw"); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	integrityCheck(t, dbPath)
	checkAcknowledged(t, l, storedQuestions(t, dbPath))
}

// TestSIGTERMLongPoll sends SIGTERM while a wait_for_messages call waits
// longer than the drain time: the wait ends at once with its normal empty
// result (not an error, not a cut connection), and ctalk exits 0 within
// CTALK_SHUTDOWN_TIMEOUT.
func TestSIGTERMLongPoll(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "fault")
	const drain = 2 * time.Second
	p := startServe(t, bin, "RELAY_DB_PATH="+filepath.Join(t.TempDir(), "relay.sqlite3"), "CTALK_SHUTDOWN_TIMEOUT="+drain.String())
	conns := faultTeam(t, p.base, faultClient(), "w1")
	done := make(chan callRecord, 1)
	go func() {
		r := callRecord{start: time.Now()}
		res, err := conns["w1"].CallTool(t.Context(), "wait_for_messages", map[string]any{"timeout_seconds": 30, "cursor": "latest"})
		r.end, r.err = time.Now(), err
		if res != nil {
			r.isError, r.text = res.IsError, res.Text
		}
		done <- r
	}()
	time.Sleep(500 * time.Millisecond)
	termAt := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	var code int
	select {
	case code = <-p.exited:
	case <-time.After(drain + 2*time.Second):
		t.Fatalf("ctalk serve still running %v after SIGTERM with a long poll in flight (drain %v)", drain+2*time.Second, drain)
	}
	if d := time.Since(termAt); d > drain+time.Second {
		t.Errorf("ctalk serve exited %v after SIGTERM, want within CTALK_SHUTDOWN_TIMEOUT=%v", d, drain)
	}
	r := <-done
	t.Logf("long poll at SIGTERM: exit %d after %v; the waiting call ended after %v with err %v, isError %v %q",
		code, time.Since(termAt).Round(time.Millisecond), r.end.Sub(termAt).Round(time.Millisecond), r.err, r.isError, r.text)
	if code != 0 {
		t.Errorf("ctalk serve exit code = %d after SIGTERM with a long poll in flight, want 0; stderr:\n%s", code, p.stderr.String())
	}
	if r.err != nil || r.isError {
		t.Errorf("wait_for_messages in flight at SIGTERM = %v, isError %v %q; want its normal empty result", r.err, r.isError, r.text)
	}
	if d := r.end.Sub(termAt); d > drain {
		t.Errorf("wait_for_messages ended %v after SIGTERM, want before the drain deadline (%v)", d, drain)
	}
}
