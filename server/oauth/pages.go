package oauth

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages renders ctalk's own sign-in pages: server-side HTML that works
// without JavaScript, styled by one nonce'd stylesheet, under a strict
// Content-Security-Policy.
type pages struct {
	t *template.Template
}

func newPages() *pages {
	return &pages{t: template.Must(template.ParseFS(templateFS, "templates/*.html"))}
}

// signInView is what the sign-in page shows.
type signInView struct {
	Client   Client
	Redirect string
	Hidden   []field
	CSRF     string
	OrgID    string
	UserID   string
	Alert    string
	Nonce    string
	Return   string // this page's path and query, for the sign-up page to lead back to
}

// ClientHost is the host the client's id or redirect names, shown so the
// person can tell who asks.
func (v signInView) ClientHost() string {
	for _, s := range []string{v.Client.ID, v.Redirect} {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			return u.Hostname()
		}
	}
	return ""
}

// RedirectHost is where the person will be sent back to.
func (v signInView) RedirectHost() string {
	u, err := url.Parse(v.Redirect)
	if err != nil {
		return ""
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Host
}

func (p *pages) signIn(w http.ResponseWriter, status int, v signInView) {
	v.Nonce = nonce()
	p.render(w, status, "signin.html", v, v.Nonce, formTarget(v.Redirect))
}

func (p *pages) signup(w http.ResponseWriter, status int, v signupView) {
	v.Nonce = nonce()
	p.render(w, status, "signup.html", v, v.Nonce, "")
}

func (p *pages) error(w http.ResponseWriter, status int, msg string) {
	n := nonce()
	p.render(w, status, "error.html", struct{ Message, Nonce string }{msg, n}, n, "")
}

func (p *pages) render(w http.ResponseWriter, status int, name string, data any, nonce, redirect string) {
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "ctalk could not render this page", http.StatusInternalServerError)
		return
	}
	formAction := "'self'"
	if redirect != "" {
		// Browsers apply form-action to the redirect that follows the post.
		formAction += " " + redirect
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+nonce+"'; img-src 'self' data:; "+
		"form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// formTarget is the CSP source for a redirect URI: its origin, or its
// scheme for a private-use URI scheme (RFC 8252 §7.1).
func formTarget(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme == "" || strings.ContainsAny(redirect, " ;,'\"") {
		return ""
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	return u.Scheme + "://" + u.Host
}

func nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}
