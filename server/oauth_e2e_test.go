package server_test

// OAuth 2.1 sign-in end to end: the authorization server's endpoints and
// sign-in page driven as a browser and a public client would, then the
// official MCP Go SDK calling tools at /oauth/mcp with the issued token.
// The real-client check (the TypeScript SDK's auth() with headless
// Chromium) is test/acceptance/oauth.sh.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

const oauthRedirect = "http://127.0.0.1/callback" // Claude Code's form: any port may come back

// clock is a settable time source, so expiry is tested without waiting.
type clock struct {
	mu     sync.Mutex
	off    time.Duration
	frozen time.Time // when set, the time stands still there (plus advances)
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen.IsZero() {
		return c.frozen.Add(c.off)
	}
	return time.Now().Add(c.off)
}

// freeze stops the clock where it is: only advance moves it, so a lock's
// remaining time does not depend on how long a loaded machine takes.
func (c *clock) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen, c.off = time.Now().Add(c.off), 0
}
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// oauthEnv is a running ctalk with the OAuth face on, and a browser.
type oauthEnv struct {
	base    string
	clock   *clock
	browser *http.Client // keeps cookies, does not follow redirects
	api     *http.Client
	cfg     db.Config
}

func newOAuthEnv(t *testing.T, cfg db.Config, store db.Store, metadataAllow ...string) *oauthEnv {
	t.Helper()
	ck := &clock{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rules := relay.New(store, relay.Options{HashConcurrency: 4, Now: ck.Now})
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(nil, mcp.Options{Version: "e2e", Relay: rules}), Relay: rules,
		Logger: logger, Version: "e2e", ClientMetadataAllow: metadataAllow,
	}))
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &oauthEnv{
		base: ts.URL, clock: ck, cfg: cfg,
		browser: &http.Client{Jar: jar, CheckRedirect: noRedirect, Timeout: time.Minute},
		api:     &http.Client{CheckRedirect: noRedirect, Timeout: time.Minute},
	}
}

// getJSON fetches a JSON document.
func (e *oauthEnv) getJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	resp, err := e.api.Get(e.base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("GET %s: %s, want 200 with JSON", path, resp.Status)
	}
	return out
}

// post sends a form to an endpoint and returns the status and JSON body.
func (e *oauthEnv) post(t *testing.T, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := e.api.PostForm(e.base+path, form)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // revoke answers with no body
	return resp.StatusCode, out
}

// register registers a public client with one redirect URI (DCR).
func (e *oauthEnv) register(t *testing.T, redirect string) string {
	t.Helper()
	body := `{"client_name":"Test client","redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"none",` +
		`"grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`
	resp, err := e.api.Post(e.base+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil || out.ClientID == "" {
		t.Fatalf("register: %s, want 201 with a client_id", resp.Status)
	}
	return out.ClientID
}

// pkce returns a fresh verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authzParams is an authorization request.
func authzParams(clientID, redirect, challenge string) url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-123"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {"ctalk offline_access"},
	}
}

// page is a fetched sign-in page.
type page struct {
	status int
	header http.Header
	body   string
	form   url.Values // the form's hidden fields
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

func (e *oauthEnv) authorizePage(t *testing.T, params url.Values) page {
	t.Helper()
	resp, err := e.browser.Get(e.base + "/oauth/authorize?" + params.Encode())
	if err != nil {
		t.Fatalf("GET /oauth/authorize: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, header: resp.Header, body: string(b), form: url.Values{}}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		p.form.Set(m[1], htmlUnescape(m[2]))
	}
	return p
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+").Replace(s)
}

// submit posts the sign-in form as the browser and returns the response.
func (e *oauthEnv) submit(t *testing.T, form url.Values, orgID, userID, password, decision string) *http.Response {
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
	resp.Body.Close()
	return resp
}

// signIn runs the browser part of the flow and returns the code.
func (e *oauthEnv) signIn(t *testing.T, params url.Values, orgID, userID string) string {
	t.Helper()
	p := e.authorizePage(t, params)
	if p.status != http.StatusOK {
		t.Fatalf("sign-in page: %d, want 200:\n%s", p.status, p.body)
	}
	resp := e.submit(t, p.form, orgID, userID, userPassword, "allow")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil {
		t.Fatalf("sign-in post: %s, Location %q; want 303 to the redirect URI", resp.Status, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("state") != params.Get("state") || q.Get("iss") != e.base || q.Get("code") == "" {
		t.Fatalf("redirect %s: want the code, state %q and iss %q", loc.Redacted(), params.Get("state"), e.base)
	}
	return q.Get("code")
}

type tokens struct {
	Access, Refresh, Scope string
}

func (e *oauthEnv) exchange(t *testing.T, clientID, redirect, code, verifier string) tokens {
	t.Helper()
	status, out := e.post(t, "/oauth/token", url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {e.base + "/oauth/mcp"},
	})
	if status != http.StatusOK {
		t.Fatalf("token exchange: %d %v, want 200", status, out)
	}
	return tokens{Access: str(out["access_token"]), Refresh: str(out["refresh_token"]), Scope: str(out["scope"])}
}

func str(v any) string { s, _ := v.(string); return s }

// mcpStatus sends an initialize to /oauth/mcp with a token and returns the
// status and WWW-Authenticate header.
func (e *oauthEnv) mcpStatus(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+"/oauth/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.api.Do(req)
	if err != nil {
		t.Fatalf("POST /oauth/mcp: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// oauthTeam registers an organization with umar and john through /mcp.
func (e *oauthEnv) team(t *testing.T, orgID string) (umarToken string) {
	t.Helper()
	cs := connectTo(t, e.base+"/mcp", "", "")
	umar, _ := team(t, cs, orgID)
	return umar
}

func TestOAuthSignIn(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		loginToken := e.team(t, "acme")

		// Discovery: an unauthenticated request is challenged, and the
		// challenge leads to both metadata documents.
		status, challenge := e.mcpStatus(t, "")
		prmURL := e.base + "/.well-known/oauth-protected-resource/oauth/mcp"
		if status != http.StatusUnauthorized || !strings.Contains(challenge, `resource_metadata="`+prmURL+`"`) {
			t.Fatalf("/oauth/mcp without a token: %d %q; want 401 naming %s", status, challenge, prmURL)
		}
		prm := e.getJSON(t, "/.well-known/oauth-protected-resource/oauth/mcp")
		if prm["resource"] != e.base+"/oauth/mcp" || !slices.Contains(anyStrings(prm["authorization_servers"]), e.base) {
			t.Errorf("protected resource metadata = %v", prm)
		}
		for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
			as := e.getJSON(t, path)
			if as["issuer"] != e.base || as["client_id_metadata_document_supported"] != true ||
				!slices.Equal(anyStrings(as["code_challenge_methods_supported"]), []string{"S256"}) ||
				!slices.Contains(anyStrings(as["token_endpoint_auth_methods_supported"]), "none") ||
				as["registration_endpoint"] != e.base+"/oauth/register" {
				t.Errorf("%s = %v", path, as)
			}
		}

		// The sign-in page: strict headers, the client named.
		clientID := e.register(t, oauthRedirect)
		verifier, challengeS256 := pkce()
		redirect := "http://127.0.0.1:" + "54321" + "/callback" // a random loopback port
		params := authzParams(clientID, redirect, challengeS256)
		p := e.authorizePage(t, params)
		csp := p.header.Get("Content-Security-Policy")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Test client") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || p.form.Get("csrf_token") == "" {
			t.Fatalf("sign-in page: %d, CSP %q, csrf %q:\n%s", p.status, csp, p.form.Get("csrf_token"), p.body)
		}

		// A wrong password re-renders the page with the login error.
		resp := e.submit(t, p.form, "acme", "umar", "wrong password", "allow")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("wrong password: %s, want 401 and the page again", resp.Status)
		}

		code := e.signIn(t, params, "acme", "umar")
		tok := e.exchange(t, clientID, redirect, code, verifier)
		if !strings.HasPrefix(tok.Access, "ctalk_") || !strings.HasPrefix(tok.Refresh, "ctalk_rt_") || tok.Scope != "ctalk offline_access" {
			t.Fatalf("tokens = %+v", tok)
		}

		// The token works at /oauth/mcp through the official SDK, and only there.
		cs := connectTo(t, e.base+"/oauth/mcp", tok.Access, "")
		if who := callOK[struct {
			UserID string `json:"user_id"`
		}](t, cs, "whoami", args{}); who.UserID != "umar" {
			t.Errorf("whoami at /oauth/mcp = %q, want umar", who.UserID)
		}
		clients := callOK[relay.ConnectedClients](t, cs, "list_connected_clients", args{})
		if len(clients.Clients) != 1 || clients.Clients[0].ClientName != "Test client" || !clients.Clients[0].ThisOne {
			t.Errorf("list_connected_clients = %+v, want the test client, marked as this connection", clients)
		}
		open := connectTo(t, e.base+"/mcp", tok.Access, "")
		if msg := callErr(t, open, "whoami", args{}); !strings.Contains(msg, "invalid") {
			t.Errorf("OAuth token at /mcp: %q, want refused (issued for /oauth/mcp)", msg)
		}
		if status, _ := e.mcpStatus(t, loginToken); status != http.StatusUnauthorized {
			t.Errorf("login token at /oauth/mcp: %d, want 401 (not issued for this resource)", status)
		}

		// Refresh rotates; the spent refresh token, presented again, revokes
		// the whole family.
		status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh}, "client_id": {clientID}})
		if status != http.StatusOK || str(out["refresh_token"]) == tok.Refresh || str(out["access_token"]) == "" {
			t.Fatalf("refresh: %d %v", status, out)
		}
		fresh := str(out["access_token"])
		if status, _ := e.mcpStatus(t, fresh); status != http.StatusOK {
			t.Errorf("refreshed access token: %d, want 200", status)
		}
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh}, "client_id": {clientID}})
		if status != http.StatusBadRequest || out["error"] != "invalid_grant" {
			t.Errorf("spent refresh token again: %d %v, want 400 invalid_grant", status, out)
		}
		for _, tk := range []string{tok.Access, fresh} {
			if status, hdr := e.mcpStatus(t, tk); status != http.StatusUnauthorized || !strings.Contains(hdr, `error="invalid_token"`) {
				t.Errorf("access token after the family was revoked: %d %q, want 401 invalid_token", status, hdr)
			}
		}
	})
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, str(x))
	}
	return out
}

// TestOAuthRefusals: each attack or mistake the issue lists is refused with
// the error the RFCs name, and nothing is stored.
func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	// A metadata server on loopback, allowed like a test's; another one
	// that is not allowed (a private address in production).
	docs := http.NewServeMux()
	var metaURL, bigURL string
	docs.HandleFunc("GET /client.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"client_id":"`+metaURL+`","client_name":"Metadata client","redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`)
	})
	docs.HandleFunc("GET /big.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"client_id":"`+bigURL+`","client_name":"`+strings.Repeat("x", 64<<10)+`","redirect_uris":["https://app.example/cb"]}`)
	})
	// Documents shaped like Claude's own (claude.ai's and Claude Code's),
	// served here because the tests run offline.
	var claudeAI, claudeCode string
	docs.HandleFunc("GET /oauth/mcp-oauth-client-metadata", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"client_id":"`+claudeAI+`","client_name":"Claude","client_uri":"https://claude.ai",`+
			`"redirect_uris":["https://claude.ai/api/mcp/auth_callback","https://claude.com/api/mcp/auth_callback"],`+
			`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`)
	})
	docs.HandleFunc("GET /oauth/claude-code-client-metadata", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"client_id":"`+claudeCode+`","client_name":"Claude Code",`+
			`"redirect_uris":["http://localhost/callback","http://127.0.0.1/callback"],`+
			`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`)
	})
	meta := httptest.NewServer(docs)
	t.Cleanup(meta.Close)
	metaURL, bigURL = meta.URL+"/client.json", meta.URL+"/big.json"
	claudeAI, claudeCode = meta.URL+"/oauth/mcp-oauth-client-metadata", meta.URL+"/oauth/claude-code-client-metadata"
	private := httptest.NewServer(docs)
	t.Cleanup(private.Close)

	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg), meta.URL)
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		redirect := "http://127.0.0.1:40001/callback"

		refusedPage := func(name string, params url.Values, want string) {
			t.Helper()
			before := dbText(t, e.cfg)
			p := e.authorizePage(t, params)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, want) || strings.Contains(p.body, `name="password"`) {
				t.Errorf("%s: %d, want 400 and a page saying %q:\n%s", name, p.status, want, p.body)
			}
			if after := dbText(t, e.cfg); !slices.Equal(before, after) {
				t.Errorf("%s stored something", name)
			}
		}
		_, ch := pkce()
		refusedPage("redirect URI not the client's", authzParams(clientID, "https://evil.example/cb", ch), "did not register")
		refusedPage("unknown client", authzParams("ctalk-client-nope", redirect, ch), "not registered")
		refusedPage("metadata document on a private address", authzParams("https://127.0.0.1:"+strings.TrimPrefix(private.URL, "http://127.0.0.1:")+"/client.json",
			"https://app.example/cb", ch), "cannot check the app")
		refusedPage("metadata document over the size cap", authzParams(bigURL, "https://app.example/cb", ch), "cannot check the app")

		// Errors about the request itself go back to the client, with iss.
		redirected := func(name string, params url.Values, wantErr string) {
			t.Helper()
			resp, err := e.browser.Get(e.base + "/oauth/authorize?" + params.Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != wantErr || loc.Query().Get("iss") != e.base {
				t.Errorf("%s: %s to %q, want 303 with error=%s and iss", name, resp.Status, resp.Header.Get("Location"), wantErr)
			}
		}
		noPKCE := authzParams(clientID, redirect, "")
		redirected("no PKCE", noPKCE, "invalid_request")
		plain := authzParams(clientID, redirect, ch)
		plain.Set("code_challenge_method", "plain")
		redirected("plain PKCE", plain, "invalid_request")
		other := authzParams(clientID, redirect, ch)
		other.Set("resource", "https://other.example/mcp")
		redirected("another resource", other, "invalid_target")

		// The metadata-document client works where it is allowed.
		if p := e.authorizePage(t, authzParams(metaURL, "https://app.example/cb", ch)); p.status != http.StatusOK || !strings.Contains(p.body, "Metadata client") {
			t.Errorf("allowed metadata document: %d, want the sign-in page naming Metadata client", p.status)
		}

		// Claude's clients: claude.ai's two callbacks, Claude Code's loopback
		// callbacks on any port; nothing else.
		for _, c := range []struct {
			id, redirect string
			ok           bool
		}{
			{claudeAI, "https://claude.ai/api/mcp/auth_callback", true},
			{claudeAI, "https://claude.com/api/mcp/auth_callback", true},
			{claudeAI, "https://claude.ai/api/mcp/auth_callback/../evil", false},
			{claudeCode, "http://localhost:53682/callback", true},
			{claudeCode, "http://127.0.0.1:61234/callback", true},
			{claudeCode, "http://127.0.0.1:61234/other", false},
			{claudeCode, "https://localhost:61234/callback", false},
		} {
			p := e.authorizePage(t, authzParams(c.id, c.redirect, ch))
			if got := p.status == http.StatusOK; got != c.ok {
				t.Errorf("%s with redirect %s: %d, want allowed=%v", c.id, c.redirect, p.status, c.ok)
			}
		}

		// A post without the CSRF cookie's value is refused and stores nothing.
		p := e.authorizePage(t, authzParams(clientID, redirect, ch))
		before := dbText(t, e.cfg)
		forged := url.Values{}
		for k, v := range p.form {
			forged[k] = v
		}
		forged.Set("csrf_token", "forged")
		if resp := e.submit(t, forged, "acme", "umar", userPassword, "allow"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("CSRF-less post: %s, Location %q; want 403 and no redirect", resp.Status, resp.Header.Get("Location"))
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a CSRF-less post stored something")
		}

		// Wrong verifier, reused code.
		verifier, ch := pkce()
		code := e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar")
		wrong, _ := pkce()
		status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {wrong}})
		if status != http.StatusBadRequest || out["error"] != "invalid_grant" {
			t.Errorf("wrong PKCE verifier: %d %v, want invalid_grant", status, out)
		}
		tok := e.exchange(t, clientID, redirect, code, verifier)
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {clientID}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
		if status != http.StatusBadRequest || out["error"] != "invalid_grant" {
			t.Errorf("reused code: %d %v, want invalid_grant", status, out)
		}
		if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusUnauthorized {
			t.Errorf("token issued from a code that was replayed: %d, want 401 (grant revoked)", status)
		}

		// An access token expires after an hour; the refresh token outlives it.
		verifier, ch = pkce()
		tok = e.exchange(t, clientID, redirect, e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar"), verifier)
		e.clock.advance(relay.AccessTokenTTL + time.Minute)
		if status, hdr := e.mcpStatus(t, tok.Access); status != http.StatusUnauthorized || !strings.Contains(hdr, "resource_metadata=") {
			t.Errorf("expired access token: %d %q, want 401 with the challenge", status, hdr)
		}
		status, out = e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh}, "client_id": {clientID}})
		if status != http.StatusOK {
			t.Errorf("refresh after the access token expired: %d %v, want 200", status, out)
		}

		// A scope-less token (only offline_access) is short of scope: 403.
		verifier, ch = pkce()
		narrow := authzParams(clientID, redirect, ch)
		narrow.Set("scope", "offline_access")
		tok = e.exchange(t, clientID, redirect, e.signIn(t, narrow, "acme", "umar"), verifier)
		if status, hdr := e.mcpStatus(t, tok.Access); status != http.StatusForbidden || !strings.Contains(hdr, `error="insufficient_scope"`) {
			t.Errorf("token without the ctalk scope: %d %q, want 403 insufficient_scope", status, hdr)
		}
	})
}

// TestOAuthRevocation: logout, a password reset and revoke_connected_client
// end OAuth sessions, refresh tokens included, on every replica (the store).
func TestOAuthRevocation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, "http://localhost/callback")
		redirect := "http://localhost:40002/callback"
		connect := func() tokens {
			v, ch := pkce()
			return e.exchange(t, clientID, redirect, e.signIn(t, authzParams(clientID, redirect, ch), "acme", "umar"), v)
		}
		refreshFails := func(name string, tok tokens) {
			t.Helper()
			if status, out := e.post(t, "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh},
				"client_id": {clientID}}); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
				t.Errorf("%s: refresh = %d %v, want invalid_grant", name, status, out)
			}
			if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusUnauthorized {
				t.Errorf("%s: access token = %d, want 401", name, status)
			}
		}

		a := connect()
		callOK[relay.LogoutResult](t, connectTo(t, e.base+"/oauth/mcp", a.Access, ""), "logout", args{})
		refreshFails("after logout", a)

		b, c := connect(), connect()
		cs := connectTo(t, e.base+"/oauth/mcp", b.Access, "")
		list := callOK[relay.ConnectedClients](t, cs, "list_connected_clients", args{})
		if len(list.Clients) != 2 {
			t.Fatalf("list_connected_clients = %+v, want 2 live connections", list)
		}
		var other string
		for _, cl := range list.Clients {
			if !cl.ThisOne {
				other = cl.ID
			}
		}
		callOK[relay.RevokeResult](t, cs, "revoke_connected_client", args{"id": other})
		refreshFails("after revoke_connected_client", c)
		if msg := callErr(t, cs, "revoke_connected_client", args{"id": other}); !strings.Contains(msg, "no connected client") {
			t.Errorf("revoking it again: %q, want 'no connected client'", msg)
		}

		// change_password through one connection disconnects the others, not itself.
		e2, e3 := connect(), connect()
		callOK[relay.PasswordResult](t, connectTo(t, e.base+"/oauth/mcp", e2.Access, ""), "change_password",
			args{"old_password": userPassword, "new_password": userPassword + "-1"})
		refreshFails("the other connection after change_password", e3)
		if status, _ := e.mcpStatus(t, e2.Access); status != http.StatusOK {
			t.Errorf("the connection that changed the password: %d, want 200 (it stays connected)", status)
		}
		callOK[relay.PasswordResult](t, connectTo(t, e.base+"/oauth/mcp", e2.Access, ""), "change_password",
			args{"old_password": userPassword + "-1", "new_password": userPassword})

		open := connectTo(t, e.base+"/mcp", "", "")
		callOK[map[string]any](t, open, "reset_user_password", args{"org_id": "acme", "admin_password": adminPassword,
			"user_id": "umar", "new_password": userPassword + "-2"})
		refreshFails("after reset_user_password", b)

		// The revocation endpoint: a refresh token revokes its grant.
		d := func() tokens {
			v, ch := pkce()
			p := e.authorizePage(t, authzParams(clientID, redirect, ch))
			resp := e.submit(t, p.form, "acme", "umar", userPassword+"-2", "allow")
			loc, _ := url.Parse(resp.Header.Get("Location"))
			return e.exchange(t, clientID, redirect, loc.Query().Get("code"), v)
		}()
		if status, _ := e.post(t, "/oauth/revoke", url.Values{"token": {d.Refresh}, "client_id": {clientID}}); status != http.StatusOK {
			t.Errorf("revoke: %d, want 200", status)
		}
		refreshFails("after /oauth/revoke", d)

		// Deactivation disconnects everything.
		f := func() tokens {
			v, ch := pkce()
			p := e.authorizePage(t, authzParams(clientID, redirect, ch))
			resp := e.submit(t, p.form, "acme", "umar", userPassword+"-2", "allow")
			loc, _ := url.Parse(resp.Header.Get("Location"))
			return e.exchange(t, clientID, redirect, loc.Query().Get("code"), v)
		}()
		callOK[map[string]any](t, open, "deactivate_user", args{"org_id": "acme", "admin_password": adminPassword, "user_id": "umar"})
		refreshFails("after deactivate_user", f)
	})
}

// TestOAuthSignup: an admin registers the organization and themselves from
// the web, then signs in; a refused form stores nothing.
func TestOAuthSignup(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		clientID := e.register(t, oauthRedirect)
		verifier, ch := pkce()
		params := authzParams(clientID, "http://127.0.0.1:40003/callback", ch)
		signin := e.authorizePage(t, params)
		link := regexp.MustCompile(`href="(/oauth/signup\?return=[^"]+)"`).FindStringSubmatch(signin.body)
		if link == nil {
			t.Fatalf("sign-in page has no link to the sign-up page:\n%s", signin.body)
		}
		resp, err := e.browser.Get(e.base + htmlUnescape(link[1]))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		form := url.Values{}
		for _, m := range hiddenField.FindAllStringSubmatch(string(b), -1) {
			form.Set(m[1], htmlUnescape(m[2]))
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(form.Get("return"), "/oauth/authorize?") {
			t.Fatalf("sign-up page: %s, return %q", resp.Status, form.Get("return"))
		}
		post := func(admin, password string) (int, string) {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			for k, v := range map[string]string{"org_id": "webco", "org_name": "Web Co", "admin_password": admin,
				"user_id": "umar", "name": "Umar", "ownership": "platform", "password": password} {
				f.Set(k, v)
			}
			resp, err := e.browser.PostForm(e.base+"/oauth/signup", f)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		before := dbText(t, e.cfg)
		if status, body := post(adminPassword, "short"); status != http.StatusBadRequest || !strings.Contains(body, "your password is too short") {
			t.Errorf("short user password: %d, want 400 saying so:\n%s", status, body)
		}
		if after := dbText(t, e.cfg); !slices.Equal(before, after) {
			t.Error("a refused sign-up stored something (the organization without its user?)")
		}
		status, body := post(adminPassword, userPassword)
		if status != http.StatusCreated || !strings.Contains(body, "Continue signing in") {
			t.Fatalf("sign-up: %d, want 201 with a link back:\n%s", status, body)
		}
		if status, body := post(adminPassword, userPassword); status != http.StatusConflict || !strings.Contains(body, "already exists") {
			t.Errorf("the same organization again: %d, want 409:\n%s", status, body)
		}
		code := e.signIn(t, params, "webco", "umar")
		tok := e.exchange(t, clientID, "http://127.0.0.1:40003/callback", code, verifier)
		cs := connectTo(t, e.base+"/oauth/mcp", tok.Access, "")
		if who := callOK[struct {
			OrgID string `json:"org_id"`
		}](t, cs, "whoami", args{}); who.OrgID != "webco" {
			t.Errorf("whoami = %q, want webco", who.OrgID)
		}
	})
}
