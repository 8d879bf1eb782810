package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// docServer serves handler and counts the requests it gets.
type docServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newDocServer(t *testing.T, tls bool, handler http.HandlerFunc) *docServer {
	t.Helper()
	s := &docServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		handler(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// serveDoc answers every request with the JSON of doc, where the string
// "SELF" is replaced by the URL requested.
func serveDoc(doc map[string]any, header http.Header) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		self := "http://" + r.Host + r.URL.RequestURI()
		if r.TLS != nil {
			self = "https://" + r.Host + r.URL.RequestURI()
		}
		b, _ := json.Marshal(doc)
		b = []byte(strings.ReplaceAll(string(b), `"SELF"`, fmt.Sprintf("%q", self)))
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

func claudeLikeDoc() map[string]any {
	return map[string]any{
		"client_id":   "SELF",
		"client_name": "Claude",
		"client_uri":  "https://claude.ai",
		"redirect_uris": []string{
			"https://claude.ai/api/mcp/auth_callback",
			"https://claude.com/api/mcp/auth_callback",
		},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
}

func newTestFetcher(t *testing.T, opts FetcherOptions, allow ...*docServer) (*Fetcher, *fakeClock) {
	t.Helper()
	for _, s := range allow {
		opts.Allow = append(opts.Allow, s.URL)
	}
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	f.now = clock.Now
	return f, clock
}

func wantClientError(t *testing.T, err error, code string, contains ...string) *ClientError {
	t.Helper()
	var ce *ClientError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want a *ClientError", err, err)
	}
	if ce.Code != code {
		t.Errorf("code = %q, want %q (%s)", ce.Code, code, ce.Description)
	}
	for _, c := range contains {
		if !strings.Contains(ce.Description, c) {
			t.Errorf("description %q does not contain %q", ce.Description, c)
		}
	}
	return ce
}

func TestIsMetadataURL(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"https://claude.ai/oauth/mcp-oauth-client-metadata", true},
		{"https://claude.ai/oauth/claude-code-client-metadata", true},
		{"https://example.com:8443/client.json?v=1", true},
		{"https://example.com/", true},
		{"https://example.com", false},
		{"http://example.com/client.json", false},
		{"HTTPS://example.com/client.json", false},
		{"https://user:pw@example.com/client.json", false},
		{"https://example.com/client.json#x", false},
		{"https://example.com/client.json#", false},
		{"https://example.com/a/../client.json", false},
		{"https://example.com/./client.json", false},
		{"https://example.com/a/%2e%2e/client.json", false},
		{"https://example.com:0/client.json", false},
		{"https://example.com:/client.json", false},
		{"https:///client.json", false},
		{"https://exa mple.com/client.json", false},
		{"https://exämple.com/client.json", false},
		{"https://example.com/" + strings.Repeat("a", MaxClientIDURLBytes), false},
		{"4b7d1e0c-6f1a-4c1e-9a55-2c6f0e3b9d21", false},
		{"", false},
	} {
		if got := IsMetadataURL(tc.id); got != tc.want {
			t.Errorf("IsMetadataURL(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestFetcherIsMetadataURLHonoursAllow(t *testing.T) {
	f, _ := newTestFetcher(t, FetcherOptions{Allow: []string{"http://127.0.0.1:8123"}})
	for id, want := range map[string]bool{
		"http://127.0.0.1:8123/client.json":                   true,
		"http://127.0.0.1:8124/client.json":                   false,
		"http://127.0.0.1:8123":                               false,
		"http://localhost:8123/client.json":                   false,
		"https://claude.ai/oauth/claude-code-client-metadata": true,
		"9f0c4a1e-dcr-client":                                 false,
	} {
		if got := f.IsMetadataURL(id); got != want {
			t.Errorf("Fetcher.IsMetadataURL(%q) = %v, want %v", id, got, want)
		}
	}
	if IsMetadataURL("http://127.0.0.1:8123/client.json") {
		t.Error("the package's IsMetadataURL accepts http")
	}
}

func TestFetchGoodDocument(t *testing.T) {
	s := newDocServer(t, false, serveDoc(claudeLikeDoc(), nil))
	f, _ := newTestFetcher(t, FetcherOptions{}, s)
	id := s.URL + "/oauth/mcp-oauth-client-metadata"
	got, err := f.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := Client{
		ID:   id,
		Name: "Claude",
		RedirectURIs: []string{
			"https://claude.ai/api/mcp/auth_callback",
			"https://claude.com/api/mcp/auth_callback",
		},
		Metadata: true,
		URI:      "https://claude.ai",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("client (-want +got):\n%s", d)
	}
}

func TestFetchDocumentWithoutNameIsNamedByHost(t *testing.T) {
	doc := map[string]any{
		"client_id":     "SELF",
		"redirect_uris": []string{"http://localhost/callback", "http://127.0.0.1/callback"},
		"client_uri":    "javascript:alert(1)",
	}
	s := newDocServer(t, false, serveDoc(doc, nil))
	f, _ := newTestFetcher(t, FetcherOptions{}, s)
	got, err := f.Get(context.Background(), s.URL+"/oauth/claude-code-client-metadata")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "127.0.0.1" {
		t.Errorf("name = %q, want the URL's host 127.0.0.1", got.Name)
	}
	if got.URI != "" {
		t.Errorf("URI = %q, want a bad client_uri dropped", got.URI)
	}
}

func TestFetchRefusesBadDocuments(t *testing.T) {
	with := func(k string, v any) map[string]any {
		d := claudeLikeDoc()
		if v == nil {
			delete(d, k)
		} else {
			d[k] = v
		}
		return d
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"client_id of another URL", serveDoc(with("client_id", "https://claude.ai/oauth/mcp-oauth-client-metadata"), nil), "client_id"},
		{"client_id with a trailing slash", func(w http.ResponseWriter, r *http.Request) {
			serveDoc(with("client_id", "http://"+r.Host+r.URL.Path+"/"), nil)(w, r)
		}, "client_id"},
		{"no client_id", serveDoc(with("client_id", nil), nil), "client_id"},
		{"client_id not a string", serveDoc(with("client_id", 7), nil), "client_id"},
		{"client_secret", serveDoc(with("client_secret", "s3cret-value"), nil), "client_secret"},
		{"private_key_jwt", serveDoc(with("token_endpoint_auth_method", "private_key_jwt"), nil), "use none"},
		{"client_secret_basic", serveDoc(with("token_endpoint_auth_method", "client_secret_basic"), nil), "use none"},
		{"no redirect_uris", serveDoc(with("redirect_uris", nil), nil), "redirect_uris"},
		{"empty redirect_uris", serveDoc(with("redirect_uris", []string{}), nil), "redirect_uris"},
		{"redirect_uris a string", serveDoc(with("redirect_uris", "https://claude.ai/cb"), nil), "redirect_uris"},
		{"relative redirect URI", serveDoc(with("redirect_uris", []string{"/callback"}), nil), "absolute"},
		{"redirect URI with fragment", serveDoc(with("redirect_uris", []string{"https://claude.ai/cb#x"}), nil), "fragment"},
		{"http redirect to a public host", serveDoc(with("redirect_uris", []string{"http://claude.ai/cb"}), nil), "https"},
		{"javascript redirect", serveDoc(with("redirect_uris", []string{"javascript:alert(1)"}), nil), "javascript"},
		{"client_name too long", serveDoc(with("client_name", strings.Repeat("é", MaxClientNameRunes+1)), nil), "client_name"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>s3cret-value</html>")) }, "not a JSON object"},
		{"JSON array", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`["s3cret-value"]`)) }, "not a JSON object"},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "s3cret-value", http.StatusNotFound) }, "HTTP 404"},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "s3cret-value", http.StatusInternalServerError)
		}, "HTTP 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDocServer(t, false, tc.handler)
			f, _ := newTestFetcher(t, FetcherOptions{}, s)
			id := s.URL + "/client.json"
			_, err := f.Get(context.Background(), id)
			ce := wantClientError(t, err, "invalid_client", id, tc.want)
			if strings.Contains(ce.Description, "s3cret-value") {
				t.Errorf("description echoes the document: %q", ce.Description)
			}
		})
	}
}

func TestFetchRefusesOversizedDocument(t *testing.T) {
	doc := claudeLikeDoc()
	doc["padding"] = strings.Repeat("x", DefaultFetchMaxBytes)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				if chunked {
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush() // no Content-Length from here on
				}
				serveDoc(doc, nil)(w, r)
			})
			f, _ := newTestFetcher(t, FetcherOptions{}, s)
			_, err := f.Get(context.Background(), s.URL+"/client.json")
			wantClientError(t, err, "invalid_client", fmt.Sprintf("larger than %d bytes", DefaultFetchMaxBytes))
		})
	}
	// The same document under a larger cap is fine: the size is the reason.
	s := newDocServer(t, false, serveDoc(doc, nil))
	f, _ := newTestFetcher(t, FetcherOptions{MaxBytes: 2 * DefaultFetchMaxBytes}, s)
	if _, err := f.Get(context.Background(), s.URL+"/client.json"); err != nil {
		t.Fatalf("under a 10 KiB cap: %v", err)
	}
}

func TestFetchTimesOut(t *testing.T) {
	release := make(chan struct{})
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // registered after s.Close, so runs before it
	f, _ := newTestFetcher(t, FetcherOptions{Timeout: 100 * time.Millisecond}, s)
	_, err := f.Get(context.Background(), s.URL+"/client.json")
	wantClientError(t, err, "invalid_client", "no complete answer within 100ms")
}

func TestFetchRefusesRedirects(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var targetHits atomic.Int64
			good := serveDoc(claudeLikeDoc(), nil)
			s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/moved.json" {
					targetHits.Add(1)
					good(w, r)
					return
				}
				http.Redirect(w, r, "/moved.json", code)
			})
			f, _ := newTestFetcher(t, FetcherOptions{}, s)
			_, err := f.Get(context.Background(), s.URL+"/client.json")
			wantClientError(t, err, "invalid_client", "redirect", fmt.Sprintf("HTTP %d", code))
			if n := targetHits.Load(); n != 0 {
				t.Errorf("the redirect target was fetched %d times", n)
			}
		})
	}
}

func TestFetchRefusesPrivateAddresses(t *testing.T) {
	// An https server on 127.0.0.1 whose certificate the fetcher trusts:
	// without the address rule, the fetch would succeed (checked last).
	s := newDocServer(t, true, serveDoc(claudeLikeDoc(), nil))
	port := s.Listener.Addr().(*net.TCPAddr).Port
	resolveTo := func(addrs ...string) func(context.Context, string, string) ([]netip.Addr, error) {
		return func(_ context.Context, _, host string) ([]netip.Addr, error) {
			var ips []netip.Addr
			for _, a := range addrs {
				ips = append(ips, netip.MustParseAddr(a))
			}
			return ips, nil
		}
	}
	for _, tc := range []struct {
		name   string
		id     string
		lookup func(context.Context, string, string) ([]netip.Addr, error)
	}{
		{"loopback literal", fmt.Sprintf("https://127.0.0.1:%d/client.json", port), nil},
		{"name resolving to loopback (rebinding)", fmt.Sprintf("https://rebind.test:%d/client.json", port), resolveTo("127.0.0.1")},
		{"name resolving to 10/8", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("10.0.0.7")},
		{"name resolving to public and private", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("93.184.215.14", "192.168.1.5")},
		{"name resolving to IPv4-mapped loopback", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("::ffff:127.0.0.1")},
		{"name resolving to ULA", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("fd12::1")},
		{"name resolving to CGNAT", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("100.64.1.1")},
		{"name resolving to link-local", fmt.Sprintf("https://client.test:%d/client.json", port), resolveTo("169.254.169.254")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newTestFetcher(t, FetcherOptions{HTTPClient: s.Client(), LookupNetIP: tc.lookup})
			_, err := f.Get(context.Background(), tc.id)
			wantClientError(t, err, "invalid_client", tc.id, "public addresses")
		})
	}
	if n := s.hits.Load(); n != 0 {
		t.Errorf("the private server got %d requests", n)
	}

	// Plain http to a loopback origin that is not on the allow-list is
	// refused before any connection.
	plain := newDocServer(t, false, serveDoc(claudeLikeDoc(), nil))
	f, _ := newTestFetcher(t, FetcherOptions{})
	_, err := f.Get(context.Background(), plain.URL+"/client.json")
	wantClientError(t, err, "invalid_request", "https://")
	if n := plain.hits.Load(); n != 0 {
		t.Errorf("the http server got %d requests", n)
	}

	// The control: allowing the origin is all it takes to fetch it.
	f, _ = newTestFetcher(t, FetcherOptions{HTTPClient: s.Client()}, s)
	if _, err := f.Get(context.Background(), fmt.Sprintf("https://127.0.0.1:%d/client.json", port)); err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
}

func TestControlHookRefusesPrivateAddresses(t *testing.T) {
	for addr, want := range map[string]error{
		"127.0.0.1:443":        errBlockedAddress,
		"[::1]:443":            errBlockedAddress,
		"10.1.2.3:443":         errBlockedAddress,
		"[fe80::1%eth0]:443":   errBlockedAddress,
		"0.0.0.0:443":          errBlockedAddress,
		"not an address":       errBlockedAddress,
		"93.184.215.14:443":    nil,
		"[2606:4700::1111]:80": nil,
	} {
		if got := controlPublic("tcp", addr, nil); got != want {
			t.Errorf("controlPublic(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestPublicAddr(t *testing.T) {
	for a, want := range map[string]bool{
		"8.8.8.8": true, "93.184.215.14": true, "2606:4700::1111": true, "2a00:1450:4001::200e": true,
		"0.0.0.0": false, "0.1.2.3": false, "10.0.0.1": false, "100.64.0.1": false, "100.127.255.254": false,
		"127.0.0.1": false, "127.8.9.10": false, "169.254.169.254": false, "172.16.0.1": false,
		"172.31.255.255": false, "192.0.0.8": false, "192.0.2.1": false, "192.168.1.1": false,
		"198.18.0.1": false, "198.51.100.1": false, "203.0.113.1": false, "224.0.0.1": false,
		"239.255.255.250": false, "240.0.0.1": false, "255.255.255.255": false,
		"::": false, "::1": false, "::ffff:10.0.0.1": false, "::ffff:127.0.0.1": false, "::127.0.0.1": false,
		"64:ff9b::a00:1": false, "2001::1": false, "2001:db8::1": false, "2002:a00:1::1": false,
		"fc00::1": false, "fd00::1": false, "fe80::1": false, "fec0::1": false, "ff02::1": false,
		"100.63.255.255": true, "100.128.0.0": true, "172.32.0.1": true,
	} {
		if got := PublicAddr(netip.MustParseAddr(a)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", a, got, want)
		}
	}
	if PublicAddr(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestFetchCachesDocuments(t *testing.T) {
	s := newDocServer(t, false, serveDoc(claudeLikeDoc(), nil))
	f, clock := newTestFetcher(t, FetcherOptions{}, s)
	id := s.URL + "/client.json"
	get := func() {
		t.Helper()
		c, err := f.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		c.RedirectURIs[0] = "https://evil.example/cb" // a caller's change stays its own
	}
	get()
	get()
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("two Gets made %d requests, want 1", n)
	}
	c, _ := f.Get(context.Background(), id)
	if c.RedirectURIs[0] != "https://claude.ai/api/mcp/auth_callback" {
		t.Errorf("cached redirect URIs changed by a caller: %v", c.RedirectURIs)
	}
	clock.Advance(DefaultCacheTTL - time.Second)
	get()
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("within the TTL: %d requests, want 1", n)
	}
	clock.Advance(2 * time.Second)
	get()
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("after the TTL: %d requests, want 2", n)
	}
}

func TestFetchHonoursMaxAge(t *testing.T) {
	s := newDocServer(t, false, serveDoc(claudeLikeDoc(), http.Header{"Cache-Control": {"public, max-age=7200"}}))
	f, clock := newTestFetcher(t, FetcherOptions{}, s)
	id := s.URL + "/client.json"
	for _, step := range []struct {
		advance time.Duration
		hits    int64
	}{{0, 1}, {2*time.Hour - time.Second, 1}, {2 * time.Second, 2}} {
		clock.Advance(step.advance)
		if _, err := f.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if n := s.hits.Load(); n != step.hits {
			t.Fatalf("after +%s: %d requests, want %d", step.advance, n, step.hits)
		}
	}
}

func TestCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   time.Duration
	}{
		{nil, DefaultCacheTTL},
		{[]string{"max-age=300"}, 5 * time.Minute},
		{[]string{"public, max-age=3600"}, time.Hour},
		{[]string{"max-age=0"}, MinCacheTTL},
		{[]string{"max-age=5"}, MinCacheTTL},
		{[]string{"max-age=999999999999"}, MaxCacheTTL},
		{[]string{"max-age=-3"}, DefaultCacheTTL},
		{[]string{"max-age=abc"}, DefaultCacheTTL},
		{[]string{"no-store"}, MinCacheTTL},
		{[]string{"max-age=600", "no-cache"}, MinCacheTTL},
		{[]string{`max-age="120"`}, 2 * time.Minute},
	} {
		h := http.Header{"Cache-Control": tc.header}
		if got := cacheTTL(h, DefaultCacheTTL); got != tc.want {
			t.Errorf("cacheTTL(%q) = %s, want %s", tc.header, got, tc.want)
		}
	}
}

func TestFetchRemembersFailuresBriefly(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	good := serveDoc(claudeLikeDoc(), nil)
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		good(w, r)
	})
	f, clock := newTestFetcher(t, FetcherOptions{}, s)
	id := s.URL + "/client.json"
	for range 3 {
		_, err := f.Get(context.Background(), id)
		wantClientError(t, err, "invalid_client", "HTTP 503")
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("three Gets of a failing URL made %d requests, want 1", n)
	}
	broken.Store(false)
	clock.Advance(DefaultFailureTTL + time.Second)
	if _, err := f.Get(context.Background(), id); err != nil {
		t.Fatalf("after the failure TTL: %v", err)
	}
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestFetchCacheEvictsOldest(t *testing.T) {
	s := newDocServer(t, false, serveDoc(claudeLikeDoc(), nil))
	f, _ := newTestFetcher(t, FetcherOptions{CacheEntries: 2}, s)
	get := func(path string) {
		t.Helper()
		if _, err := f.Get(context.Background(), s.URL+path); err != nil {
			t.Fatal(err)
		}
	}
	get("/a")
	get("/b")
	get("/c") // evicts /a
	if n := f.cached(); n != 2 {
		t.Errorf("cache holds %d entries, want 2", n)
	}
	get("/c")
	get("/b")
	if n := s.hits.Load(); n != 3 {
		t.Fatalf("%d requests, want 3 (b and c cached)", n)
	}
	get("/a")
	if n := s.hits.Load(); n != 4 {
		t.Fatalf("%d requests, want 4 (a was evicted)", n)
	}
}

func TestFetchCollapsesConcurrentGets(t *testing.T) {
	const callers = 8
	started := make(chan struct{}, callers)
	release := make(chan struct{})
	good := serveDoc(claudeLikeDoc(), nil)
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		good(w, r)
	})
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // registered after s.Close, so runs before it: a failed test does not hang
	f, _ := newTestFetcher(t, FetcherOptions{Timeout: time.Minute}, s)
	id := s.URL + "/client.json"
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := f.Get(context.Background(), id)
			errs <- err
		})
	}
	<-started
	// Wait until every other caller has joined the fetch in flight.
	for {
		f.mu.Lock()
		call := f.inflight[id]
		joined := call != nil && call.waiters == callers-1
		f.mu.Unlock()
		if joined {
			break
		}
		if len(started) > 0 {
			releaseAll()
			t.Fatal("a second request reached the server while the first was in flight")
		}
		runtime.Gosched()
	}
	releaseAll()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("%d concurrent Gets made %d requests, want 1", callers, n)
	}
}

func TestFetchBoundsConcurrentFetches(t *testing.T) {
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	good := serveDoc(claudeLikeDoc(), nil)
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			started <- struct{}{}
			<-release
		}
		good(w, r)
	})
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // registered after s.Close, so runs before it: a failed test does not hang
	f, _ := newTestFetcher(t, FetcherOptions{Timeout: time.Minute, MaxConcurrentFetches: 1}, s)
	first := make(chan error, 1)
	go func() {
		_, err := f.Get(context.Background(), s.URL+"/a")
		first <- err
	}()
	<-started
	_, err := f.Get(context.Background(), s.URL+"/b")
	wantClientError(t, err, "invalid_client", "too many", s.URL+"/b")
	releaseAll()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The refusal was not remembered, and the slot is free again.
	if _, err := f.Get(context.Background(), s.URL+"/b"); err != nil {
		t.Fatal(err)
	}
	if n := s.hits.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestFetchCallerCancellation(t *testing.T) {
	release := make(chan struct{})
	good := serveDoc(claudeLikeDoc(), nil)
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		<-release
		good(w, r)
	})
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // registered after s.Close, so runs before it: a failed test does not hang
	f, _ := newTestFetcher(t, FetcherOptions{Timeout: time.Minute}, s)
	id := s.URL + "/client.json"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Get(ctx, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: err = %v, want context.Canceled", err)
	}
	// The fetch it started goes on, for the next caller and the cache.
	releaseAll()
	if _, err := f.Get(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestNewFetcherChecksOptions(t *testing.T) {
	for _, a := range []string{"127.0.0.1:8123", "http://127.0.0.1:8123/path", "ftp://127.0.0.1", "http://", "http://u@127.0.0.1:1"} {
		if _, err := NewFetcher(FetcherOptions{Allow: []string{a}}); err == nil {
			t.Errorf("Allow %q accepted", a)
		}
	}
	if _, err := NewFetcher(FetcherOptions{Allow: []string{"http://127.0.0.1:8123", " http://[::1]:9/ ", ""}}); err != nil {
		t.Errorf("good Allow refused: %v", err)
	}
	odd := &http.Client{Transport: roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("x") })}
	if _, err := NewFetcher(FetcherOptions{HTTPClient: odd}); err == nil {
		t.Error("a non-*http.Transport transport was accepted (it would bypass the address rules)")
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestValidateRegistration(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Client
		code string // "" = valid
		msg  string
	}{
		{"claude.ai", `{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","scope":"ctalk offline_access"}`,
			Client{Name: "Claude", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"}}, "", ""},
		{"loopback and private-use", `{"client_name":"  App  ","client_uri":"https://app.example","redirect_uris":["http://127.0.0.1:33418/callback","http://[::1]/cb","http://localhost/cb","com.example.app:/oauth2redirect","cursor://anysphere.cursor-retrieval/oauth/callback"]}`,
			Client{Name: "App", URI: "https://app.example", RedirectURIs: []string{"http://127.0.0.1:33418/callback", "http://[::1]/cb", "http://localhost/cb", "com.example.app:/oauth2redirect", "cursor://anysphere.cursor-retrieval/oauth/callback"}}, "", ""},
		{"no name", `{"redirect_uris":["https://a.example/cb"]}`, Client{Name: DefaultClientName, RedirectURIs: []string{"https://a.example/cb"}}, "", ""},
		{"blank name", `{"client_name":"   ","redirect_uris":["https://a.example/cb"]}`, Client{Name: DefaultClientName, RedirectURIs: []string{"https://a.example/cb"}}, "", ""},
		{"name of 200 runes", `{"client_name":"` + strings.Repeat("ж", 200) + `","redirect_uris":["https://a.example/cb"]}`, Client{Name: strings.Repeat("ж", 200), RedirectURIs: []string{"https://a.example/cb"}}, "", ""},
		{"20 redirect URIs", `{"redirect_uris":[` + strings.TrimSuffix(strings.Repeat(`"https://a.example/cb",`, 20), ",") + `]}`, Client{Name: DefaultClientName, RedirectURIs: func() []string {
			var r []string
			for range 20 {
				r = append(r, "https://a.example/cb")
			}
			return r
		}()}, "", ""},

		{"not JSON", `redirect_uris=https://a.example/cb`, Client{}, "invalid_client_metadata", "JSON object"},
		{"JSON array", `[]`, Client{}, "invalid_client_metadata", "JSON object"},
		{"no redirect_uris", `{"client_name":"x"}`, Client{}, "invalid_redirect_uri", "required"},
		{"null redirect_uris", `{"redirect_uris":null}`, Client{}, "invalid_redirect_uri", "required"},
		{"empty redirect_uris", `{"redirect_uris":[]}`, Client{}, "invalid_redirect_uri", "required"},
		{"redirect_uris a string", `{"redirect_uris":"https://a.example/cb"}`, Client{}, "invalid_redirect_uri", "array of strings"},
		{"redirect_uris of numbers", `{"redirect_uris":[1]}`, Client{}, "invalid_redirect_uri", "array of strings"},
		{"relative", `{"redirect_uris":["/cb"]}`, Client{}, "invalid_redirect_uri", "absolute"},
		{"empty string", `{"redirect_uris":[""]}`, Client{}, "invalid_redirect_uri", "empty"},
		{"fragment", `{"redirect_uris":["https://a.example/cb#frag"]}`, Client{}, "invalid_redirect_uri", "fragment"},
		{"empty fragment", `{"redirect_uris":["https://a.example/cb#"]}`, Client{}, "invalid_redirect_uri", "fragment"},
		{"http public", `{"redirect_uris":["http://a.example/cb"]}`, Client{}, "invalid_redirect_uri", "use https"},
		{"http to 127.0.0.2", `{"redirect_uris":["http://127.0.0.2/cb"]}`, Client{}, "invalid_redirect_uri", "use https"},
		{"http to localhost.evil", `{"redirect_uris":["http://localhost.evil.example/cb"]}`, Client{}, "invalid_redirect_uri", "use https"},
		{"http with user at loopback", `{"redirect_uris":["http://evil.example@127.0.0.1/cb"]}`, Client{}, "invalid_redirect_uri", "user"},
		{"https without host", `{"redirect_uris":["https:///cb"]}`, Client{}, "invalid_redirect_uri", "host"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, Client{}, "invalid_redirect_uri", "javascript"},
		{"data", `{"redirect_uris":["data:text/html,hi"]}`, Client{}, "invalid_redirect_uri", "data"},
		{"upper-case scheme", `{"redirect_uris":["HTTPS://a.example/cb"]}`, Client{}, "invalid_redirect_uri", "lower case"},
		{"space", `{"redirect_uris":["https://a.example/c b"]}`, Client{}, "invalid_redirect_uri", "spaces"},
		{"second URI bad", `{"redirect_uris":["https://a.example/cb","http://a.example/cb"]}`, Client{}, "invalid_redirect_uri", "redirect_uris[1]"},
		{"21 redirect URIs", `{"redirect_uris":[` + strings.TrimSuffix(strings.Repeat(`"https://a.example/cb",`, 21), ",") + `]}`, Client{}, "invalid_redirect_uri", "at most 20"},
		{"long redirect URI", `{"redirect_uris":["https://a.example/` + strings.Repeat("a", MaxRedirectURIBytes) + `"]}`, Client{}, "invalid_redirect_uri", "longer than 2000 bytes"},
		{"client_secret_basic", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, Client{}, "invalid_client_metadata", "ctalk issues public clients only: use token_endpoint_auth_method none"},
		{"client_secret_post", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_post"}`, Client{}, "invalid_client_metadata", "use token_endpoint_auth_method none"},
		{"private_key_jwt", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, Client{}, "invalid_client_metadata", "use token_endpoint_auth_method none"},
		{"client_credentials", `{"redirect_uris":["https://a.example/cb"],"grant_types":["authorization_code","client_credentials"]}`, Client{}, "invalid_client_metadata", "client_credentials"},
		{"implicit", `{"redirect_uris":["https://a.example/cb"],"grant_types":["implicit"],"response_types":["token"]}`, Client{}, "invalid_client_metadata", "implicit"},
		{"response type token", `{"redirect_uris":["https://a.example/cb"],"response_types":["code","token"]}`, Client{}, "invalid_client_metadata", "token"},
		{"grant_types a string", `{"redirect_uris":["https://a.example/cb"],"grant_types":"authorization_code"}`, Client{}, "invalid_client_metadata", "grant_types"},
		{"name of 201 runes", `{"client_name":"` + strings.Repeat("ж", 201) + `","redirect_uris":["https://a.example/cb"]}`, Client{}, "invalid_client_metadata", "longer than 200"},
		{"name with control", `{"client_name":"a\u0007b","redirect_uris":["https://a.example/cb"]}`, Client{}, "invalid_client_metadata", "control"},
		{"name with bidi override", `{"client_name":"a\u202eb","redirect_uris":["https://a.example/cb"]}`, Client{}, "invalid_client_metadata", "control"},
		{"client_uri javascript", `{"client_uri":"javascript:alert(1)","redirect_uris":["https://a.example/cb"]}`, Client{}, "invalid_client_metadata", "client_uri"},
		{"too large", `{"redirect_uris":["https://a.example/cb"],"x":"` + strings.Repeat("a", MaxRegistrationBytes) + `"}`, Client{}, "invalid_client_metadata", "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rerr := ValidateRegistration([]byte(tc.body))
			if tc.code == "" {
				if rerr != nil {
					t.Fatalf("refused: %v", rerr)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("client (-want +got):\n%s", d)
				}
				return
			}
			if rerr == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if rerr.Code != tc.code || !strings.Contains(rerr.Description, tc.msg) {
				t.Errorf("error = %v, want code %s mentioning %q", rerr, tc.code, tc.msg)
			}
		})
	}
}

func TestRedirectAllowed(t *testing.T) {
	claudeWeb := []string{"https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"}
	claudeCode := []string{"http://localhost/callback", "http://127.0.0.1/callback"}
	withPort := []string{"http://127.0.0.1:8080/cb?x=1", "http://[::1]/cb"}
	app := []string{"com.example.app:/oauth2redirect", "https://app.example:8443/cb?a=b"}
	for _, tc := range []struct {
		reg  []string
		got  string
		want bool
	}{
		{claudeWeb, "https://claude.ai/api/mcp/auth_callback", true},
		{claudeWeb, "https://claude.com/api/mcp/auth_callback", true},
		{claudeWeb, "https://claude.ai/api/mcp/auth_callback/", false},
		{claudeWeb, "https://claude.ai/api/mcp/auth_callback?x=1", false},
		{claudeWeb, "https://claude.ai:443/api/mcp/auth_callback", false},
		{claudeWeb, "https://claude.ai:8443/api/mcp/auth_callback", false},
		{claudeWeb, "https://Claude.ai/api/mcp/auth_callback", false},
		{claudeWeb, "http://claude.ai/api/mcp/auth_callback", false},
		{claudeWeb, "https://claude.ai/api/mcp/auth_callback#x", false},
		{claudeWeb, "https://evil.example/api/mcp/auth_callback", false},
		{claudeWeb, "https://claude.ai.evil.example/api/mcp/auth_callback", false},
		{claudeWeb, "https://claude.ai@evil.example/api/mcp/auth_callback", false},
		{claudeWeb, "", false},

		{claudeCode, "http://localhost/callback", true},
		{claudeCode, "http://localhost:54321/callback", true},
		{claudeCode, "http://127.0.0.1:1/callback", true},
		{claudeCode, "http://127.0.0.1:65535/callback", true},
		{claudeCode, "http://127.0.0.1:65536/callback", false},
		{claudeCode, "http://127.0.0.1:0/callback", false},
		{claudeCode, "http://127.0.0.1:/callback", false},
		{claudeCode, "http://127.0.0.1:+80/callback", false},
		{claudeCode, "http://127.0.0.1:8o/callback", false},
		{claudeCode, "http://127.0.0.1:54321/callback/", false},
		{claudeCode, "http://127.0.0.1:54321/callback?x=1", false},
		{claudeCode, "http://127.0.0.1:54321/callbackx", false},
		{claudeCode, "http://127.0.0.1:54321/Callback", false},
		{claudeCode, "http://127.0.0.1:54321/callback#x", false},
		{claudeCode, "http://[::1]:54321/callback", false}, // host must match too
		{claudeCode, "https://127.0.0.1:54321/callback", false},
		{claudeCode, "http://evil.example@127.0.0.1:54321/callback", false},
		{claudeCode, "http://127.0.0.1:54321@evil.example/callback", false},
		{claudeCode, "http://127.0.0.1.evil.example:54321/callback", false},
		{claudeCode, "http://localhost.evil.example/callback", false},
		{claudeCode, "http://LOCALHOST:5/callback", false},

		{withPort, "http://127.0.0.1:8080/cb?x=1", true},
		{withPort, "http://127.0.0.1:9090/cb?x=1", true}, // RFC 8252 §7.3: any port
		{withPort, "http://127.0.0.1/cb?x=1", true},
		{withPort, "http://127.0.0.1:9090/cb?x=2", false},
		{withPort, "http://127.0.0.1:9090/cb", false},
		{withPort, "http://[::1]:9090/cb", true},
		{withPort, "http://[::1]/cb", true},
		{withPort, "http://[::1]:9090/cb/", false},
		{withPort, "http://[::2]:9090/cb", false},

		{app, "com.example.app:/oauth2redirect", true},
		{app, "com.example.app:/oauth2redirect2", false},
		{app, "com.example.app://oauth2redirect", false},
		{app, "https://app.example:8443/cb?a=b", true},
		{app, "https://app.example:9443/cb?a=b", false}, // only loopback ports vary
		{app, "https://app.example/cb?a=b", false},

		{nil, "http://127.0.0.1/callback", false},
	} {
		if got := RedirectAllowed(tc.reg, tc.got); got != tc.want {
			t.Errorf("RedirectAllowed(%q, %q) = %v, want %v", tc.reg, tc.got, got, tc.want)
		}
	}
}
