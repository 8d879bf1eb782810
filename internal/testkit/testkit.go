// Package testkit holds the helpers ctalk's tests share: a buffer a running
// command and a test can share, a TCP proxy that can be cut, a free port,
// a team seeded through relayclient, and the ctalk binary built once. Only
// tests import it.
package testkit

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/relayclient"
)

// SyncBuffer is a bytes.Buffer that a running command and the test may share.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreePort returns a TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TCPProxy forwards a local port to a target address and can go down (close
// the listener and every connection) and come back up on the same port: a
// database restart, as its client sees it.
type TCPProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewTCPProxy starts a proxy to target; it goes down when the test ends.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	p := &TCPProxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

// Addr is the proxy's host:port.
func (p *TCPProxy) Addr() string { return p.addr }

func (p *TCPProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
}

// Down closes the listener and every connection through the proxy.
func (p *TCPProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Up listens on the same address again.
func (p *TCPProxy) Up(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", p.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("proxy up on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// Team is what SeedTeam registers.
type Team struct {
	Org           string // default "acme"
	AdminPassword string
	UserPassword  string       // every user's
	Users         []string     // ids; each is named after its id ("umar" → "Umar") and owns ID-repo
	HTTPClient    *http.Client // nil: relayclient's default
}

// Connect opens a relayclient session as the owner of token ("" for none).
func (tm Team) Connect(t testing.TB, endpoint, token string) *relayclient.Client {
	t.Helper()
	c, err := relayclient.Connect(t.Context(), endpoint,
		relayclient.Options{HTTPClient: tm.HTTPClient, Token: relayclient.Static(token), Name: "ctalk-test"})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	return c
}

// Seed registers the organization and its users through the relay's tools
// and returns a logged-in client for each user.
func (tm Team) Seed(t testing.TB, endpoint string) map[string]*relayclient.Client {
	t.Helper()
	ctx := t.Context()
	if tm.Org == "" {
		tm.Org = "acme"
	}
	anon := tm.Connect(t, endpoint, "")
	if err := anon.Call(ctx, "register_organization",
		map[string]any{"org_id": tm.Org, "name": strings.ToUpper(tm.Org[:1]) + tm.Org[1:], "admin_password": tm.AdminPassword}, nil); err != nil {
		t.Fatal(err)
	}
	clients := map[string]*relayclient.Client{}
	for _, u := range tm.Users {
		if err := anon.Call(ctx, "register_user", map[string]any{"org_id": tm.Org, "admin_password": tm.AdminPassword,
			"user_id": u, "name": strings.ToUpper(u[:1]) + u[1:], "password": tm.UserPassword, "ownership": u + "-repo"}, nil); err != nil {
			t.Fatal(err)
		}
		login, err := anon.Login(ctx, tm.Org, u, tm.UserPassword)
		if err != nil {
			t.Fatal(err)
		}
		clients[u] = tm.Connect(t, endpoint, login.AuthToken)
	}
	return clients
}

var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string // -X main.version value → binary
}

// BuildCtalk builds the ctalk binary once per test process and version
// ("" for none: the build info's), skipping under -short. Call Main from
// the package's TestMain so the binaries are removed at the end.
func BuildCtalk(t testing.TB, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the build of the real binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the binary: %v", err)
	}
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if bin, ok := builds.bins[version]; ok {
		return bin
	}
	if builds.dir == "" {
		if builds.dir, err = os.MkdirTemp("", "ctalk-test-bin-"); err != nil {
			t.Fatal(err)
		}
		builds.bins = map[string]string{}
	}
	bin := filepath.Join(builds.dir, "ctalk-"+strings.Map(safe, version))
	args := []string{"build", "-o", bin}
	if version != "" {
		args = append(args, "-ldflags", "-X main.version="+version)
	}
	cmd := exec.Command(gobin, append(args, "github.com/ctalk/ctalk/cmd/ctalk")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	builds.bins[version] = bin
	return bin
}

func safe(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
		return r
	}
	return '_'
}

// Main runs the package's tests and removes the binaries BuildCtalk built.
func Main(m *testing.M) {
	code := m.Run()
	builds.mu.Lock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.mu.Unlock()
	os.Exit(code)
}

// ServeMCP serves h (a relay's handler) on a local port until the test
// ends and returns its MCP URL.
func ServeMCP(t testing.TB, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// Home is a fresh home directory and the environment that points ctalk's
// config directory into it.
func Home(t testing.TB) (home string, env []string) {
	home = t.TempDir()
	return home, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
}

// Getenv turns an environment list into a getenv; later entries win.
func Getenv(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range slices.Backward(env) {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
}

// Ask asks a question as c and returns its message id.
func Ask(t testing.TB, c *relayclient.Client, to, question string) int64 {
	t.Helper()
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.Call(t.Context(), "ask_person", map[string]any{"to_user_id": to, "question": question}, &res); err != nil {
		t.Fatalf("ask_person: %v", err)
	}
	return res.MessageID
}

// Pair is the usual two-person team: organization acme with umar and john.
var Pair = Team{AdminPassword: "testkit-admin-password-0123", UserPassword: "testkit-user-password-0123", Users: []string{"umar", "john"}}
