package web

import (
	"errors"
	"net/http"

	"github.com/ctalk/ctalk/internal/relay"
)

// The "Connected clients and tokens" page: the person's live login tokens,
// web sessions and OAuth connections, each revocable. The rules (whose
// tokens, what an id names, what revoking a connection ends) are the
// relay's: ListMyTokens and RevokeMyToken.

// revokeForm is what the "revoke" template needs: a token, the session's
// CSRF token, the button's words and the page the form posts to.
type revokeForm struct {
	CSRF, Label, Action string
	T                   relay.MyToken
}

type tokensView struct {
	base
	Login, Web, Clients []relay.MyToken
	More                bool
}

// tokens lists what the person holds; its forms revoke one at a time.
// Revoking this very session signs the browser out.
func (f *Face) tokens(w http.ResponseWriter, r *http.Request, s *session) {
	v := &tokensView{base: base{Title: "Tokens and connected clients", Nav: "settings", Sub: "tokens"}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		out, err := f.cfg.Relay.RevokeMyToken(f.withAddr(r), s.cred, r.PostForm.Get("id"))
		if err == nil {
			if out.Current {
				f.clearSession(w, f.secure(r))
				seeOther(w, r, Prefix+"/signin?ok=out")
				return
			}
			seeOther(w, r, Prefix+"/tokens?ok=revoked")
			return
		}
		msg, st := relayMessage(err)
		var re *relay.Error
		if msg == "" || (errors.As(err, &re) && re.Kind == relay.KindUnauthorized) {
			f.fail(w, r, s, err)
			return
		}
		v.Alert, status = msg, st
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	list, err := f.cfg.Relay.ListMyTokens(r.Context(), s.cred)
	if err != nil {
		f.fail(w, r, s, err)
		return
	}
	v.Login, v.Web = byKind(list.Tokens, func(t relay.MyToken) string { return t.Kind })
	v.Clients, v.More = list.Clients, list.More
	f.page.render(w, status, "tokens", &v.base, v)
}

// byKind splits tokens into login tokens and web sessions.
func byKind[T any](tokens []T, kind func(T) string) (login, web []T) {
	for _, t := range tokens {
		if kind(t) == relay.TokenKindWeb {
			web = append(web, t)
		} else {
			login = append(login, t)
		}
	}
	return login, web
}
