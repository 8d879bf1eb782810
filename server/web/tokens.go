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
// CSRF token and the button's words.
type revokeForm struct {
	CSRF  string
	T     relay.MyToken
	Label string
}

type tokensView struct {
	base
	Login, Web, Clients []relay.MyToken
	More                bool
}

// tokens lists what the person holds; its forms revoke one at a time.
// Revoking this very session signs the browser out.
func (f *Face) tokens(w http.ResponseWriter, r *http.Request, s *session) {
	v := &tokensView{base: base{Title: "Tokens and connected clients", Nav: "tokens"}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		out, err := f.cfg.Relay.RevokeMyToken(r.Context(), s.cred, r.PostForm.Get("id"))
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
	for _, t := range list.Tokens {
		if t.Kind == relay.TokenKindWeb {
			v.Web = append(v.Web, t)
		} else {
			v.Login = append(v.Login, t)
		}
	}
	v.Clients, v.More = list.Clients, list.More
	f.page.render(w, status, "tokens", &v.base, v)
}
