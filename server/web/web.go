// Package web is ctalk's face for people in a browser: server-rendered
// pages (html/template, embedded, no JavaScript) to read the questions
// waiting for you, answer them, ask, and see the directory. Every rule is
// the relay's: a page never re-implements what a tool enforces.
//
// A signed-in browser holds a web session token (relay.SignInWeb) in an
// HttpOnly cookie; every relay call gets Credentials{Bearer: that token,
// Resource: relay.WebResource}, so a session works only here and MCP tokens
// never work here. Forms carry a CSRF token derived from the session token
// (the sign-in form, before any session, a double-submit cookie); the
// Content-Security-Policy allows no script at all and one nonce'd style.
package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

// Prefix is where the pages live.
const Prefix = "/app"

// maxFormBytes bounds a posted form: an answer is at most 16,000 characters.
const maxFormBytes = 256 << 10

// Config is what the web face needs.
type Config struct {
	Relay *relay.Service
	// BaseURL is the URL people reach this server at; https there (or a TLS
	// request) makes the cookies Secure and __Host- prefixed.
	BaseURL func(*http.Request) string
	// ClientAddr names the client's address for the password throttle.
	ClientAddr func(*http.Request) string
	Logger     *slog.Logger
}

// Face serves the pages.
type Face struct {
	cfg  Config
	page *pages
}

// New returns the web face.
func New(cfg Config) *Face {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = func(*http.Request) string { return "" }
	}
	return &Face{cfg: cfg, page: newPages()}
}

// Routes registers the pages on mux.
func (f *Face) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+Prefix+"/signin", f.signIn)
	mux.HandleFunc("POST "+Prefix+"/signin", f.signIn)
	mux.HandleFunc("POST "+Prefix+"/signout", f.signedIn(f.signOut))
	mux.HandleFunc("GET "+Prefix, f.signedIn(f.inbox))
	mux.HandleFunc("GET "+Prefix+"/{$}", f.signedIn(f.inbox))
	mux.HandleFunc("GET "+Prefix+"/q/{id}", f.signedIn(f.question))
	mux.HandleFunc("POST "+Prefix+"/q/{id}", f.signedIn(f.question))
	mux.HandleFunc("GET "+Prefix+"/asked", f.signedIn(f.asked))
	mux.HandleFunc("POST "+Prefix+"/asked", f.signedIn(f.asked))
	mux.HandleFunc("GET "+Prefix+"/thread/{id}", f.signedIn(f.thread))
	mux.HandleFunc("POST "+Prefix+"/thread/{id}", f.signedIn(f.thread))
	mux.HandleFunc("GET "+Prefix+"/search", f.signedIn(f.search))
	mux.HandleFunc("GET "+Prefix+"/people", f.signedIn(f.people))
	mux.HandleFunc("POST "+Prefix+"/people", f.signedIn(f.people))
	mux.HandleFunc("GET "+Prefix+"/people/{id}", f.signedIn(f.person))
	mux.HandleFunc("GET "+Prefix+"/tokens", f.signedIn(f.tokens))
	mux.HandleFunc("POST "+Prefix+"/tokens", f.signedIn(f.tokens))
	mux.HandleFunc("GET "+Prefix+"/events", f.signedIn(f.events))
	mux.HandleFunc("GET "+Prefix+"/settings", f.signedIn(func(w http.ResponseWriter, r *http.Request, _ *session) {
		seeOther(w, r, Prefix+"/settings/notifications")
	}))
	mux.HandleFunc("GET "+Prefix+"/settings/notifications", f.signedIn(f.notifySettings))
	mux.HandleFunc("POST "+Prefix+"/settings/notifications", f.signedIn(f.notifySettings))
	mux.HandleFunc("GET "+Prefix+"/admin", f.signedIn(f.admin))
	mux.HandleFunc("POST "+Prefix+"/admin", f.signedIn(f.admin))
	mux.HandleFunc("POST "+Prefix+"/admin/become", f.signedIn(f.adminBecome))
	mux.HandleFunc("GET "+Prefix+"/admin/people/{id}", f.signedIn(f.adminPerson))
	mux.HandleFunc("POST "+Prefix+"/admin/people/{id}", f.signedIn(f.adminPerson))
	mux.HandleFunc("GET "+Prefix+"/admin/tokens", f.signedIn(f.adminTokens))
	mux.HandleFunc("POST "+Prefix+"/admin/tokens", f.signedIn(f.adminTokens))
	mux.HandleFunc("GET "+Prefix+"/admin/audit", f.signedIn(f.adminAudit))
	mux.HandleFunc("GET "+Prefix+"/admin/password", f.signedIn(f.adminPassword))
	mux.HandleFunc("POST "+Prefix+"/admin/password", f.signedIn(f.adminPassword))
	mux.HandleFunc("GET "+Prefix+"/admin/notifications", f.signedIn(f.adminNotify))
	mux.HandleFunc("POST "+Prefix+"/admin/notifications", f.signedIn(f.adminNotify))
	mux.HandleFunc("GET "+Prefix+"/admin/data", f.signedIn(f.adminData))
	mux.HandleFunc("POST "+Prefix+"/admin/export", f.signedIn(f.adminExport))
	mux.HandleFunc("GET "+Prefix+"/admin/delete", f.signedIn(f.adminDelete))
	mux.HandleFunc("POST "+Prefix+"/admin/delete", f.signedIn(f.adminDelete))
	mux.HandleFunc("GET "+Prefix+"/static/live.js", f.liveScript)
	mux.HandleFunc(Prefix+"/", f.signedIn(func(w http.ResponseWriter, r *http.Request, s *session) {
		f.notFound(w, s)
	}))
}

// secure reports whether the pages are served over https.
func (f *Face) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(f.cfg.BaseURL(r), "https://")
}

// SessionCookie names the session cookie: __Host- prefixed over https.
func SessionCookie(secure bool) string {
	if secure {
		return "__Host-ctalk_session"
	}
	return "ctalk_session"
}

func csrfCookieName(secure bool) string {
	if secure {
		return "__Host-ctalk_csrf"
	}
	return "ctalk_csrf"
}

// session is the signed-in person of a request.
type session struct {
	cred relay.Credentials
	me   relay.WebMe
	csrf string
}

// csrfFor derives a session's CSRF token: only a page of this session can
// know it (the session token is in an HttpOnly cookie), any replica can
// check it, and it dies with the session.
func csrfFor(token string) string {
	sum := sha256.Sum256([]byte("ctalk web csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func sameString(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// signedIn runs h for a signed-in person; anyone else goes to the sign-in
// page. A post must carry the session's CSRF token.
func (f *Face) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secure := f.secure(r)
		ck, err := r.Cookie(SessionCookie(secure))
		if err != nil || ck.Value == "" {
			f.toSignIn(w, r)
			return
		}
		cred := relay.Credentials{Bearer: ck.Value, Resource: relay.WebResource}
		me, err := f.cfg.Relay.WebSessionUser(r.Context(), cred)
		var re *relay.Error
		switch {
		case errors.As(err, &re) && re.Kind == relay.KindUnauthorized:
			f.clearSession(w, secure)
			f.toSignIn(w, r)
			return
		case err != nil:
			if r.Context().Err() == nil { // not a browser that went away
				f.cfg.Logger.ErrorContext(r.Context(), "web session", "err", err)
			}
			f.page.error(w, http.StatusServiceUnavailable, nil, "ctalk could not check your session just now. Reload the page in a moment.")
			return
		}
		s := &session{cred: cred, me: me, csrf: csrfFor(ck.Value)}
		if r.Method == http.MethodPost {
			if !f.parseForm(w, r, s) {
				return
			}
			if !sameString(r.PostForm.Get("csrf_token"), s.csrf) {
				f.page.error(w, http.StatusForbidden, s, "This form expired or came from another site, so nothing was saved. "+
					"Go back, reload the page and try again.")
				return
			}
		}
		h(w, r, s)
	}
}

func (f *Face) parseForm(w http.ResponseWriter, r *http.Request, s *session) bool {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		f.page.error(w, http.StatusUnsupportedMediaType, s, "ctalk's forms are sent as application/x-www-form-urlencoded.")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		f.page.error(w, http.StatusRequestEntityTooLarge, s, "The form could not be read: it is over 256 KiB or malformed.")
		return false
	}
	return true
}

// toSignIn sends a signed-out visitor to the sign-in page, and back here after.
func (f *Face) toSignIn(w http.ResponseWriter, r *http.Request) {
	target := Prefix + "/signin"
	if r.Method == http.MethodGet && r.URL.Path != Prefix && r.URL.Path != Prefix+"/" {
		target += "?next=" + urlQueryEscape(r.URL.Path)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusSeeOther)
}

func (f *Face) setSession(w http.ResponseWriter, secure bool, token string) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie(secure), Value: token, Path: "/", MaxAge: int(relay.WebSessionMaxAge / time.Second),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
}

func (f *Face) clearSession(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie(secure), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
}

// withAddr gives the rules the client's address, for the throttle.
func (f *Face) withAddr(r *http.Request) context.Context {
	return relay.WithClientAddr(r.Context(), f.cfg.ClientAddr(r))
}

// fail shows a relay error: a dead session goes to sign-in, a missing (or
// not yours) message or user is the one not-found page, anything else the
// relay explains is shown as the page's alert by the caller.
func (f *Face) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var re *relay.Error
	switch {
	case errors.As(err, &re) && re.Kind == relay.KindUnauthorized:
		f.clearSession(w, f.secure(r))
		f.toSignIn(w, r)
	case errors.As(err, &re) && re.Kind == relay.KindNotFound:
		f.notFound(w, s)
	case errors.As(err, &re):
		f.page.error(w, statusOf(re), s, re.Error())
	default:
		if r.Context().Err() == nil { // not a browser that went away
			f.cfg.Logger.ErrorContext(r.Context(), "web page", "path", r.URL.Path, "err", err)
		}
		f.page.error(w, http.StatusInternalServerError, s, "ctalk could not do that just now. Try again in a moment.")
	}
}

// notFound is the one answer for a missing message or person, one of
// another organization, and one that is not the viewer's to see.
func (f *Face) notFound(w http.ResponseWriter, s *session) {
	f.page.error(w, http.StatusNotFound, s, "There is nothing here: no such question or person in your organization for you.")
}

func statusOf(re *relay.Error) int {
	switch re.Kind {
	case relay.KindBadInput:
		return http.StatusBadRequest
	case relay.KindNotFound:
		return http.StatusNotFound
	case relay.KindConflict:
		return http.StatusConflict
	case relay.KindThrottled:
		return http.StatusTooManyRequests
	case relay.KindUnauthorized:
		return http.StatusUnauthorized
	case relay.KindForbidden:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// relayMessage is a relay error's safe message, or "" for an internal one.
func relayMessage(err error) (string, int) {
	var re *relay.Error
	if errors.As(err, &re) {
		return re.Error(), statusOf(re)
	}
	return "", 0
}

// seeOther redirects after a successful post (post/redirect/get).
func seeOther(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// pathID reads a positive message id from the URL; anything else is "none".
func pathID(r *http.Request) int64 {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}
