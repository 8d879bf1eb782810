package server_test

// Tests for claims of docs/oauth.md (O-ids) and docs/security.md (S53,
// S54, S68 as they concern /oauth/mcp and the sign-in endpoints) that no
// other test would catch if they stopped being true; see the Gaps section
// of the claims map. They reuse the helpers of oauth_e2e_test.go.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// claimHandler is ctalk's handler over store with the OAuth face on, its
// rules on clock ck, logging everything (debug included) to logs, with
// mutate's changes to the configuration.
func claimHandler(store db.Store, ck *clock, logs io.Writer, mutate func(*server.Config)) http.Handler {
	if logs == nil {
		logs = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rules := relay.New(store, relay.Options{HashConcurrency: 4, Now: ck.Now})
	c := server.Config{
		Store: store, MCP: mcp.NewServer(nil, mcp.Options{Version: "e2e", Relay: rules, Logger: logger}), Relay: rules,
		Logger: logger, Version: "e2e",
	}
	if mutate != nil {
		mutate(&c)
	}
	return server.Handler(c)
}

// envAt is an oauthEnv for a server at base, whose clients send hdr.
func envAt(cfg db.Config, base string, ck *clock, hdr http.Header) *oauthEnv {
	jar, _ := cookiejar.New(nil)
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var tr http.RoundTripper = http.DefaultTransport
	if len(hdr) > 0 {
		tr = headerTransport{http.DefaultTransport, hdr}
	}
	return &oauthEnv{
		base: base, clock: ck, cfg: cfg,
		browser: &http.Client{Jar: jar, Transport: tr, CheckRedirect: noRedirect, Timeout: time.Minute},
		api:     &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: time.Minute},
	}
}

// newClaimEnv is newOAuthEnv with a log and a changed configuration.
func newClaimEnv(t *testing.T, cfg db.Config, store db.Store, logs io.Writer, mutate func(*server.Config)) *oauthEnv {
	t.Helper()
	ck := &clock{}
	ts := httptest.NewServer(claimHandler(store, ck, logs, mutate))
	t.Cleanup(ts.Close)
	return envAt(cfg, ts.URL, ck, nil)
}

// trustLoopback makes the loopback peer a trusted proxy, so that a test
// names its client's address in X-Forwarded-For (see from).
func trustLoopback(c *server.Config) {
	c.TrustedProxies, _ = server.ParseTrustedProxies("127.0.0.1, ::1")
}

// from is the environment as seen by a client at addr behind the trusted
// loopback proxy. Its browser shares e's cookies.
func (e *oauthEnv) from(addr string) *oauthEnv {
	c := *e
	tr := headerTransport{http.DefaultTransport, http.Header{"X-Forwarded-For": {addr}}}
	c.browser = &http.Client{Jar: e.browser.Jar, Transport: tr, CheckRedirect: e.browser.CheckRedirect, Timeout: time.Minute}
	c.api = &http.Client{Transport: tr, CheckRedirect: e.api.CheckRedirect, Timeout: time.Minute}
	return &c
}

// submitPage posts the sign-in form and returns the whole answer.
func (e *oauthEnv) submitPage(t *testing.T, form url.Values, orgID, userID, password, decision string) (int, http.Header, string) {
	t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("org_id", orgID)
	f.Set("user_id", userID)
	f.Set("password", password)
	f.Set("decision", decision)
	resp, err := e.browser.PostForm(e.base+"/oauth/authorize", f)
	if err != nil {
		t.Fatalf("POST /oauth/authorize: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var alertText = regexp.MustCompile(`<p role="alert">([^<]*)</p>`)

// alert is the page's alert message, unescaped, or "".
func alert(body string) string {
	if m := alertText.FindStringSubmatch(body); m != nil {
		return htmlUnescape(m[1])
	}
	return ""
}

// connect signs umar in through a new authorization of clientID and
// returns the tokens.
func (e *oauthEnv) connect(t *testing.T, clientID, redirect string) tokens {
	t.Helper()
	v, ch := pkce()
	return e.exchange(t, clientID, redirect, e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar"), v)
}

func (e *oauthEnv) refresh(t *testing.T, clientID, refresh string) (int, map[string]any) {
	t.Helper()
	return e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {clientID}})
}

func wantInvalidGrant(t *testing.T, what string, status int, out map[string]any) {
	t.Helper()
	if status != http.StatusBadRequest || out["error"] != "invalid_grant" || out["access_token"] != nil {
		t.Errorf("%s: %d %v, want 400 invalid_grant and no token", what, status, out)
	}
}

// TestClaimOAuthTokenEndpointChecksResource (O5): a code or a refresh
// token presented for another resource gets invalid_target and issues nothing.
func TestClaimOAuthTokenEndpointChecksResource(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40011/callback"
		v, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		before := dbText(t, e.cfg)
		status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}, "resource": {"https://other.example/mcp"}})
		if status != http.StatusBadRequest || out["error"] != "invalid_target" || out["access_token"] != nil {
			t.Errorf("code for another resource: %d %v, want 400 invalid_target and no token", status, out)
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a code exchange for another resource stored something")
		}

		tok := e.connect(t, clientID, redirect)
		before = dbText(t, e.cfg)
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh},
			"client_id": {clientID}, "resource": {"https://other.example/mcp"}})
		if status != http.StatusBadRequest || out["error"] != "invalid_target" || out["access_token"] != nil {
			t.Errorf("refresh for another resource: %d %v, want 400 invalid_target and no token", status, out)
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a refresh for another resource stored something")
		}
		// ctalk's own resource is accepted.
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh},
			"client_id": {clientID}, "resource": {e.base + "/oauth/mcp"}})
		if status != http.StatusOK {
			t.Errorf("refresh for ctalk's resource: %d %v, want 200", status, out)
		}
	})
}

// getAs fetches path with a Host header and extra headers.
func (e *oauthEnv) getAs(t *testing.T, method, path, host string, hdr http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.base+path, nil)
	if method == http.MethodPost {
		req.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if host != "" {
		req.Host = host
	}
	resp, err := e.api.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// metadataBases returns the base URLs the discovery documents and the
// challenge name, as seen with host and hdr.
func metadataBases(t *testing.T, e *oauthEnv, host string, hdr http.Header) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration",
		"/.well-known/oauth-protected-resource/oauth/mcp", "/.well-known/oauth-protected-resource"} {
		resp := e.getAs(t, http.MethodGet, path, host, hdr)
		var doc map[string]any
		err := jsonDecode(resp, &doc)
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %s %v, want 200 with JSON", path, resp.Status, err)
		}
		if strings.Contains(path, "protected-resource") {
			got[path+" resource"] = str(doc["resource"])
			got[path+" authorization_servers"] = strings.Join(anyStrings(doc["authorization_servers"]), " ")
		} else {
			got[path+" issuer"] = str(doc["issuer"])
			got[path+" authorization_endpoint"] = str(doc["authorization_endpoint"])
			got[path+" token_endpoint"] = str(doc["token_endpoint"])
		}
	}
	resp := e.getAs(t, http.MethodPost, "/oauth/mcp", host, hdr)
	resp.Body.Close()
	got["challenge"] = resp.Header.Get("WWW-Authenticate")
	return got
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// wantBases checks every base URL in got against base.
func wantBases(t *testing.T, what string, got map[string]string, base string) {
	t.Helper()
	for k, v := range got {
		want := base
		switch {
		case strings.HasSuffix(k, " resource"):
			want = base + "/oauth/mcp"
		case strings.HasSuffix(k, " authorization_endpoint"):
			want = base + "/oauth/authorize"
		case strings.HasSuffix(k, " token_endpoint"):
			want = base + "/oauth/token"
		case k == "challenge":
			if !strings.Contains(v, `resource_metadata="`+base+`/.well-known/oauth-protected-resource/oauth/mcp"`) {
				t.Errorf("%s: challenge %q, want resource_metadata under %s", what, v, base)
			}
			continue
		}
		if v != want {
			t.Errorf("%s: %s = %q, want %q", what, k, v, want)
		}
	}
}

// TestClaimOAuthIssuerAndResource (O6, O28): with CTALK_PUBLIC_URL the
// issuer, the resource, the challenge and the answer's iss come from it,
// whatever the Host; without it from Host and X-Forwarded-Proto. The
// protected resource metadata is served with and without the path.
func TestClaimOAuthIssuerAndResource(t *testing.T) {
	t.Parallel()
	const public = "https://ctalk.example"
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		e := newClaimEnv(t, cfg, store, nil, func(c *server.Config) { c.PublicURL = public })
		hostile := http.Header{"X-Forwarded-Proto": {"http"}}
		wantBases(t, "with CTALK_PUBLIC_URL, Host evil.example", metadataBases(t, e, "evil.example", hostile), public)
		wantBases(t, "with CTALK_PUBLIC_URL, the test server's Host", metadataBases(t, e, "", nil), public)

		// The sign-in answer names the public issuer, and the code is for
		// the public resource (not the Host's).
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40012/callback"
		v, ch := pkce()
		p := e.authorizePage(t, authzParams(clientID, redirect, ch))
		var csrf *http.Cookie
		for _, c := range (&http.Response{Header: p.header}).Cookies() {
			csrf = c
		}
		if p.status != http.StatusOK || csrf == nil || csrf.Name != "__Host-ctalk_csrf" || !csrf.Secure || !csrf.HttpOnly ||
			csrf.SameSite != http.SameSiteStrictMode || csrf.Path != "/" {
			t.Fatalf("sign-in page under an https public URL: %d, cookie %+v; want __Host-ctalk_csrf, Secure, HttpOnly, SameSite=Strict, Path=/",
				p.status, csrf)
		}
		f := url.Values{}
		for k, vs := range p.form {
			f[k] = vs
		}
		f.Set("org_id", "acme")
		f.Set("user_id", "umar")
		f.Set("password", userPassword)
		f.Set("decision", "allow")
		req, _ := http.NewRequest(http.MethodPost, e.base+"/oauth/authorize", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: csrf.Name, Value: csrf.Value}) // the jar keeps Secure cookies off http
		resp, err := e.api.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("iss") != public || loc.Query().Get("code") == "" {
			t.Fatalf("sign-in post: %s to %q, want 303 with a code and iss=%s", resp.Status, resp.Header.Get("Location"), public)
		}
		code := loc.Query().Get("code")
		status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}, "resource": {e.base + "/oauth/mcp"}})
		if status != http.StatusBadRequest || out["error"] != "invalid_target" {
			t.Errorf("code exchanged for the Host's resource %s/oauth/mcp: %d %v, want invalid_target (the resource is %s/oauth/mcp)",
				e.base, status, out, public)
		}
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}, "resource": {public + "/oauth/mcp"}})
		if status != http.StatusOK {
			t.Fatalf("code exchanged for the public resource: %d %v, want 200", status, out)
		}
		// (A loopback Host: mcp-go refuses others on a loopback listener, as DNS rebinding.)
		resp = e.getAs(t, http.MethodPost, "/oauth/mcp", "localhost:9", http.Header{"Authorization": {"Bearer " + str(out["access_token"])}})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the token at /oauth/mcp under another Host: %s %s %q, want 200 (bound to the public URL)", resp.Status, b, resp.Header)
		}

		// Without a public URL: the Host, and X-Forwarded-Proto for the scheme.
		local := newClaimEnv(t, cfg, store, nil, nil)
		wantBases(t, "Host ctalk.local:8443, X-Forwarded-Proto https",
			metadataBases(t, local, "ctalk.local:8443", http.Header{"X-Forwarded-Proto": {"https"}}), "https://ctalk.local:8443")
		wantBases(t, "Host ctalk.local:8443, no X-Forwarded-Proto", metadataBases(t, local, "ctalk.local:8443", nil), "http://ctalk.local:8443")
		wantBases(t, "the test server's Host", metadataBases(t, local, "", nil), local.base)
	})
}

// TestClaimOAuthSignInPage (O7, O39, O40, O41, O42): the page says what
// the app may do; its CSP allows its one stylesheet by a fresh nonce; the
// CSRF cookie is SameSite=Strict and HttpOnly, and a post that brings no
// cookie is refused; the page and the token endpoint say no-store.
func TestClaimOAuthSignInPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40013/callback"
		v, ch := pkce()
		params := authzParams(clientID, redirect, ch)
		p := e.authorizePage(t, params)
		if p.status != http.StatusOK {
			t.Fatalf("sign-in page: %d", p.status)
		}

		// O7: who asks, and what it may do.
		for _, want := range []string{"Connect Test client to ctalk", "asks to act for you in ctalk", "If you allow it, it can:",
			"see your organization's people and your questions, answers and inbox",
			"ask coworkers questions and send answers you approve, in your name",
			"stay connected until you disconnect it"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("sign-in page does not say %q", want)
			}
		}

		// O39, O40: one stylesheet, allowed by a nonce that changes per page.
		nonceOf := func(p page) string {
			t.Helper()
			csp := p.header.Get("Content-Security-Policy")
			m := regexp.MustCompile(`(?:^|;)\s*style-src 'nonce-([A-Za-z0-9+/=]+)'\s*(?:;|$)`).FindStringSubmatch(csp)
			if m == nil || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") ||
				!strings.Contains(csp, "frame-ancestors 'none'") {
				t.Fatalf("CSP %q: want default-src 'none', style-src with only a nonce, frame-ancestors 'none', no unsafe-inline", csp)
			}
			styles := regexp.MustCompile(`<style[^>]*>`).FindAllString(htmlUnescape(p.body), -1)
			if len(styles) != 1 || styles[0] != `<style nonce="`+m[1]+`">` || strings.Contains(p.body, "<script") ||
				regexp.MustCompile(`(?i)rel="?stylesheet`).MatchString(p.body) || regexp.MustCompile(`(?i)\sstyle=`).MatchString(p.body) {
				t.Errorf("page styles %q with CSP nonce %q: want exactly one <style nonce=%q>, no other style or script", styles, m[1], m[1])
			}
			return m[1]
		}
		n1 := nonceOf(p)
		p2 := e.authorizePage(t, params)
		if n2 := nonceOf(p2); n2 == n1 || len(n1) < 16 {
			t.Errorf("nonces of two page loads: %q and %q; want fresh, unguessable ones", n1, n2)
		}

		// O41: the CSRF cookie, and a post without it.
		var cookies []*http.Cookie
		for _, c := range (&http.Response{Header: p.header}).Cookies() {
			if c.Name == "ctalk_csrf" {
				cookies = append(cookies, c)
			}
		}
		if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Value != p.form.Get("csrf_token") {
			t.Errorf("Set-Cookie %q: want one ctalk_csrf cookie, HttpOnly, SameSite=Strict, whose value the form carries",
				p.header.Values("Set-Cookie"))
		}
		before := dbText(t, e.cfg)
		noCookie := url.Values{}
		for k, vs := range p.form {
			noCookie[k] = vs
		}
		for k, val := range map[string]string{"org_id": "acme", "user_id": "umar", "password": userPassword, "decision": "allow"} {
			noCookie.Set(k, val)
		}
		resp, err := e.api.PostForm(e.base+"/oauth/authorize", noCookie) // the form's token, no cookie
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("a post with the form's token but no cookie: %s, Location %q; want 403 and no redirect", resp.Status, resp.Header.Get("Location"))
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a post without the CSRF cookie stored something")
		}

		// O42: no-store on the page, its re-render, the redirect and the token endpoint.
		noStore := func(what string, h http.Header) {
			t.Helper()
			if got := h.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: Cache-Control %q, want no-store", what, got)
			}
		}
		noStore("sign-in page", p.header)
		status, h, _ := e.submitPage(t, p.form, "acme", "umar", "wrong password", "allow")
		if status != http.StatusUnauthorized {
			t.Errorf("wrong password: %d, want 401", status)
		}
		noStore("sign-in page after a wrong password", h)
		noStore("page refusing a request", e.authorizePage(t, authzParams("ctalk-client-nope", redirect, ch)).header)
		status, h, _ = e.submitPage(t, p.form, "acme", "umar", userPassword, "allow")
		loc, _ := url.Parse(h.Get("Location"))
		if status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("sign-in: %d to %q, want 303 with a code", status, h.Get("Location"))
		}
		noStore("redirect with the code", h)
		tokenResp := func(form url.Values) (int, http.Header) {
			resp, err := e.api.PostForm(e.base+"/oauth/token", form)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body) //nolint:errcheck
			resp.Body.Close()
			return resp.StatusCode, resp.Header
		}
		status, h = tokenResp(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}})
		if status != http.StatusOK {
			t.Errorf("token exchange: %d, want 200", status)
		}
		noStore("token response", h)
		status, h = tokenResp(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"ctalk_rt_nope"}, "client_id": {clientID}})
		if status != http.StatusBadRequest {
			t.Errorf("refresh with an unknown token: %d, want 400", status)
		}
		noStore("token error response", h)
	})
}

// TestClaimOAuthConnectedTimes (O11): list_connected_clients says when the
// app connected (the sign-in) and when it last refreshed its token.
func TestClaimOAuthConnectedTimes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40014/callback"
		v, ch := pkce()
		signedIn0 := e.clock.Now().Truncate(time.Second)
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		signedIn1 := e.clock.Now().Add(time.Second)
		e.clock.advance(30 * time.Second)
		tok := e.exchange(t, clientID, redirect, code, v)

		list := func(access string) relay.ConnectedClient {
			t.Helper()
			l := callOK[relay.ConnectedClients](t, connectTo(t, e.base+"/oauth/mcp", access, ""), "list_connected_clients", args{})
			if len(l.Clients) != 1 {
				t.Fatalf("list_connected_clients = %+v, want one client", l)
			}
			return l.Clients[0]
		}
		first := list(tok.Access)
		if first.ConnectedAt.Before(signedIn0) || first.ConnectedAt.After(signedIn1) {
			t.Errorf("connected_at = %s, want the sign-in time (%s to %s)", first.ConnectedAt, signedIn0, signedIn1)
		}

		e.clock.advance(3 * time.Hour)
		refreshed0 := e.clock.Now().Truncate(time.Second)
		status, out := e.refresh(t, clientID, tok.Refresh)
		refreshed1 := e.clock.Now().Add(time.Second)
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, out)
		}
		second := list(str(out["access_token"]))
		if !second.ConnectedAt.Equal(first.ConnectedAt) {
			t.Errorf("connected_at moved from %s to %s on a refresh", first.ConnectedAt, second.ConnectedAt)
		}
		if second.LastUsedAt == nil || second.LastUsedAt.Before(refreshed0) || second.LastUsedAt.After(refreshed1) {
			t.Errorf("last_refreshed_at = %v after a refresh at %s to %s, want the refresh time", second.LastUsedAt, refreshed0, refreshed1)
		}
	})
}

// TestClaimOAuthRevocationOnEveryReplica (O12): revoke_connected_client on
// one replica disconnects the app at once on another that shares the
// database, even one that has already accepted its token.
func TestClaimOAuthRevocationOnEveryReplica(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		ck := &clock{}
		replicaA, replicaB := claimHandler(store, ck, nil, nil), claimHandler(store, ck, nil, nil)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Replica") == "b" {
				replicaB.ServeHTTP(w, r)
				return
			}
			replicaA.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		a := envAt(cfg, front.URL, ck, nil)
		b := envAt(cfg, front.URL, ck, http.Header{"X-Test-Replica": {"b"}})
		a.team(t, "acme")
		clientID := a.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40015/callback"
		x, y := a.connect(t, clientID, redirect), a.connect(t, clientID, redirect)
		for _, tk := range []string{x.Access, y.Access} {
			if status, _ := b.mcpStatus(t, tk); status != http.StatusOK {
				t.Fatalf("access token on replica B before the revocation: %d, want 200", status)
			}
		}
		onB := openSession(t, front.URL+"/oauth/mcp", "", http.Header{"Authorization": {"Bearer " + y.Access}, "X-Test-Replica": {"b"}}, nil)
		callOK[map[string]any](t, onB, "whoami", args{})

		cs := connectTo(t, a.base+"/oauth/mcp", x.Access, "")
		var other string
		for _, c := range callOK[relay.ConnectedClients](t, cs, "list_connected_clients", args{}).Clients {
			if !c.ThisOne {
				other = c.ID
			}
		}
		callOK[relay.RevokeResult](t, cs, "revoke_connected_client", args{"id": other})

		if status, _ := b.mcpStatus(t, y.Access); status != http.StatusUnauthorized {
			t.Errorf("revoked connection's access token on replica B: %d, want 401", status)
		}
		if res, err := onB.CallTool(t.Context(), &sdk.CallToolParams{Name: "whoami", Arguments: args{}}); err == nil && !res.IsError {
			t.Errorf("a session on replica B with the revoked token still calls tools: %s", resultText(res))
		}
		status, out := b.refresh(t, clientID, y.Refresh)
		wantInvalidGrant(t, "revoked connection's refresh on replica B", status, out)
		if status, _ := b.mcpStatus(t, x.Access); status != http.StatusOK {
			t.Errorf("the other connection on replica B: %d, want 200", status)
		}
	})
}

// TestClaimOAuthLifetimes (O16, O18, O19): a code lasts 60 s; an access
// token 1 hour (expires_in 3600); a refresh token 30 days.
func TestClaimOAuthLifetimes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40016/callback"
		exchange := func(code, v string) (int, map[string]any) {
			return e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}})
		}

		// O16: 61 s after the sign-in the code is no good; 59 s after, it is.
		v, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		e.clock.advance(61 * time.Second)
		status, out := exchange(code, v)
		wantInvalidGrant(t, "a code 61 s old", status, out)
		v, ch = pkce()
		code = e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		e.clock.advance(59 * time.Second)
		status, out = exchange(code, v)
		if status != http.StatusOK {
			t.Fatalf("a code 59 s old: %d %v, want 200", status, out)
		}

		// O18: an hour, and the response says so.
		if out["expires_in"] != float64(3600) || !strings.EqualFold(str(out["token_type"]), "Bearer") {
			t.Errorf("token response expires_in %v, token_type %v; want 3600 and Bearer", out["expires_in"], out["token_type"])
		}
		access := str(out["access_token"])
		e.clock.advance(59 * time.Minute)
		if status, _ := e.mcpStatus(t, access); status != http.StatusOK {
			t.Errorf("access token at 59 min: %d, want 200", status)
		}
		e.clock.advance(2 * time.Minute)
		if status, _ := e.mcpStatus(t, access); status != http.StatusUnauthorized {
			t.Errorf("access token at 61 min: %d, want 401", status)
		}

		// O19: 30 days.
		x, y := e.connect(t, clientID, redirect), e.connect(t, clientID, redirect)
		e.clock.advance(29 * 24 * time.Hour)
		status, out = e.refresh(t, clientID, x.Refresh)
		if status != http.StatusOK {
			t.Fatalf("refresh token at 29 days: %d %v, want 200", status, out)
		}
		x.Refresh = str(out["refresh_token"])
		e.clock.advance(24*time.Hour + time.Minute)
		status, out = e.refresh(t, clientID, y.Refresh)
		wantInvalidGrant(t, "a refresh token 30 days and 1 minute old", status, out)
		if status, out := e.refresh(t, clientID, x.Refresh); status != http.StatusOK {
			t.Errorf("the refresh token rotated at 29 days, 1 day later: %d %v, want 200", status, out)
		}
	})
}

// TestClaimOAuthSecretsStoredHashed (O21): no authorization code, PKCE
// verifier, access or refresh token is stored, only their SHA-256 (the
// verifier's as the S256 challenge).
func TestClaimOAuthSecretsStoredHashed(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40017/callback"
		v, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		tok := e.exchange(t, clientID, redirect, code, v)
		status, out := e.refresh(t, clientID, tok.Refresh)
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, out)
		}
		v2, ch2 := pkce()
		code2 := e.signIn(t, authzParams(clientID, redirect, ch2), "acme", "umar") // one code left unspent
		secrets := map[string]string{"code": code, "unspent code": code2, "access token": tok.Access, "refresh token": tok.Refresh,
			"rotated access token": str(out["access_token"]), "rotated refresh token": str(out["refresh_token"])}
		cells := strings.Join(dbText(t, e.cfg), "\n")
		for name, s := range secrets {
			sum := sha256.Sum256([]byte(s))
			if strings.Contains(cells, s) || strings.Contains(cells, hex.EncodeToString([]byte(s))) {
				t.Errorf("the database holds the %s", name)
			}
			if !strings.Contains(cells, hex.EncodeToString(sum[:])) {
				t.Errorf("the database holds no SHA-256 of the %s", name)
			}
		}
		for name, verifier := range map[string]string{"spent code's verifier": v, "unspent code's verifier": v2} {
			if strings.Contains(cells, verifier) || strings.Contains(cells, hex.EncodeToString([]byte(verifier))) {
				t.Errorf("the database holds the %s", name)
			}
		}
		if !strings.Contains(cells, ch2) {
			t.Errorf("the database holds no S256 challenge of the unspent code")
		}
	})
}

// TestClaimOAuthReplayRevokesWholeConnection (O22, O23): a refresh token or
// a code presented twice revokes every token of that connection, the
// rotated refresh token and the first exchange's refresh token included;
// other connections live on.
func TestClaimOAuthReplayRevokesWholeConnection(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40018/callback"
		bystander := e.connect(t, clientID, redirect)

		// O22: a spent refresh token again.
		first := e.connect(t, clientID, redirect)
		status, out := e.refresh(t, clientID, first.Refresh)
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, out)
		}
		rotated := tokens{Access: str(out["access_token"]), Refresh: str(out["refresh_token"])}
		status, out = e.refresh(t, clientID, first.Refresh)
		wantInvalidGrant(t, "the spent refresh token again", status, out)
		status, out = e.refresh(t, clientID, rotated.Refresh)
		wantInvalidGrant(t, "the rotated refresh token after the replay", status, out)
		for name, tk := range map[string]string{"first access token": first.Access, "rotated access token": rotated.Access} {
			if status, _ := e.mcpStatus(t, tk); status != http.StatusUnauthorized {
				t.Errorf("%s after the replay: %d, want 401", name, status)
			}
		}

		// O23: a spent code again.
		v, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		tok := e.exchange(t, clientID, redirect, code, v)
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {v}})
		wantInvalidGrant(t, "the spent code again", status, out)
		status, out = e.refresh(t, clientID, tok.Refresh)
		wantInvalidGrant(t, "the first exchange's refresh token after the code replay", status, out)
		if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusUnauthorized {
			t.Errorf("the first exchange's access token after the code replay: %d, want 401", status)
		}

		if status, _ := e.mcpStatus(t, bystander.Access); status != http.StatusOK {
			t.Errorf("another connection after both replays: %d, want 200", status)
		}
		if status, out := e.refresh(t, clientID, bystander.Refresh); status != http.StatusOK {
			t.Errorf("another connection's refresh after both replays: %d %v, want 200", status, out)
		}
	})
}

// TestClaimOAuthScopes (O24, O25): a refresh token is issued whether or not
// offline_access is asked for; a request without a scope gets ctalk.
func TestClaimOAuthScopes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40019/callback"
		for _, c := range []struct {
			scope     string // "-": no scope parameter
			wantScope string
		}{{"ctalk", "ctalk"}, {"-", "ctalk"}, {"", "ctalk"}} {
			v, ch := pkce()
			params := authzParams(clientID, redirect, ch)
			if c.scope == "-" {
				params.Del("scope")
			} else {
				params.Set("scope", c.scope)
			}
			tok := e.exchange(t, clientID, redirect, e.signIn(t, params, "acme", "umar"), v)
			if tok.Scope != c.wantScope || !strings.HasPrefix(tok.Refresh, "ctalk_rt_") {
				t.Errorf("scope %q: granted %q, refresh token %q; want %q and a ctalk_rt_ refresh token", c.scope, tok.Scope, tok.Refresh, c.wantScope)
			}
			if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusOK {
				t.Errorf("scope %q: /oauth/mcp = %d, want 200", c.scope, status)
			}
			if status, out := e.refresh(t, clientID, tok.Refresh); status != http.StatusOK || str(out["scope"]) != c.wantScope {
				t.Errorf("scope %q: refresh = %d %v, want 200 with scope %q", c.scope, status, out, c.wantScope)
			}
		}
		// A scope ctalk does not know is refused to the client.
		_, ch := pkce()
		params := authzParams(clientID, redirect, ch)
		params.Set("scope", "ctalk admin")
		resp, err := e.browser.Get(e.base + "/oauth/authorize?" + params.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "invalid_scope" || loc.Query().Get("code") != "" {
			t.Errorf("unknown scope: %s to %q, want 303 with error=invalid_scope", resp.Status, resp.Header.Get("Location"))
		}
	})
}

// TestClaimOAuthDeny (O32): Deny sends access_denied back to the client with
// its state and the issuer, no code, and stores no connection, even when the
// person typed their password first.
func TestClaimOAuthDeny(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40020/callback"
		_, ch := pkce()
		p := e.authorizePage(t, authzParams(clientID, redirect, ch))
		for _, c := range []struct{ org, user, pw string }{{"", "", ""}, {"acme", "umar", userPassword}} {
			before := dbText(t, e.cfg)
			status, h, _ := e.submitPage(t, p.form, c.org, c.user, c.pw, "deny")
			loc, _ := url.Parse(h.Get("Location"))
			if status != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), "http://127.0.0.1:40020/callback?") {
				t.Fatalf("deny (password %v): %d to %q, want 303 to the redirect URI", c.pw != "", status, h.Get("Location"))
			}
			q := loc.Query()
			if q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("iss") != e.base || q.Has("code") {
				t.Errorf("deny (password %v): redirect query %v, want error=access_denied, state st-123, iss %s and no code", c.pw != "", q, e.base)
			}
			if after := dbText(t, e.cfg); !slices.Equal(before, after) {
				t.Errorf("deny (password %v) stored something", c.pw != "")
			}
		}
	})
}

// TestClaimOAuthExchangeMustMatchAuthorization (O34): a code is exchanged
// only with the redirect_uri and client_id it was issued for.
func TestClaimOAuthExchangeMustMatchAuthorization(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID, otherClient := e.register(t, oauthRedirect), e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40021/callback"
		v, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		before := dbText(t, e.cfg)
		for _, c := range []struct{ name, client, redirect string }{
			{"another loopback port", clientID, "http://127.0.0.1:40022/callback"},
			{"localhost for 127.0.0.1", clientID, "http://localhost:40021/callback"},
			{"no redirect_uri", clientID, ""},
			{"another client", otherClient, redirect},
		} {
			status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {v}})
			wantInvalidGrant(t, c.name, status, out)
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a refused exchange stored something")
		}
	})
}

// TestClaimOAuthRevokeEndpoint (O37): /oauth/revoke revokes an access token;
// an unknown or malformed token, or another client's, answers 200 and
// revokes nothing.
func TestClaimOAuthRevokeEndpoint(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID, otherClient := e.register(t, oauthRedirect), e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40023/callback"
		revoke := func(token, client string) int {
			t.Helper()
			status, _ := e.post(t, "/oauth/revoke", url.Values{"token": {token}, "client_id": {client}})
			return status
		}
		mine, theirs := e.connect(t, clientID, redirect), e.connect(t, otherClient, redirect)
		for _, tk := range []string{"ctalk_" + strings.Repeat("A", 43), "ctalk_rt_nope", "not a token at all", strings.Repeat("x", 5000)} {
			if status := revoke(tk, clientID); status != http.StatusOK {
				t.Errorf("revoking unknown token %.20q: %d, want 200", tk, status)
			}
		}
		for _, tk := range []string{theirs.Access, theirs.Refresh} {
			if status := revoke(tk, clientID); status != http.StatusOK {
				t.Errorf("revoking another client's token: %d, want 200", status)
			}
		}
		if status, _ := e.mcpStatus(t, theirs.Access); status != http.StatusOK {
			t.Errorf("another client's access token after a revocation by this client: %d, want 200", status)
		}
		if status, out := e.refresh(t, otherClient, theirs.Refresh); status != http.StatusOK {
			t.Errorf("another client's refresh token after a revocation by this client: %d %v, want 200", status, out)
		}
		if status, _ := e.mcpStatus(t, mine.Access); status != http.StatusOK {
			t.Fatalf("access token before its revocation: %d, want 200", status)
		}
		if status := revoke(mine.Access, clientID); status != http.StatusOK {
			t.Errorf("revoking an access token: %d, want 200", status)
		}
		if status, _ := e.mcpStatus(t, mine.Access); status != http.StatusUnauthorized {
			t.Errorf("revoked access token: %d, want 401", status)
		}
	})
}

// TestClaimOAuthSignInThrottle (O43): the page's password check is the
// login tool's: one message for every failure, 5 failures lock an account
// and 20 from one address lock the address, even against the right password.
func TestClaimOAuthSignInThrottle(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newClaimEnv(t, cfg, dbtest.Open(t, cfg), nil, trustLoopback)
		e.clock.freeze() // the locks' "retry in N s" must not shrink while a loaded machine hashes
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40024/callback"
		_, ch := pkce()
		form := e.authorizePage(t, authzParams(clientID, redirect, ch)).form

		// One message for every failure, the login tool's (this call is
		// umar's first failure; the page's wrong password below the second).
		loginMsg := callErr(t, connectTo(t, e.base+"/mcp", "", ""), "login", args{"org_id": "acme", "user_id": "umar", "password": "wrong password"})
		var first string
		for i, c := range []struct{ org, user, pw string }{
			{"acme", "umar", "wrong password"}, {"no-such-org", "umar", userPassword}, {"acme", "ghost", userPassword},
			{"not an id", "umar", userPassword}, {"acme", "umar", ""},
		} {
			status, h, body := e.from(fmt.Sprintf("192.0.2.%d", i+1)).submitPage(t, form, c.org, c.user, c.pw, "allow")
			msg := alert(body)
			if status != http.StatusUnauthorized || h.Get("Location") != "" || msg == "" || !strings.Contains(loginMsg, msg) {
				t.Errorf("sign-in as %s/%s: %d, alert %q; want 401, no redirect, and the login tool's message %q", c.org, c.user, status, msg, loginMsg)
			}
			if first == "" {
				first = msg
			} else if msg != first {
				t.Errorf("sign-in as %s/%s: alert %q, want the same as a wrong password's: %q", c.org, c.user, msg, first)
			}
		}

		// 5 failures on an account lock it, from any address, counted
		// together with the login tool's: 3 there and 2 on the page.
		tool := connectTo(t, e.base+"/mcp", "", "")
		for range 3 {
			callErr(t, tool, "login", args{"org_id": "acme", "user_id": "john", "password": "wrong password"})
		}
		for i := range 2 {
			if status, _, body := e.from("203.0.113.1").submitPage(t, form, "acme", "john", "wrong password", "allow"); status != http.StatusUnauthorized {
				t.Fatalf("wrong password %d on the page: %d %q, want 401", i+1, status, alert(body))
			}
		}
		status, h, body := e.from("203.0.113.2").submitPage(t, form, "acme", "john", userPassword, "allow")
		if status != http.StatusTooManyRequests || h.Get("Location") != "" || !strings.Contains(alert(body), "too many failed password attempts: retry in 2 s") {
			t.Errorf("the right password after 5 failures: %d, Location %q, alert %q; want 429, no code, 'too many failed password attempts: retry in 2 s'",
				status, h.Get("Location"), alert(body))
		}
		// The page's next failure doubles the lock, and the login tool meets it.
		e.clock.advance(2 * time.Second)
		if status, _, body := e.from("203.0.113.1").submitPage(t, form, "acme", "john", "wrong password", "allow"); status != http.StatusUnauthorized {
			t.Fatalf("wrong password once the lock ended: %d %q, want 401", status, alert(body))
		}
		if msg := callErr(t, tool, "login", args{"org_id": "acme", "user_id": "john", "password": userPassword}); !strings.Contains(msg, "too many failed password attempts: retry in 4 s") {
			t.Errorf("login tool after a 6th failure on the page: %q, want 'too many failed password attempts: retry in 4 s'", msg)
		}
		e.clock.advance(4 * time.Second)
		if status, h, body := e.from("203.0.113.2").submitPage(t, form, "acme", "john", userPassword, "allow"); status != http.StatusSeeOther {
			t.Errorf("the right password once the lock ended: %d %q %q, want 303", status, h.Get("Location"), alert(body))
		}

		// 20 failures from one address, on any accounts, lock the address.
		for i := range 20 {
			if status, _, body := e.from("198.51.100.7").submitPage(t, form, "acme", fmt.Sprintf("guess-%d", i), "wrong password", "allow"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d from one address: %d %q, want 401", i+1, status, alert(body))
			}
		}
		status, h, body = e.from("198.51.100.7").submitPage(t, form, "acme", "umar", userPassword, "allow")
		if status != http.StatusTooManyRequests || h.Get("Location") != "" || !strings.Contains(alert(body), "too many failed password attempts") {
			t.Errorf("the right password from an address with 20 failures: %d, Location %q, alert %q; want 429 and no code",
				status, h.Get("Location"), alert(body))
		}
		if status, h, body := e.from("198.51.100.8").submitPage(t, form, "acme", "umar", userPassword, "allow"); status != http.StatusSeeOther {
			t.Errorf("the right password from another address: %d %q %q, want 303", status, h.Get("Location"), alert(body))
		}
	})
}

// TestClaimOAuthRegistrationThrottle (O51): dynamic registrations are
// counted per client address: 50 free, then a wait of 2 s, then 4 s.
func TestClaimOAuthRegistrationThrottle(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newClaimEnv(t, cfg, dbtest.Open(t, cfg), nil, trustLoopback)
		body := `{"client_name":"Flood","redirect_uris":["` + oauthRedirect + `"],"token_endpoint_auth_method":"none"}`
		register := func(addr string) (int, map[string]any) {
			t.Helper()
			resp, err := e.from(addr).api.Post(e.base+"/oauth/register", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]any{}
			jsonDecode(resp, &out) //nolint:errcheck // checked through out
			return resp.StatusCode, out
		}
		refused := func(what, addr, wait string) {
			t.Helper()
			status, out := register(addr)
			if status != http.StatusTooManyRequests || out["client_id"] != nil ||
				!strings.Contains(str(out["error_description"]), "too many clients registered from your address: retry in "+wait) {
				t.Errorf("%s: %d %v, want 429 'too many clients registered from your address: retry in %s'", what, status, out, wait)
			}
		}
		for i := range 50 {
			if status, out := register("203.0.113.50"); status != http.StatusCreated {
				t.Fatalf("registration %d from one address: %d %v, want 201", i+1, status, out)
			}
		}
		refused("registration 51 from one address", "203.0.113.50", "2 s")
		if status, out := register("203.0.113.51"); status != http.StatusCreated {
			t.Errorf("a registration from another address: %d %v, want 201", status, out)
		}
		e.clock.advance(2 * time.Second)
		if status, out := register("203.0.113.50"); status != http.StatusCreated {
			t.Errorf("registration 51 after 2 s: %d %v, want 201", status, out)
		}
		refused("registration 52 right after", "203.0.113.50", "4 s")
	})
}

// heldRequest is a request whose body the server is reading and the test
// has not finished sending, so it holds its place in the caps.
type heldRequest struct {
	url  string
	body *io.PipeWriter
	done chan heldResult
}

type heldResult struct {
	status int
	body   string
	err    error
}

// hold starts a POST to url from addr (through the trusted loopback proxy)
// and returns once the server has begun reading its body: the Expect:
// 100-continue handshake says so, with no sleeping.
func hold(t *testing.T, url, addr string, hdr http.Header) *heldRequest {
	t.Helper()
	pr, pw := io.Pipe()
	h := &heldRequest{url: url, body: pw, done: make(chan heldResult, 1)}
	got100 := make(chan struct{})
	var once sync.Once
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{Got100Continue: func() { once.Do(func() { close(got100) }) }})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("X-Forwarded-For", addr)
	req.Header.Set("Expect", "100-continue")
	tr := &http.Transport{ExpectContinueTimeout: time.Hour}
	t.Cleanup(func() {
		pw.CloseWithError(errors.New("test over"))
		tr.CloseIdleConnections()
	})
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			h.done <- heldResult{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.done <- heldResult{status: resp.StatusCode, body: string(b)}
	}()
	select {
	case <-got100:
	case r := <-h.done:
		t.Fatalf("POST %s from %s answered before reading its body: %d %s %v", url, addr, r.status, r.body, r.err)
	}
	return h
}

// release sends the rest of the body and returns the answer.
func (h *heldRequest) release(body string) heldResult {
	go func() {
		io.WriteString(h.body, body) //nolint:errcheck // the answer says
		h.body.Close()
	}()
	return <-h.done
}

const initializeJSON = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

var mcpHeaders = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}

// TestClaimOAuthEndpointsShareRequestCaps (S53, S54): /mcp, /oauth/mcp and
// the sign-in endpoints count together against the cap on requests at
// once and on requests from one address; beyond either, 503 with
// Retry-After: 1.
func TestClaimOAuthEndpointsShareRequestCaps(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newClaimEnv(t, cfg, dbtest.Open(t, cfg), nil, func(c *server.Config) {
			trustLoopback(c)
			c.MaxConcurrentRequests, c.MaxRequestsPerAddress = 3, 2
		})
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		access := e.connect(t, clientID, "http://127.0.0.1:40025/callback").Access

		type probe struct{ method, path, body, contentType string }
		probes := []probe{
			{http.MethodPost, "/mcp", initializeJSON, "application/json"},
			{http.MethodPost, "/oauth/mcp", initializeJSON, "application/json"},
			{http.MethodGet, "/oauth/authorize?" + authzParams(clientID, oauthRedirect, "x").Encode(), "", ""},
			{http.MethodPost, "/oauth/authorize", "client_id=" + clientID, "application/x-www-form-urlencoded"},
			{http.MethodPost, "/oauth/token", "grant_type=refresh_token&refresh_token=ctalk_rt_x&client_id=" + clientID, "application/x-www-form-urlencoded"},
			{http.MethodPost, "/oauth/register", `{}`, "application/json"},
			{http.MethodPost, "/oauth/revoke", "token=x", "application/x-www-form-urlencoded"},
			{http.MethodGet, "/.well-known/oauth-authorization-server", "", ""},
			{http.MethodGet, "/.well-known/oauth-protected-resource/oauth/mcp", "", ""},
		}
		send := func(p probe, addr string) (int, http.Header, string) {
			t.Helper()
			req, _ := http.NewRequest(p.method, e.base+p.path, strings.NewReader(p.body))
			if p.body == "" {
				req.Body = nil
			}
			for k, vs := range mcpHeaders {
				req.Header[k] = vs
			}
			if p.contentType != "" {
				req.Header.Set("Content-Type", p.contentType)
			}
			req.Header.Set("X-Forwarded-For", addr)
			resp, err := e.api.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", p.method, p.path, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, string(b)
		}
		wantBusy := func(when, addr, why string) {
			t.Helper()
			for _, p := range probes {
				status, h, body := send(p, addr)
				if status != http.StatusServiceUnavailable || h.Get("Retry-After") != "1" || !strings.Contains(body, "server is busy ("+why) {
					t.Errorf("%s: %s %s from %s = %d Retry-After %q %.200s; want 503, Retry-After: 1, 'server is busy (%s'",
						when, p.method, strings.SplitN(p.path, "?", 2)[0], addr, status, h.Get("Retry-After"), body, why)
				}
			}
		}
		wantServed := func(when, addr string) {
			t.Helper()
			for _, p := range probes {
				if status, _, body := send(p, addr); status == http.StatusServiceUnavailable {
					t.Errorf("%s: %s %s from %s = 503 %.200s, want it served", when, p.method, strings.SplitN(p.path, "?", 2)[0], addr, body)
				}
			}
		}
		wantServed("before anything is held", "192.0.2.10")

		// S54: two requests held from one address, on /oauth/mcp and
		// /oauth/token, fill its share: every endpoint refuses that
		// address, and serves another.
		form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
		bearer := http.Header{"Authorization": {"Bearer " + access}}
		for k, vs := range mcpHeaders {
			bearer[k] = vs
		}
		h1 := hold(t, e.base+"/oauth/mcp", "203.0.113.7", bearer)
		h2 := hold(t, e.base+"/oauth/token", "203.0.113.7", form)
		wantBusy("with /oauth/mcp and /oauth/token held from the address", "203.0.113.7", "too many requests from your address at once")
		if status, _, body := send(probes[0], "198.51.100.9"); status == http.StatusServiceUnavailable {
			t.Errorf("/mcp from another address meanwhile = 503 %s, want it served", body)
		}

		// S53: a third request held, on /mcp from another address, fills
		// the server: every endpoint refuses everyone.
		h3 := hold(t, e.base+"/mcp", "198.51.100.9", mcpHeaders)
		wantBusy("with 3 requests held on /oauth/mcp, /oauth/token and /mcp", "192.0.2.11", "too many requests at once")

		for name, c := range map[string]struct {
			h    *heldRequest
			body string
			want int
		}{
			"/oauth/mcp":   {h1, initializeJSON, http.StatusOK},
			"/oauth/token": {h2, "grant_type=refresh_token&refresh_token=ctalk_rt_x&client_id=" + clientID, http.StatusBadRequest},
			"/mcp":         {h3, initializeJSON, http.StatusOK},
		} {
			if r := c.h.release(c.body); r.status != c.want {
				t.Errorf("held %s once released: %d %.200s %v, want %d", name, r.status, r.body, r.err, c.want)
			}
		}
		wantServed("once the held requests ended", "203.0.113.7")
		wantServed("once the held requests ended", "192.0.2.11")
	})
}

// TestClaimOAuthLogsHoldNoSecrets (S68): after web sign-up, sign-in with
// wrong and right passwords, code exchange, refresh, a replay, revocation
// and calls at /oauth/mcp, the log holds no password, code, verifier,
// token, CSRF value or Authorization value.
func TestClaimOAuthLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		var logs testkit.SyncBuffer
		e := newClaimEnv(t, cfg, dbtest.Open(t, cfg), &logs, nil)
		secrets := map[string]string{"admin password": adminPassword, "user password": userPassword}
		e.team(t, "acme")

		// Web sign-up.
		const webAdmin, webUser = "web-admin-Secret-77341", "web-user-Secret-99125"
		secrets["sign-up admin password"], secrets["sign-up user password"] = webAdmin, webUser
		resp, err := e.browser.Get(e.base + "/oauth/signup")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f := url.Values{}
		for _, m := range hiddenField.FindAllStringSubmatch(string(b), -1) {
			f.Set(m[1], htmlUnescape(m[2]))
		}
		secrets["sign-up CSRF value"] = f.Get("csrf_token")
		for k, v := range map[string]string{"org_id": "webco", "org_name": "Web Co", "admin_password": webAdmin,
			"user_id": "wendy", "name": "Wendy", "ownership": "web", "password": webUser} {
			f.Set(k, v)
		}
		if resp, err = e.browser.PostForm(e.base+"/oauth/signup", f); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("web sign-up: %s, want 201", resp.Status)
		}

		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40026/callback"
		v, ch := pkce()
		p := e.authorizePage(t, authzParams(clientID, redirect, ch))
		secrets["sign-in CSRF value"] = p.form.Get("csrf_token")
		const wrong = "wrong-Secret-password-5521"
		secrets["wrong password"] = wrong
		if status, _, _ := e.submitPage(t, p.form, "acme", "umar", wrong, "allow"); status != http.StatusUnauthorized {
			t.Errorf("wrong password: %d, want 401", status)
		}
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		secrets["code"], secrets["verifier"] = code, v
		badVerifier, _ := pkce()
		secrets["wrong verifier"] = badVerifier
		status, _ := e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {badVerifier}})
		if status != http.StatusBadRequest {
			t.Errorf("wrong verifier: %d, want 400", status)
		}
		tok := e.exchange(t, clientID, redirect, code, v)
		secrets["access token"], secrets["refresh token"] = tok.Access, tok.Refresh
		cs := connectTo(t, e.base+"/oauth/mcp", tok.Access, "")
		callOK[map[string]any](t, cs, "whoami", args{})
		status, out := e.refresh(t, clientID, tok.Refresh)
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, out)
		}
		secrets["rotated access token"], secrets["rotated refresh token"] = str(out["access_token"]), str(out["refresh_token"])
		e.refresh(t, clientID, tok.Refresh) // a replay: revokes the connection
		if status, _ := e.mcpStatus(t, str(out["access_token"])); status != http.StatusUnauthorized {
			t.Errorf("access token after the replay: %d, want 401", status)
		}
		other := e.connect(t, clientID, redirect)
		secrets["revoked access token"], secrets["revoked refresh token"] = other.Access, other.Refresh
		e.post(t, "/oauth/revoke", url.Values{"token": {other.Refresh}, "client_id": {clientID}})
		e.post(t, "/oauth/revoke", url.Values{"token": {other.Access}, "client_id": {clientID}})
		e.mcpStatus(t, other.Access)

		out2 := logs.String()
		for _, path := range []string{"/oauth/authorize", "/oauth/token", "/oauth/revoke", "/oauth/signup", "/oauth/mcp", "/oauth/register"} {
			if !strings.Contains(out2, "path="+path+" ") {
				t.Errorf("the log has no request line for %s: the test does not see the log it checks", path)
			}
		}
		for name, s := range secrets {
			if s == "" {
				t.Fatalf("test bug: no %s", name)
			}
			if strings.Contains(out2, s) {
				t.Errorf("the log holds the %s", name)
			}
		}
		for _, s := range []string{"Bearer", "ctalk_rt_", "ctalk_code_"} {
			if strings.Contains(out2, s) {
				t.Errorf("the log holds %q", s)
			}
		}
	})
}
