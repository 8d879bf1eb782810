package notify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDNS answers host names from a table, as a resolver an attacker
// controls would (a public-looking name that resolves to a private address).
type fakeDNS map[string][]string

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range f[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if len(out) == 0 {
		return nil, errors.New("no such host")
	}
	return out, nil
}

// TestCheckURL: a webhook URL is refused when it is configured if it could
// reach the server's own network, with a message saying why and what the
// operator can do; public https URLs pass.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	g := Guard{Resolver: fakeDNS{
		"hooks.example.com": {"93.184.216.34"},
		"rebind.example":    {"93.184.216.34", "10.0.0.1"},
		"metadata.example":  {"169.254.169.254"},
		"localhost":         {"127.0.0.1", "::1"},
	}}
	for _, raw := range []string{
		"https://127.0.0.1/hook", "https://10.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest/meta-data",
		"https://100.64.0.1/", "https://[::ffff:10.0.0.1]/", "https://[64:ff9b::a00:1]/", "https://[2002:a00:1::]/",
		"https://0.0.0.0/", "https://[fd00::1]/", "https://[fe80::1]/", "https://224.0.0.1/", "https://255.255.255.255/",
		"https://localhost:8443/", "https://rebind.example/", "https://metadata.example/",
	} {
		_, err := g.CheckURL(t.Context(), raw)
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "CTALK_WEBHOOK_ALLOW_PRIVATE") {
			t.Errorf("CheckURL(%s) = %v; want refused, naming the operator's setting", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"http://hooks.example.com/x":          "must start with https://",
		"https://user:pw@hooks.example.com/x": "user name or password",
		"hooks.example.com/x":                 "not an absolute URL",
		"https://nowhere.example/x":           "could not be resolved",
		"mailto:ops@example.com":              "not an absolute URL",
	} {
		if _, err := g.CheckURL(t.Context(), raw); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%s) = %v; want refused: %q", raw, err, want)
		}
	}
	for _, raw := range []string{"https://hooks.example.com/services/T0/B0/x", "https://93.184.216.34:8443/hook", "https://[2606:4700::1]/"} {
		if _, err := g.CheckURL(t.Context(), raw); err != nil {
			t.Errorf("CheckURL(%s) = %v; want accepted", raw, err)
		}
	}
	allow := Guard{AllowPrivate: true}
	if _, err := allow.CheckURL(t.Context(), "http://127.0.0.1:9000/hook"); err != nil {
		t.Errorf("with private destinations allowed, CheckURL(http://127.0.0.1) = %v", err)
	}
}

// TestClientRefusesAtConnect: whatever passed the URL check (a name that
// now resolves elsewhere), the guarded client refuses to connect to a
// private address, and no request reaches it; allowed, it delivers.
func TestClientRefusesAtConnect(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()

	resp, err := Guard{}.Client(5*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrBlocked) || hits.Load() != 0 {
		t.Fatalf("guarded POST to %s = %v, %d requests received; want refused before connecting", srv.URL, err, hits.Load())
	}
	resp, err = Guard{AllowPrivate: true}.Client(5*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("allowed POST = %v, %v; want delivered once", resp, err)
	}
	resp.Body.Close()
}

// TestRedirectGuard: a redirect is checked like a configured URL, and
// redirects are bounded.
func TestRedirectGuard(t *testing.T) {
	t.Parallel()
	c := Guard{Resolver: fakeDNS{"hooks.example.com": {"93.184.216.34"}}}.Client(time.Second)
	req := func(u string) *http.Request {
		r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u, nil)
		return r
	}
	prev := []*http.Request{req("https://hooks.example.com/a")}
	for _, to := range []string{"https://10.0.0.1/x", "http://hooks.example.com/x", "https://169.254.169.254/"} {
		if err := c.CheckRedirect(req(to), prev); !errors.Is(err, ErrBlocked) {
			t.Errorf("redirect to %s = %v; want refused", to, err)
		}
	}
	if err := c.CheckRedirect(req("https://hooks.example.com/b"), prev); err != nil {
		t.Errorf("redirect to a public https URL = %v; want followed", err)
	}
	if err := c.CheckRedirect(req("https://hooks.example.com/b"), append(prev, prev[0], prev[0])); !errors.Is(err, ErrBlocked) {
		t.Errorf("a fourth redirect = %v; want refused", err)
	}
}

// TestSignature: a signed body verifies with its secret only, unchanged,
// and within the tolerance; a header may carry a second signature while a
// secret is replaced.
func TestSignature(t *testing.T) {
	t.Parallel()
	secret, body := []byte("whsec_test"), []byte(`{"id":"n1","type":"question.asked"}`)
	at := time.Unix(1767225600, 0)
	h := Sign(secret, at, body)
	if !strings.HasPrefix(h, "t=1767225600,v1=") || len(h) != len("t=1767225600,v1=")+64 {
		t.Fatalf("Sign = %q; want t=<unix>,v1=<64 hex>", h)
	}
	if err := Verify(secret, h, body, at.Add(time.Minute), DefaultTolerance); err != nil {
		t.Errorf("Verify(own signature) = %v", err)
	}
	for name, tc := range map[string]struct {
		secret []byte
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		"other secret":    {[]byte("whsec_other"), h, body, at, ErrBadSignature},
		"changed body":    {secret, h, []byte(`{"id":"n2"}`), at, ErrBadSignature},
		"replayed later":  {secret, h, body, at.Add(6 * time.Minute), ErrStale},
		"from the future": {secret, h, body, at.Add(-6 * time.Minute), ErrStale},
		"no timestamp":    {secret, "v1=" + strings.Repeat("0", 64), body, at, ErrBadSignature},
		"garbage":         {secret, "sha256=abc", body, at, ErrBadSignature},
	} {
		if err := Verify(tc.secret, tc.header, tc.body, tc.now, DefaultTolerance); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", name, err, tc.want)
		}
	}
	rotating := Sign([]byte("whsec_old"), at, body) + ",v1=" + strings.TrimPrefix(h, "t=1767225600,v1=")
	if err := Verify(secret, rotating, body, at, DefaultTolerance); err != nil {
		t.Errorf("Verify with two signatures, one matching = %v", err)
	}
}
