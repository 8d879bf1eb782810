package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// getIndex calls GET / on h directly, so any Host reaches the handler.
func getIndex(t *testing.T, h http.Handler, host string, header http.Header) map[string]string {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	r.Host = host
	for k, vs := range header {
		r.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var m map[string]string
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
		t.Fatalf("GET / with Host %q = %d %s, want 200 and a JSON object", host, rec.Code, rec.Body)
	}
	return m
}

// TestIndexHostileHost: the `claude mcp add` line GET / suggests is pasted
// into a shell, so a Host header carrying shell syntax must never reach it.
func TestIndexHostileHost(t *testing.T) {
	t.Parallel()
	h := newHandler(sqliteStore(t), Config{})
	for _, host := range []string{"evil.com; rm -rf ~", `evil.com"`, "evil.com'", "$(id).evil.com", "evil.com`id`",
		"evil.com/x", "user@evil.com", "evil.com:80:80", "evil.com:8o", "[::1", "[fe80::1%25eth0]", "evil.com\n", "-rf",
		"evil.com|sh", "evil.com&", strings.Repeat("a.", 200) + "com"} {
		got := getIndex(t, h, host, nil)
		if got["mcp_endpoint"] != "http://localhost/mcp" || got["health"] != "http://localhost/health" ||
			got["claude_mcp_add"] != "claude mcp add --transport http ctalk http://localhost/mcp -s user" {
			t.Errorf("GET / with Host %q = %v, want every URL on http://localhost", host, got)
		}
	}
	for host, want := range map[string]string{"ctalk.example.com": "http://ctalk.example.com/mcp", "10.0.0.7:8080": "http://10.0.0.7:8080/mcp",
		"[2001:db8::1]:443": "http://[2001:db8::1]:443/mcp", "Ctalk-1.example": "http://Ctalk-1.example/mcp"} {
		if got := getIndex(t, h, host, nil); got["mcp_endpoint"] != want {
			t.Errorf("GET / with Host %q: mcp_endpoint = %q, want %q", host, got["mcp_endpoint"], want)
		}
	}
}

// TestIndexPublicURL: with a public URL configured, Host and
// X-Forwarded-Proto are ignored entirely.
func TestIndexPublicURL(t *testing.T) {
	t.Parallel()
	public, err := ParsePublicURL("https://ctalk.example.com/")
	if err != nil {
		t.Fatalf("ParsePublicURL: %v", err)
	}
	h := newHandler(sqliteStore(t), Config{PublicURL: public})
	for _, host := range []string{"evil.com", "evil.com; rm -rf ~", "localhost:1234"} {
		got := getIndex(t, h, host, http.Header{"X-Forwarded-Proto": {"http"}})
		want := map[string]string{"mcp_endpoint": "https://ctalk.example.com/mcp", "health": "https://ctalk.example.com/health",
			"claude_mcp_add": "claude mcp add --transport http ctalk https://ctalk.example.com/mcp -s user"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("GET / with Host %q and CTALK_PUBLIC_URL: %s = %q, want %q", host, k, got[k], v)
			}
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                "",
		"https://ctalk.example.com":       "https://ctalk.example.com",
		" https://ctalk.example.com/ ":    "https://ctalk.example.com",
		"HTTP://127.0.0.1:8080":           "http://127.0.0.1:8080",
		"https://example.com/ctalk/":      "https://example.com/ctalk",
		"https://[2001:db8::1]:8443/team": "https://[2001:db8::1]:8443/team",
	} {
		if got, err := ParsePublicURL(in); err != nil || got != want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ctalk.example.com", "ftp://ctalk.example.com", "https://user:pw@ctalk.example.com",
		"https://ctalk.example.com/?x=1", "https://ctalk.example.com/#top", "https://ctalk.example.com?", "https://",
		"https://evil.com;rm/", "https://ctalk.example.com/a b", "https://ctalk.example.com/$(id)", "//ctalk.example.com"} {
		got, err := ParsePublicURL(bad)
		if err == nil || !strings.Contains(err.Error(), "such as https://ctalk.example.com") {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want an error that says what to give", bad, got, err)
		}
	}
}
