package oauth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

// authzRequest is an authorization request (RFC 6749 §4.1.1 with PKCE and
// RFC 8707's resource) as the client sent it. The sign-in form carries it
// back in hidden fields and it is checked again on the post, so any
// replica can answer either step.
type authzRequest struct {
	ResponseType, ClientID, RedirectURI, State, Challenge, Method, Scope, Resource string
}

func readAuthzRequest(form url.Values) authzRequest {
	return authzRequest{
		ResponseType: form.Get("response_type"), ClientID: form.Get("client_id"), RedirectURI: form.Get("redirect_uri"),
		State: form.Get("state"), Challenge: form.Get("code_challenge"), Method: form.Get("code_challenge_method"),
		Scope: form.Get("scope"), Resource: form.Get("resource"),
	}
}

// hidden lists the request's fields for the form to carry back.
func (a authzRequest) hidden() []field {
	return []field{
		{"response_type", a.ResponseType}, {"client_id", a.ClientID}, {"redirect_uri", a.RedirectURI},
		{"state", a.State}, {"code_challenge", a.Challenge}, {"code_challenge_method", a.Method},
		{"scope", a.Scope}, {"resource", a.Resource},
	}
}

type field struct{ Name, Value string }

// query is the request as an authorization URL's query.
func (a authzRequest) query() string {
	q := url.Values{}
	for _, f := range a.hidden() {
		if f.Value != "" {
			q.Set(f.Name, f.Value)
		}
	}
	return q.Encode()
}

// checked is a request whose client and redirect URI are trusted: errors
// from here on go back to the client's redirect URI.
type checked struct {
	authzRequest
	client Client
	req    relay.AuthorizeRequest
}

// pageError is a problem with the request that must not be redirected to
// the client (unknown client, redirect URI not the client's): it is shown
// on ctalk's own page.
type pageError struct{ msg string }

func (e *pageError) Error() string { return e.msg }

// check validates a request. A *pageError means "show it here"; an
// *relay.OAuthError means "send it to the client's redirect URI".
func (f *Face) check(r *http.Request, a authzRequest) (checked, error) {
	c := checked{authzRequest: a}
	if a.ClientID == "" {
		return c, &pageError{"The link that brought you here has no client_id. Go back to the app and connect again."}
	}
	var err error
	if f.cfg.Fetcher.IsMetadataURL(a.ClientID) {
		c.client, err = f.cfg.Fetcher.Get(r.Context(), a.ClientID)
	} else {
		c.client, err = f.registeredClient(r, a.ClientID)
	}
	if err != nil {
		var ce *ClientError
		if errors.As(err, &ce) {
			return c, &pageError{"ctalk cannot check the app that sent you here: " + ce.Description}
		}
		var re *relay.Error
		if errors.As(err, &re) {
			return c, &pageError{"The app that sent you here is not registered with ctalk (" + re.Error() + "). Go back and connect again."}
		}
		f.cfg.Logger.ErrorContext(r.Context(), "resolving an OAuth client", "err", err)
		return c, &pageError{"ctalk could not check the app that sent you here. Try again in a moment."}
	}
	if a.RedirectURI == "" && len(c.client.RedirectURIs) == 1 && !isLoopbackRedirect(c.client.RedirectURIs[0]) {
		c.RedirectURI = c.client.RedirectURIs[0]
	}
	if !RedirectAllowed(c.client.RedirectURIs, c.RedirectURI) {
		return c, &pageError{"The app asked to return you to an address it did not register, so ctalk will not send you there. " +
			"Go back to the app and connect again."}
	}
	resource := f.Resource(r)
	switch {
	case a.ResponseType != "code":
		return c, &relay.OAuthError{Code: "unsupported_response_type", Description: "ctalk supports response_type=code only"}
	case a.Challenge == "" || a.Method != "S256" || !relay.ValidChallenge(a.Challenge):
		return c, &relay.OAuthError{Code: "invalid_request", Description: "PKCE is required: send code_challenge with code_challenge_method=S256"}
	case a.Resource != "" && !relay.SameResource(a.Resource, resource):
		return c, &relay.OAuthError{Code: "invalid_target", Description: "ctalk's resource is " + resource}
	}
	scope, err := relay.NormalizeScope(a.Scope)
	if err != nil {
		return c, err
	}
	c.req = relay.AuthorizeRequest{
		ClientID: c.client.ID, ClientName: c.client.Name, RedirectURI: c.RedirectURI, CodeChallenge: a.Challenge,
		Resource: resource, Scope: scope,
	}
	return c, nil
}

func (f *Face) registeredClient(r *http.Request, id string) (Client, error) {
	rc, err := f.cfg.Relay.OAuthClient(r.Context(), id)
	if err != nil {
		return Client{}, err
	}
	return Client{ID: rc.ID, Name: rc.Name, RedirectURIs: rc.RedirectURIs}, nil
}

// authorize is the authorization endpoint: GET shows the sign-in page, POST
// checks the person's password and sends them back to the client.
func (f *Face) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if err := parseForm(w, r); err != nil {
			f.page.error(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	a := readAuthzRequest(r.URL.Query())
	if r.Method == http.MethodPost {
		a = readAuthzRequest(r.PostForm)
	}
	c, err := f.check(r, a)
	var pe *pageError
	if errors.As(err, &pe) {
		f.page.error(w, http.StatusBadRequest, pe.msg)
		return
	}
	var oe *relay.OAuthError
	if errors.As(err, &oe) {
		f.back(w, r, c, url.Values{"error": {oe.Code}, "error_description": {oe.Description}})
		return
	} else if err != nil {
		f.cfg.Logger.ErrorContext(r.Context(), "authorization request", "err", err)
		f.page.error(w, http.StatusInternalServerError, "ctalk could not read this request. Try again in a moment.")
		return
	}
	csrf, fresh := f.csrfCookie(w, r)
	view := signInView{Client: c.client, Redirect: c.RedirectURI, Hidden: a.hidden(), CSRF: csrf,
		Return: authorizePath + "?" + a.query()}
	if r.Method == http.MethodGet {
		f.page.signIn(w, http.StatusOK, view)
		return
	}
	if fresh || !validCSRF(r, csrf) {
		view.Alert = "This form expired or came from another site. Check the details and sign in again."
		f.page.signIn(w, http.StatusForbidden, view)
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		f.back(w, r, c, url.Values{"error": {"access_denied"}, "error_description": {"the person declined to connect"}})
		return
	}
	view.OrgID, view.UserID = r.PostForm.Get("org_id"), r.PostForm.Get("user_id")
	code, err := f.cfg.Relay.Authorize(f.withAddr(r), c.req, view.OrgID, view.UserID, r.PostForm.Get("password"))
	var re *relay.Error
	switch {
	case errors.As(err, &re):
		view.Alert = re.Error()
		status := http.StatusUnauthorized
		if re.Kind == relay.KindThrottled {
			status = http.StatusTooManyRequests
		}
		f.page.signIn(w, status, view)
		return
	case err != nil:
		f.cfg.Logger.ErrorContext(r.Context(), "sign-in", "err", err)
		view.Alert = "ctalk could not sign you in just now. Try again in a moment."
		f.page.signIn(w, http.StatusInternalServerError, view)
		return
	}
	f.back(w, r, c, url.Values{"code": {code}})
}

// back sends the person to the client's redirect URI with params, the
// state and the issuer (RFC 9207).
func (f *Face) back(w http.ResponseWriter, r *http.Request, c checked, params url.Values) {
	if c.State != "" {
		params.Set("state", c.State)
	}
	params.Set("iss", f.base(r))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, redirectWith(c.RedirectURI, params), http.StatusSeeOther)
}

// csrfCookie returns the browser's CSRF token, setting a new one when it
// has none. The form must carry the same value back (double submit); the
// cookie is SameSite=Strict, so another site can neither send nor read it.
// fresh reports a cookie set just now: a post that brought none fails.
func (f *Face) csrfCookie(w http.ResponseWriter, r *http.Request) (value string, fresh bool) {
	secure := strings.HasPrefix(f.base(r), "https://")
	name := csrfName(secure)
	if ck, err := r.Cookie(name); err == nil && len(ck.Value) == 43 {
		return ck.Value, false
	}
	b := make([]byte, 32)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: name, Value: v, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	return v, true
}

func csrfName(secure bool) string {
	if secure {
		return "__Host-ctalk_csrf"
	}
	return "ctalk_csrf"
}

func validCSRF(r *http.Request, cookie string) bool {
	got := r.PostForm.Get("csrf_token")
	return subtle.ConstantTimeCompare([]byte(got), []byte(cookie)) == 1
}

func isLoopbackRedirect(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "http" {
		return false
	}
	h := p.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}
