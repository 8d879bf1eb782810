package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageNames are the pages; each is parsed with the layout and the style.
var pageNames = []string{"signin", "inbox", "question", "asked", "people", "person", "tokens", "error", "thread", "search",
	"admin-become", "admin", "admin-password-shown", "admin-person", "admin-tokens", "admin-audit", "admin-admin-password",
	"admin-data", "admin-delete", "deleted", "notify", "admin-notify"}

type pages struct {
	t map[string]*template.Template
}

var funcs = template.FuncMap{
	// revokeForm is what the tokens page's "revoke" template needs.
	"revokeForm": func(csrf string, t relay.MyToken, label string) revokeForm {
		return revokeForm{CSRF: csrf, T: t, Label: label, Action: Prefix + "/tokens"}
	},
	// orgRevokeForm is the same for the admin's tokens page.
	"orgRevokeForm": func(csrf string, t relay.MyToken, label string) revokeForm {
		return revokeForm{CSRF: csrf, T: t, Label: label, Action: Prefix + "/admin/tokens"}
	},
	// turnList is what the "turns" template needs: a conversation's turns,
	// the viewer (whose words read "You") and the questions still waiting.
	"turnList": func(turns []relay.Turn, me string, waiting []int64) turnList {
		l := turnList{Turns: turns, Me: me, Waiting: map[int64]bool{}}
		for _, id := range waiting {
			l.Waiting[id] = true
		}
		return l
	},
	// when shows a time in UTC, to the minute.
	"when": func(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") },
	// iso is a time for a <time datetime> attribute.
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"deref2": func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	},
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
}

type turnList struct {
	Turns   []relay.Turn
	Me      string
	Waiting map[int64]bool
}

func newPages() *pages {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		p.t[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/style.html", "templates/"+name+".html"))
	}
	return p
}

// base is what every page shows around its content.
type base struct {
	Title string
	Nonce string
	CSRF  string
	Me    *relay.WebMe
	Nav   string // the current section: inbox, asked, search, people, settings, admin
	// Sub is the page within a section: the settings' notify or tokens; the
	// admin console's people, tokens, audit, password, notify or data.
	Sub    string
	Alert  string // an error, shown with role=alert
	Status string // a confirmation, shown with role=status
	Live   string // the live-updates script's URL (live.go), or "" for none
}

func (b *base) setSession(s *session) {
	if s != nil {
		b.CSRF, b.Me = s.csrf, &s.me
	}
}

// statusText are the confirmations a redirect after a post may ask for by key.
var statusText = map[string]string{
	"saved":    "Draft saved. It is not sent: press Send when it is ready.",
	"sent":     "Answer sent.",
	"asked":    "Question sent. Its answer shows here when it comes.",
	"followup": "Question sent: it waits in their inbox, and the answer shows here when it comes.",
	"notes":    "Your notes are saved.",
	"out":      "You are signed out.",
	"revoked":  "Revoked: it no longer works anywhere.",
	// the admin console's
	"admin":       "You are an admin of this organization now: these pages are yours whenever you are signed in.",
	"deactivated": "Deactivated: their sessions and tokens stopped working, and they cannot sign in.",
	"reactivated": "Reactivated: they can sign in again; their old tokens stay revoked.",
	"granted":     "They hold the admin role now.",
	"ungranted":   "They no longer hold the admin role.",
	"profile":     "Profile notes saved.",
	"adminpw":     "The admin password is changed. The MCP admin tools take the new one from now on.",
	// notifications
	"notify":       "Notification settings saved.",
	"rotated":      "A new signing secret is made: your receiver must check signatures with it from now on.",
	"excerpts-on":  "Notifications now carry a short excerpt of the question or answer.",
	"excerpts-off": "Notifications now carry no question or answer text.",
}

func (p *pages) render(w http.ResponseWriter, status int, name string, b *base, data any) {
	b.Nonce = nonce()
	var buf bytes.Buffer
	if err := p.t[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "ctalk could not render this page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	script := ""
	if b.Live != "" {
		// Only pages with live updates run a script: this site's file, which
		// listens to /app/events and fetches the page again.
		script = "script-src 'self'; connect-src 'self'; "
	}
	h.Set("Content-Security-Policy", "default-src 'none'; "+script+"style-src 'nonce-"+b.Nonce+"'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

type errorView struct {
	base
	Message string
}

func (p *pages) error(w http.ResponseWriter, status int, s *session, msg string) {
	v := &errorView{base: base{Title: "Not possible"}, Message: msg}
	if status == http.StatusNotFound {
		v.Title = "Not found"
	}
	v.setSession(s)
	p.render(w, status, "error", &v.base, v)
}

func nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
