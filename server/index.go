package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
)

// index describes the service and how to add it to Claude Code.
func index(version, publicURL string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		base := publicURL
		if base == "" {
			base = guessBaseURL(r)
		}
		endpoint := base + "/mcp"
		writeJSON(w, http.StatusOK, map[string]string{
			"service":        "ctalk",
			"description":    "Ask coworkers questions through Claude Code; answers are sent only after the person approves them.",
			"version":        version,
			"mcp_endpoint":   endpoint,
			"claude_mcp_add": "claude mcp add --transport http ctalk " + endpoint + " -s user",
			"health":         base + "/health",
		})
	}
}

// guessBaseURL is the URL clients reach this server at when none is
// configured. The Host header is the caller's word: GET / suggests a
// command line to paste into a shell, so Host counts only when it is a
// plain host[:port] (a name of letters, digits, dots and hyphens, or an IP
// address); anything else could smuggle shell syntax into that line, and
// http://localhost is suggested instead. Hosts such as Railway and Render
// terminate TLS in front of ctalk and say so in X-Forwarded-Proto, whose
// only effect here is http or https.
func guessBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	host := r.Host
	if !plainHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

var (
	dnsName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	port    = regexp.MustCompile(`^[0-9]{1,5}$`)
)

// plainHost reports whether hostport is a DNS name, an IPv4 address or a
// bracketed IPv6 address, with an optional numeric port, and nothing else.
func plainHost(hostport string) bool {
	if hostport == "" || len(hostport) > 260 {
		return false
	}
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		if !port.MatchString(hostport[i+1:]) {
			return false
		}
		host = hostport[:i]
	}
	if inner, ok := strings.CutPrefix(host, "["); ok {
		a, err := netip.ParseAddr(strings.TrimSuffix(inner, "]"))
		return strings.HasSuffix(inner, "]") && err == nil && a.Is6() && a.Zone() == ""
	}
	return len(host) <= 253 && dnsName.MatchString(host)
}

// safePath matches a URL path that needs no quoting in a shell.
var safePath = regexp.MustCompile(`^[A-Za-z0-9._~/-]*$`)

// ParsePublicURL checks CTALK_PUBLIC_URL: an absolute http or https URL
// such as https://ctalk.example.com (a path prefix is allowed), without
// credentials, query or fragment. It returns the URL without a trailing
// slash; the empty string stays empty (GET / then guesses from the request).
func ParsePublicURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	fail := func(why string) (string, error) {
		return "", fmt.Errorf("public URL %q %s: give the address clients use, such as https://ctalk.example.com", s, why)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fail("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fail("must start with https:// or http://")
	case u.User != nil:
		return fail("must not contain a user name or password")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return fail("must not have a query (?) or fragment (#)")
	case !plainHost(u.Host):
		return fail("needs a plain host name or IP address, with an optional port")
	case !safePath.MatchString(u.Path) || u.RawPath != "":
		return fail("has a path with characters other than letters, digits and . _ ~ / -")
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}
