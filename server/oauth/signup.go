package oauth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/ctalk/ctalk/internal/relay"
)

const signupPath = "/oauth/signup"

// signupView is what the sign-up page shows.
type signupView struct {
	OrgID, OrgName, UserID, Name, Ownership string
	Return, CSRF, Alert, Nonce              string
	Done                                    bool
	MCPURL                                  string
}

// safeReturn keeps a return link only when it leads back to ctalk's own
// authorization page, so the page is no open redirect.
func safeReturn(s string) string {
	if strings.HasPrefix(s, authorizePath+"?") && !strings.ContainsAny(s, "\\\r\n") {
		return s
	}
	return ""
}

// signup lets an organization's admin register it and themselves from the
// web: the seed's register_organization and register_user in one form.
func (f *Face) signup(w http.ResponseWriter, r *http.Request) {
	view := signupView{MCPURL: f.Resource(r)}
	if r.Method == http.MethodGet {
		view.Return = safeReturn(r.URL.Query().Get("return"))
		view.CSRF, _ = f.csrfCookie(w, r)
		f.page.signup(w, http.StatusOK, view)
		return
	}
	if err := parseForm(w, r); err != nil {
		f.page.error(w, http.StatusBadRequest, err.Error())
		return
	}
	pf := r.PostForm
	view.OrgID, view.OrgName, view.UserID = pf.Get("org_id"), pf.Get("org_name"), pf.Get("user_id")
	view.Name, view.Ownership, view.Return = pf.Get("name"), pf.Get("ownership"), safeReturn(pf.Get("return"))
	csrf, fresh := f.csrfCookie(w, r)
	view.CSRF = csrf
	if fresh || !validCSRF(r, csrf) {
		view.Alert = "This form expired or came from another site. Check the details and send it again."
		f.page.signup(w, http.StatusForbidden, view)
		return
	}
	_, _, err := f.cfg.Relay.RegisterTeam(f.withAddr(r),
		relay.NewOrganization{OrgID: view.OrgID, Name: view.OrgName, AdminPassword: pf.Get("admin_password")},
		relay.NewUser{UserID: view.UserID, Name: view.Name, Password: pf.Get("password"), Ownership: view.Ownership})
	var re *relay.Error
	switch {
	case errors.As(err, &re):
		view.Alert = re.Error()
		status := http.StatusBadRequest
		switch re.Kind {
		case relay.KindThrottled:
			status = http.StatusTooManyRequests
		case relay.KindConflict:
			status = http.StatusConflict
		}
		f.page.signup(w, status, view)
		return
	case err != nil:
		f.cfg.Logger.ErrorContext(r.Context(), "sign-up", "err", err)
		view.Alert = "ctalk could not register the organization just now. Try again in a moment."
		f.page.signup(w, http.StatusInternalServerError, view)
		return
	}
	view.Done = true
	f.page.signup(w, http.StatusCreated, view)
}
