package main

// Tests for claims of docs/security.md that no other test would catch if
// they stopped being true (the "Gaps" of notes/claims.md): the container
// image (S70), and that valid CTALK_* settings take effect (S22, S29, S58).

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestClaimContainerNonrootNoShell (S70): the Dockerfile's final stage runs
// on a distroless nonroot image as user nonroot (uid 65532), with no shell:
// not a :debug image (those carry busybox), no RUN step and no shell-form
// ENTRYPOINT/CMD (both need /bin/sh), and nothing copied in but the binary
// and its data directory.
func TestClaimContainerNonrootNoShell(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Instructions, with continuation lines joined and comments dropped.
	var instrs []string
	cur := ""
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		instrs = append(instrs, cur+trimmed)
		cur = ""
	}
	last := -1
	for i, in := range instrs {
		if strings.EqualFold(strings.Fields(in)[0], "FROM") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
	final := instrs[last:]
	image := strings.Fields(final[0])[1]
	if !regexp.MustCompile(`^gcr\.io/distroless/[a-z0-9-]+:nonroot$`).MatchString(image) || strings.Contains(image, "debug") {
		t.Errorf("the final stage is FROM %q, want a distroless :nonroot image (no :debug, which has a shell)", image)
	}
	user := ""
	for _, in := range final[1:] {
		f := strings.Fields(in)
		switch strings.ToUpper(f[0]) {
		case "USER":
			user = strings.Join(f[1:], " ")
		case "RUN", "SHELL":
			t.Errorf("the final stage has %q: a distroless image has no shell to run it", in)
		case "ENTRYPOINT", "CMD":
			if rest := strings.TrimSpace(in[len(f[0]):]); !strings.HasPrefix(rest, "[") {
				t.Errorf("%q is in shell form, which needs /bin/sh", in)
			}
		case "COPY", "ADD":
			if !strings.Contains(in, "--from=build") {
				t.Errorf("%q copies files from outside the build stage into the image", in)
			}
			for _, sh := range []string{"/bin/sh", "bash", "busybox", "/bin/"} {
				if strings.Contains(in, sh) {
					t.Errorf("%q copies %s into the image", in, sh)
				}
			}
		}
	}
	if !regexp.MustCompile(`^(nonroot|65532)(:(nonroot|65532))?$`).MatchString(user) {
		t.Errorf("the final stage runs as USER %q, want nonroot or 65532", user)
	}
}

// TestClaimConfigValuesTakeEffect (S22, S29, S58): valid values of the
// documented variables are read into the configuration, not only refused
// when malformed.
func TestClaimConfigValuesTakeEffect(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	for k, v := range map[string]string{
		"CTALK_TOKEN_TTL":                "2h",
		"CTALK_TRUSTED_PROXIES":          "10.0.0.0/8",
		"CTALK_CLIENT_IP_HEADER":         "X-Real-IP",
		"CTALK_MAX_SESSIONS":             "7",
		"CTALK_MAX_CONCURRENT_REQUESTS":  "9",
		"CTALK_MAX_BODY_BYTES_IN_FLIGHT": "12345678",
		"CTALK_MAX_WAITS":                "11",
		"CTALK_MAX_WAITS_PER_USER":       "3",
		"CTALK_RETENTION":                "2160h",
	} {
		e[k] = v
	}
	c, err := loadConfig(e.getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenTTL != 2*time.Hour || c.ClientIPHeader != "X-Real-IP" || c.MaxSessions != 7 || c.MaxConcurrentRequests != 9 ||
		c.MaxBodyBytesInFlight != 12345678 || c.MaxWaits != 11 || c.MaxWaitsPerUser != 3 || c.Retention != 2160*time.Hour ||
		len(c.TrustedProxies) != 1 || c.TrustedProxies[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("loadConfig = %+v; want every valid value taken", c)
	}
	// Retention is at least a day: a typo must not delete yesterday's answers.
	for _, bad := range []string{"1h", "90d", "-24h"} {
		e["CTALK_RETENTION"] = bad
		if _, err := loadConfig(e.getenv); err == nil || !strings.Contains(err.Error(), "CTALK_RETENTION") {
			t.Errorf("CTALK_RETENTION=%s: loadConfig = %v; want refused, naming it", bad, err)
		}
	}
	delete(e, "CTALK_RETENTION")
	// A client IP header set by hand wins over a host's preset one.
	e["FLY_APP_NAME"] = "ctalk"
	delete(e, "CTALK_TRUSTED_PROXIES")
	if c, err := loadConfig(e.getenv); err != nil || c.ClientIPHeader != "X-Real-IP" || c.ProxyPreset != "fly" {
		t.Errorf("loadConfig on Fly.io with CTALK_CLIENT_IP_HEADER = %+v, %v; want the header set by hand", c, err)
	}
}

// headerTransport adds a header to every request.
type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestClaimServeHonoursSettings (S22, S29, S58): `ctalk serve` applies the
// settings: CTALK_TOKEN_TTL sets a login's expiry, CTALK_CLIENT_IP_HEADER
// names the client behind a trusted proxy (20 failures locked that client,
// not another behind the same proxy), CTALK_MAX_WAITS_PER_USER and
// CTALK_MAX_CONCURRENT_REQUESTS cap what is held at once.
func TestClaimServeHonoursSettings(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	e["CTALK_TOKEN_TTL"] = "2h"
	e["CTALK_TRUSTED_PROXIES"] = "127.0.0.1/32"
	e["CTALK_CLIENT_IP_HEADER"] = "X-Real-IP"
	e["CTALK_MAX_WAITS_PER_USER"] = "1"
	e["CTALK_MAX_CONCURRENT_REQUESTS"] = "2"
	base, _, _ := serveInProcess(t, e)
	ctx := t.Context()
	const pw = "claims-Password-123"
	team := testkit.Team{AdminPassword: pw, UserPassword: pw, Users: []string{"umar"}}.Seed(t, base+"/mcp")

	before := time.Now()
	anon := testkit.Team{}.Connect(t, base+"/mcp", "")
	login, err := anon.Login(ctx, "acme", "umar", pw)
	if err != nil {
		t.Fatal(err)
	}
	if d := login.ExpiresAt.Sub(before); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Errorf("with CTALK_TOKEN_TTL=2h a login expires in %v, want 2h", d)
	}

	from := func(addr string) *relayclient.Client {
		c, err := relayclient.Connect(ctx, base+"/mcp", relayclient.Options{
			HTTPClient: &http.Client{Timeout: time.Minute, Transport: headerTransport{"X-Real-IP", addr}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	guesser := from("203.0.113.1")
	for i := range 20 {
		if _, err := guesser.Login(ctx, "acme", "nobody-"+strconv.Itoa(i), "wrong-password"); err == nil {
			t.Fatal("a wrong login succeeded")
		}
	}
	if _, err := guesser.Login(ctx, "acme", "umar", pw); err == nil || !strings.Contains(err.Error(), "too many failed password attempts") {
		t.Errorf("login from the X-Real-IP that failed 20 times = %v, want it throttled", err)
	}
	if _, err := from("203.0.113.2").Login(ctx, "acme", "umar", pw); err != nil {
		t.Errorf("login from another X-Real-IP behind the same proxy = %v, want success", err)
	}

	// One wait held: a second from the same user is refused (per-user cap 1),
	// and with the two requests cap, a third request is refused with 503.
	umar := team["umar"]
	umar2 := testkit.Team{}.Connect(t, base+"/mcp", login.AuthToken) // a client's calls are sequential: another connection
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	held := make(chan error, 1)
	hold := func() {
		go func() {
			_, err := umar.WaitForMessages(waitCtx, "latest", 55)
			held <- err
		}()
	}
	hold()
	var second error
	for range 100 {
		if _, second = umar2.WaitForMessages(ctx, "latest", 1); second != nil { // a 0 s wait never counts
			break
		}
		select {
		case <-held: // umar2's wait was open first and refused this one: hold again
			hold()
		default:
		}
	}
	var te *relayclient.ToolError
	if !errors.As(second, &te) || !strings.Contains(te.Message, "1 already wait") {
		t.Errorf("a second wait with CTALK_MAX_WAITS_PER_USER=1 = %v, want refused: 1 already wait", second)
	}
	// The held wait is one request; hold a second one (another user's
	// wait is not needed: a slow body holds a slot while it is read).
	pr, pw2 := io.Pipe()
	go func() {
		req, _ := http.NewRequestWithContext(waitCtx, http.MethodPost, base+"/mcp", pr)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw2.Write([]byte(`{"jsonrpc":"2.0",`)) //nolint:errcheck // the request is cancelled at the end
	status := 0
	for range 500 {
		resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if status = resp.StatusCode; status == http.StatusServiceUnavailable {
			if ra := resp.Header.Get("Retry-After"); ra != "1" {
				t.Errorf("503 with Retry-After %q, want 1", ra)
			}
			break
		}
		time.Sleep(10 * time.Millisecond) // until the slow body holds its slot
	}
	if status != http.StatusServiceUnavailable {
		t.Errorf("with CTALK_MAX_CONCURRENT_REQUESTS=2 and two requests held, a third got %d, want 503", status)
	}
	pw2.Close()
	cancel()
	<-held
}
