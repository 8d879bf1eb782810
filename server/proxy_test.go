package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := ParseTrustedProxies(" 192.0.2.0/24, 2001:db8::/32 198.51.100.7,::ffff:10.1.0.0/112 ")
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("10.1.0.0/16")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); err != nil || diff != "" {
		t.Errorf("ParseTrustedProxies = %v, %v; want no error and (-want +got):\n%s", got, err, diff)
	}
	for _, preset := range []string{"private", "Railway", "render", "fly"} {
		got, err := ParseTrustedProxies(preset)
		if err != nil || !slicesHave(got, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "127.0.0.0/8", "::1/128") {
			t.Errorf("ParseTrustedProxies(%q) = %v, %v; want the private ranges and loopback", preset, got, err)
		}
	}
	if got, err := ParseTrustedProxies(""); err != nil || len(got) != 0 {
		t.Errorf("ParseTrustedProxies(\"\") = %v, %v; want nobody trusted", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "heroku", "10.0.0.0/8;rm", "fe80::1%eth0"} {
		_, err := ParseTrustedProxies("private," + bad)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) || !strings.Contains(err.Error(), "preset (private, railway, render, fly)") {
			t.Errorf("ParseTrustedProxies(%q) error = %v, want one naming the entry and what is accepted", bad, err)
		}
	}
}

func slicesHave(ps []netip.Prefix, want ...string) bool {
	have := map[string]bool{}
	for _, p := range ps {
		have[p.String()] = true
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

func TestClientKeyRules(t *testing.T) {
	t.Parallel()
	ten := proxies{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	fly := proxies{trusted: ten.trusted, header: "Fly-Client-IP"}
	for _, tc := range []struct {
		name   string
		fwd    proxies
		remote string
		header http.Header
		want   string
	}{
		{"default trusts nobody, not even loopback", proxies{}, "127.0.0.1:1", http.Header{"X-Forwarded-For": {"198.51.100.9"}}, "127.0.0.1"},
		{"default ignores the client IP header", proxies{header: "Fly-Client-IP"}, "127.0.0.1:1", http.Header{"Fly-Client-Ip": {"198.51.100.9"}}, "127.0.0.1"},
		{"IPv6 keyed by /64", proxies{}, "[2001:db8:1:2:aaaa::1]:1", nil, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6 unmapped", proxies{}, "[::ffff:203.0.113.4]:1", nil, "203.0.113.4"},
		{"rightmost untrusted wins over forged left entries", ten, "10.0.0.1:1",
			http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.9, 10.2.3.4"}}, "203.0.113.9"},
		{"all hops trusted: the leftmost", ten, "10.0.0.1:1", http.Header{"X-Forwarded-For": {"10.9.9.9, 10.2.3.4"}}, "10.9.9.9"},
		{"garbage stops the walk at the last trusted hop", ten, "10.0.0.1:1",
			http.Header{"X-Forwarded-For": {"203.0.113.9, bogus, 10.2.3.4"}}, "10.2.3.4"},
		{"entries with ports and brackets", ten, "10.0.0.1:1", http.Header{"X-Forwarded-For": {"[2001:db8::5]:443"}}, "2001:db8::/64"},
		{"client IP header from a trusted proxy", fly, "10.0.0.1:1",
			http.Header{"Fly-Client-Ip": {"198.51.100.2"}, "X-Forwarded-For": {"198.51.100.2, 203.0.113.50"}}, "198.51.100.2"},
		{"client IP header from anyone else", fly, "203.0.113.8:1", http.Header{"Fly-Client-Ip": {"198.51.100.2"}}, "203.0.113.8"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr, r.Header = tc.remote, tc.header
		if r.Header == nil {
			r.Header = http.Header{}
		}
		if got := tc.fwd.clientKey(r); got != tc.want {
			t.Errorf("%s: clientKey(%s, %v) = %s, want %s", tc.name, tc.remote, tc.header, got, tc.want)
		}
	}
	a := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	b := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	a.RemoteAddr, b.RemoteAddr = "[2001:db8::1]:1", "[2001:db8::2]:2"
	if ka, kb := (proxies{}).clientKey(a), (proxies{}).clientKey(b); ka != kb {
		t.Errorf("clientKey of 2001:db8::1 = %s and of 2001:db8::2 = %s, want one key for the /64", ka, kb)
	}
}

// toolCall posts a tools/call and returns its text and whether it is an error.
func toolCall(t *testing.T, srvURL string, header http.Header, tool string, args map[string]any) (string, bool) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	status, res := postMCP(t, srvURL, string(body), header)
	var out struct {
		IsError bool
		Content []struct{ Text string }
	}
	if status != http.StatusOK || res.Error != nil || json.Unmarshal(res.Result, &out) != nil || len(out.Content) == 0 {
		t.Fatalf("%s = %d %+v, want a tool result", tool, status, res)
	}
	return out.Content[0].Text, out.IsError
}

// TestForwardedForDoesNotDodgeThrottle: a stranger on the same host writes a
// new X-Forwarded-For on every wrong login; unless loopback is a configured
// proxy, every guess still counts against the connection's address.
func TestForwardedForDoesNotDodgeThrottle(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		for _, tc := range []struct {
			trusted   string
			throttled bool
		}{{"", true}, {"127.0.0.1/32", false}} {
			trusted, err := ParseTrustedProxies(tc.trusted)
			if err != nil {
				t.Fatalf("ParseTrustedProxies(%q): %v", tc.trusted, err)
			}
			srv := startServer(t, s, Config{TrustedProxies: trusted})
			var last string
			for i := range 25 {
				// A different account each time, so only the per-address limit can lock.
				h := mcpHeader("X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", len(tc.trusted), i+1))
				last, _ = toolCall(t, srv.URL, h, "login", map[string]any{"org_id": "acme",
					"user_id": fmt.Sprintf("guess%d-%d", len(tc.trusted), i), "password": "wrong-password"})
			}
			if got := strings.Contains(last, "too many failed password attempts"); got != tc.throttled {
				t.Errorf("trusted proxies %q: 25th wrong login from loopback with a rotated X-Forwarded-For = %q; want throttled per address: %v",
					tc.trusted, last, tc.throttled)
			}
		}
	})
}
