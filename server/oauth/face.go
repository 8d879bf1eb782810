package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

// MCPPath is the MCP endpoint that demands an OAuth access token. The open
// endpoint /mcp (the seed's login tool and pasted tokens) is unchanged.
const MCPPath = "/oauth/mcp"

// The authorization server's endpoints.
const (
	authorizePath = "/oauth/authorize"
	tokenPath     = "/oauth/token"
	registerPath  = "/oauth/register"
	revokePath    = "/oauth/revoke"
	prmPath       = "/.well-known/oauth-protected-resource"
)

// retryIn finds the wait a throttling refusal names ("…: retry in 4 s").
var retryIn = regexp.MustCompile(`retry in (\d+) s$`)

// maxFormBytes bounds a form or JSON body sent to the OAuth endpoints.
const maxFormBytes = 64 << 10

// Config is what the OAuth face needs.
type Config struct {
	Relay *relay.Service
	// BaseURL is the URL clients reach this server at (no trailing slash):
	// the issuer, and the prefix of the resource indicator.
	BaseURL func(*http.Request) string
	// ClientAddr names the client's address for the password throttle.
	ClientAddr func(*http.Request) string
	// Fetcher reads Client ID Metadata Documents.
	Fetcher *Fetcher
	Logger  *slog.Logger
}

// Face serves the authorization server and guards the OAuth MCP endpoint.
type Face struct {
	cfg  Config
	page *pages
}

// New returns the OAuth face.
func New(cfg Config) *Face {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Fetcher == nil {
		cfg.Fetcher, _ = NewFetcher(FetcherOptions{}) // the zero options are valid
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = func(*http.Request) string { return "" }
	}
	return &Face{cfg: cfg, page: newPages()}
}

// Routes registers the authorization server's endpoints and metadata.
func (f *Face) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+prmPath, f.protectedResource)
	mux.HandleFunc("GET "+prmPath+MCPPath, f.protectedResource)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", f.serverMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", f.serverMetadata)
	mux.HandleFunc("GET "+authorizePath, f.authorize)
	mux.HandleFunc("POST "+authorizePath, f.authorize)
	mux.HandleFunc("GET "+signupPath, f.signup)
	mux.HandleFunc("POST "+signupPath, f.signup)
	mux.HandleFunc("POST "+tokenPath, cors(f.token))
	mux.HandleFunc("POST "+registerPath, cors(f.register))
	mux.HandleFunc("POST "+revokePath, cors(f.revoke))
	for _, p := range []string{tokenPath, registerPath, revokePath, prmPath, prmPath + MCPPath,
		"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		mux.HandleFunc("OPTIONS "+p, cors(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	}
}

// cors lets browser-based MCP clients (the Inspector) read the metadata and
// use the token endpoints: they carry no cookies, so any origin may.
func cors(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		h.Set("Access-Control-Max-Age", "600")
		next(w, r)
	}
}

func (f *Face) base(r *http.Request) string { return strings.TrimRight(f.cfg.BaseURL(r), "/") }

// Resource is the resource indicator of the OAuth MCP endpoint.
func (f *Face) Resource(r *http.Request) string { return f.base(r) + MCPPath }

// protectedResource serves RFC 9728 metadata.
func (f *Face) protectedResource(w http.ResponseWriter, r *http.Request) {
	cors(func(w http.ResponseWriter, r *http.Request) {
		base := f.base(r)
		writeJSON(w, http.StatusOK, map[string]any{
			"resource":                 base + MCPPath,
			"authorization_servers":    []string{base},
			"scopes_supported":         relay.ScopesSupported,
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "ctalk",
			"resource_documentation":   base + "/",
		})
	})(w, r)
}

// serverMetadata serves RFC 8414 metadata (also at the OpenID discovery path).
func (f *Face) serverMetadata(w http.ResponseWriter, r *http.Request) {
	cors(func(w http.ResponseWriter, r *http.Request) {
		base := f.base(r)
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                         base,
			"authorization_endpoint":                         base + authorizePath,
			"token_endpoint":                                 base + tokenPath,
			"registration_endpoint":                          base + registerPath,
			"revocation_endpoint":                            base + revokePath,
			"response_types_supported":                       []string{"code"},
			"response_modes_supported":                       []string{"query"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":               []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"none"},
			"revocation_endpoint_auth_methods_supported":     []string{"none"},
			"scopes_supported":                               relay.ScopesSupported,
			"client_id_metadata_document_supported":          true,
			"authorization_response_iss_parameter_supported": true,
			"service_documentation":                          base + "/",
		})
	})(w, r)
}

// Guard checks the bearer token of a request to the OAuth MCP endpoint.
// It answers a missing or bad token itself (401 or 403 with the
// WWW-Authenticate challenge of RFC 6750 and RFC 9728) and returns false;
// on true the request may go on, for the resource returned.
func (f *Face) Guard(w http.ResponseWriter, r *http.Request) (resource string, ok bool) {
	base := f.base(r)
	resource = base + MCPPath
	challenge := `Bearer resource_metadata="` + base + prmPath + MCPPath + `", scope="` + relay.ScopeCtalk + `"`
	token := bearerToken(r.Header.Get("Authorization"))
	if token == "" {
		w.Header().Set("WWW-Authenticate", challenge)
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_token",
			"this endpoint needs an OAuth access token: sign in through your MCP client (it reads "+prmPath+MCPPath+")"))
		return "", false
	}
	_, err := f.cfg.Relay.CheckAccess(r.Context(), token, resource)
	switch {
	case err == nil:
		return resource, true
	case errors.Is(err, relay.ErrNoAccessToken):
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="`+err.Error()+`"`)
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_token", err.Error()+": sign in again"))
	case errors.Is(err, relay.ErrInsufficientScope):
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+relay.ScopeCtalk+
			`", resource_metadata="`+base+prmPath+MCPPath+`"`)
		writeJSON(w, http.StatusForbidden, oauthError("insufficient_scope", "sign in again and allow the ctalk scope"))
	default:
		f.cfg.Logger.ErrorContext(r.Context(), "checking an access token", "err", err)
		w.Header().Set("Retry-After", "2")
		writeJSON(w, http.StatusServiceUnavailable, oauthError("temporarily_unavailable", "ctalk could not check the token: retry shortly"))
	}
	return "", false
}

func bearerToken(header string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func oauthError(code, description string) map[string]string {
	return map[string]string{"error": code, "error_description": description}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// withAddr gives the rules the client's address, for the throttle.
func (f *Face) withAddr(r *http.Request) context.Context {
	return relay.WithClientAddr(r.Context(), f.cfg.ClientAddr(r))
}

// token is the token endpoint (RFC 6749 §3.2): public clients, PKCE.
func (f *Face) token(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(w, r); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", err.Error()))
		return
	}
	form := r.PostForm
	clientID := form.Get("client_id")
	if clientID == "" {
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_client",
			"client_id is required: ctalk's clients are public clients that send their client_id"))
		return
	}
	var (
		out relay.OAuthTokens
		err error
	)
	switch gt := form.Get("grant_type"); gt {
	case "authorization_code":
		out, err = f.cfg.Relay.ExchangeCode(r.Context(), form.Get("code"), clientID, form.Get("redirect_uri"),
			form.Get("code_verifier"), form.Get("resource"))
	case "refresh_token":
		out, err = f.cfg.Relay.RefreshOAuth(r.Context(), form.Get("refresh_token"), clientID, form.Get("scope"), form.Get("resource"))
	case "":
		err = &relay.OAuthError{Code: "invalid_request", Description: "grant_type is required"}
	default:
		err = &relay.OAuthError{Code: "unsupported_grant_type",
			Description: "ctalk supports authorization_code and refresh_token, not " + strconv.Quote(clip(gt, 40))}
	}
	var oe *relay.OAuthError
	switch {
	case err == nil:
		w.Header().Set("Pragma", "no-cache")
		writeJSON(w, http.StatusOK, out)
	case errors.As(err, &oe):
		writeJSON(w, http.StatusBadRequest, oauthError(oe.Code, oe.Description))
	default:
		f.cfg.Logger.ErrorContext(r.Context(), "token endpoint", "err", err)
		writeJSON(w, http.StatusInternalServerError, oauthError("server_error", "ctalk could not issue the token: retry shortly"))
	}
}

// register is Dynamic Client Registration (RFC 7591), for public clients.
func (f *Face) register(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_client_metadata", "the registration request is over 64 KiB"))
		return
	}
	c, rerr := ValidateRegistration(body)
	if rerr != nil {
		writeJSON(w, http.StatusBadRequest, oauthError(rerr.Code, rerr.Description))
		return
	}
	stored, err := f.cfg.Relay.RegisterOAuthClient(f.withAddr(r), c.Name, c.RedirectURIs)
	var re *relay.Error
	switch {
	case errors.As(err, &re) && re.Kind == relay.KindThrottled:
		retry := "60"
		if m := retryIn.FindStringSubmatch(re.Error()); m != nil {
			retry = m[1] // the wait the message names
		}
		w.Header().Set("Retry-After", retry)
		writeJSON(w, http.StatusTooManyRequests, oauthError("slow_down", re.Error()))
		return
	case err != nil:
		f.cfg.Logger.ErrorContext(r.Context(), "client registration", "err", err)
		writeJSON(w, http.StatusInternalServerError, oauthError("server_error", "ctalk could not register the client: retry shortly"))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  stored.ID,
		"client_id_issued_at":        stored.CreatedAt.Unix(),
		"client_name":                stored.Name,
		"redirect_uris":              stored.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

// revoke is token revocation (RFC 7009): 200 whatever the token was.
func (f *Face) revoke(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(w, r); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", err.Error()))
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "token is required"))
		return
	}
	if err := f.cfg.Relay.RevokeOAuthToken(r.Context(), token, r.PostForm.Get("client_id")); err != nil {
		f.cfg.Logger.ErrorContext(r.Context(), "revocation endpoint", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, oauthError("temporarily_unavailable", "ctalk could not revoke the token: retry shortly"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// parseForm reads an application/x-www-form-urlencoded body of bounded size.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return errors.New("send the parameters as application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return errors.New("the form could not be read (over 64 KiB, or malformed)")
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// redirectWith returns redirect with params added to its query (RFC 6749
// §4.1.2: the redirect URI's own query is kept).
func redirectWith(redirect string, params url.Values) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	q := u.Query()
	for k, vs := range params {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
