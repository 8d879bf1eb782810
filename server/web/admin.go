package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

// The admin console (issue 13): the organization's people (register,
// deactivate and reactivate, reset a password, profile notes, the admin
// role), every live token and connected client, the audit log and the
// admin password. Who may do what is the relay's: each page authorizes
// with relay.Admin{Session: …}, the signed-in person's admin role, so
// admin work never needs the admin password in a conversation. A person
// without the role gets the page that grants it on the admin password.

// adminOf is what authorizes the session's admin actions.
func adminOf(s *session) relay.Admin {
	cred := s.cred
	return relay.Admin{Session: &cred}
}

type becomeView struct {
	base
}

// becomePage is the page of a person without the admin role: the form
// that grants it on the organization's admin password. msg, when set, is
// why they are here (the relay's refusal) or why the password failed.
func (f *Face) becomePage(w http.ResponseWriter, status int, s *session, msg string) {
	v := &becomeView{base: base{Title: "Admin", Nav: "admin", Alert: msg}}
	v.setSession(s)
	f.page.render(w, status, "admin-become", &v.base, v)
}

// adminFail shows a relay error on an admin page: a person without the
// admin role gets the become-admin page; anything else as fail does.
func (f *Face) adminFail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var re *relay.Error
	if errors.As(err, &re) && re.Kind == relay.KindForbidden {
		f.becomePage(w, http.StatusForbidden, s, re.Error())
		return
	}
	f.fail(w, r, s, err)
}

// formError is the message (and status) to show on an admin form for an
// error the person can fix there; "" when adminFail must answer instead.
func formError(err error) (string, int) {
	var re *relay.Error
	if !errors.As(err, &re) {
		return "", 0
	}
	switch re.Kind {
	case relay.KindBadInput, relay.KindConflict, relay.KindThrottled, relay.KindNotFound:
		return re.Error(), statusOf(re)
	}
	return "", 0
}

// alertOr shows a post's error the person can fix as the page's alert and
// returns its status; any other error it answers (answered).
func (f *Face) alertOr(w http.ResponseWriter, r *http.Request, s *session, b *base, err error) (status int, answered bool) {
	msg, status := formError(err)
	if msg == "" {
		f.adminFail(w, r, s, err)
		return 0, true
	}
	b.Alert = msg
	return status, false
}

// adminPasswordError is the message for an admin password the relay
// refused, or "" when the refusal is another (a session that stopped
// working: adminFail signs out).
func (f *Face) adminPasswordError(err error) (string, int) {
	if msg, status := formError(err); msg != "" {
		return msg, status
	}
	if errors.Is(err, relay.ErrBadAdminPassword) {
		return err.Error(), http.StatusForbidden
	}
	return "", 0
}

// adminBecome grants the signed-in person the admin role on the
// organization's admin password, entered once.
func (f *Face) adminBecome(w http.ResponseWriter, r *http.Request, s *session) {
	_, err := f.cfg.Relay.BecomeAdmin(f.withAddr(r), s.cred, r.PostForm.Get("admin_password"))
	if err == nil {
		seeOther(w, r, Prefix+"/admin?ok=admin")
		return
	}
	if msg, status := f.adminPasswordError(err); msg != "" {
		f.becomePage(w, status, s, msg)
		return
	}
	f.adminFail(w, r, s, err)
}

// newPerson is the register form's fields, kept when it is refused.
type newPerson struct {
	UserID, Name, Ownership, Notes string
}

type adminPeopleView struct {
	base
	People []relay.AdminPerson
	Form   newPerson
}

// admin lists the organization's people and registers a new one: the
// relay's generated password is shown once, on the page that answers the
// post (never in a URL or a log).
func (f *Face) admin(w http.ResponseWriter, r *http.Request, s *session) {
	if r.Method == http.MethodGet && !s.me.Admin {
		f.becomePage(w, http.StatusOK, s, "")
		return
	}
	v := &adminPeopleView{base: base{Title: "Admin", Nav: "admin", Sub: "people"}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		v.Form = newPerson{UserID: r.PostForm.Get("user_id"), Name: r.PostForm.Get("name"),
			Ownership: r.PostForm.Get("ownership"), Notes: r.PostForm.Get("notes")}
		pw := relay.GeneratePassword()
		p, err := f.cfg.Relay.RegisterUser(f.withAddr(r), adminOf(s), relay.NewUser{UserID: v.Form.UserID, Name: v.Form.Name,
			Password: pw, Ownership: v.Form.Ownership, Notes: v.Form.Notes})
		if err == nil {
			f.showPassword(w, r, s, p, pw, true)
			return
		}
		var answered bool
		if status, answered = f.alertOr(w, r, s, &v.base, err); answered {
			return
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	people, err := f.cfg.Relay.ListOrgPeople(r.Context(), adminOf(s))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v.People = people
	f.page.render(w, status, "admin", &v.base, v)
}

type passwordView struct {
	base
	Person     relay.Profile
	Password   string
	Registered bool   // a new person; else a reset
	Base       string // the server's URL, for what to tell the person
}

// showPassword answers a register or reset post with the new password,
// shown this once (the response is no-store, like every page) with what
// to tell the person.
func (f *Face) showPassword(w http.ResponseWriter, r *http.Request, s *session, p relay.Profile, pw string, registered bool) {
	v := &passwordView{base: base{Title: "Password for " + p.Name, Nav: "admin", Sub: "people"}, Person: p, Password: pw,
		Registered: registered, Base: f.cfg.BaseURL(r)}
	if registered {
		v.Title = p.Name + " is registered"
	}
	v.setSession(s)
	f.page.render(w, http.StatusOK, "admin-password-shown", &v.base, v)
}

type adminPersonView struct {
	base
	P     relay.AdminPerson
	IsMe  bool
	Notes string // the profile notes box
}

// adminPerson is one person as an admin manages them. Its posts act on
// them; a person who is not in the admin's organization (missing, of
// another organization, a malformed id) is the one not-found page.
func (f *Face) adminPerson(w http.ResponseWriter, r *http.Request, s *session) {
	people, err := f.cfg.Relay.ListOrgPeople(r.Context(), adminOf(s))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	id := r.PathValue("id")
	v := &adminPersonView{base: base{Nav: "admin", Sub: "people"}}
	found := false
	for _, p := range people {
		if p.UserID == id {
			v.P, found = p, true
		}
	}
	if !found {
		f.notFound(w, s)
		return
	}
	v.Title, v.IsMe, v.Notes = v.P.Name, id == s.me.UserID, v.P.ProfileNotes
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		done, err := f.adminAct(w, r, s, id, v)
		if done == "" && err == nil {
			return // answered
		}
		if err == nil {
			seeOther(w, r, Prefix+"/admin/people/"+url.PathEscape(id)+"?ok="+done)
			return
		}
		var ok bool
		if errors.Is(err, errNoAction) {
			v.Alert, status = "Press one of the buttons on this page.", http.StatusBadRequest
		} else if status, ok = f.alertOr(w, r, s, &v.base, err); ok {
			return
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	f.page.render(w, status, "admin-person", &v.base, v)
}

// adminAct does the posted action on person id and returns the
// confirmation's key, or "" and nil when it answered the request itself.
func (f *Face) adminAct(w http.ResponseWriter, r *http.Request, s *session, id string, v *adminPersonView) (string, error) {
	ctx, a := f.withAddr(r), adminOf(s)
	var err error
	switch r.PostForm.Get("action") {
	case "deactivate":
		_, err = f.cfg.Relay.DeactivateUser(ctx, a, id)
		return "deactivated", err
	case "reactivate":
		_, err = f.cfg.Relay.ReactivateUser(ctx, a, id)
		return "reactivated", err
	case "grant":
		_, err = f.cfg.Relay.SetAdminRole(ctx, a, id, true)
		return "granted", err
	case "ungrant":
		_, err = f.cfg.Relay.SetAdminRole(ctx, a, id, false)
		return "ungranted", err
	case "notes":
		v.Notes = r.PostForm.Get("profile_notes")
		_, err = f.cfg.Relay.UpdateUserProfileNotes(ctx, a, id, v.Notes)
		return "profile", err
	case "reset":
		pw := relay.GeneratePassword()
		if _, err = f.cfg.Relay.ResetUserPassword(ctx, a, id, pw); err != nil {
			return "reset", err
		}
		f.showPassword(w, r, s, v.P.Profile, pw, false)
		return "", nil
	}
	return "", errNoAction
}

// errNoAction: the post named no action this page knows.
var errNoAction = errors.New("no such action")

type adminTokensView struct {
	base
	Login, Web, Clients []relay.OrgToken
	More                bool
}

// adminTokens lists every live login token, web session and connected
// client of the organization's people; its forms revoke one at a time.
func (f *Face) adminTokens(w http.ResponseWriter, r *http.Request, s *session) {
	v := &adminTokensView{base: base{Title: "Tokens of the organization", Nav: "admin", Sub: "tokens"}}
	v.setSession(s)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		_, err := f.cfg.Relay.RevokeOrgToken(f.withAddr(r), adminOf(s), r.PostForm.Get("id"))
		if err == nil {
			seeOther(w, r, Prefix+"/admin/tokens?ok=revoked")
			return
		}
		var answered bool
		if status, answered = f.alertOr(w, r, s, &v.base, err); answered {
			return
		}
	} else {
		v.Status = statusText[r.URL.Query().Get("ok")]
	}
	list, err := f.cfg.Relay.ListOrgTokens(r.Context(), adminOf(s))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v.Login, v.Web = byKind(list.Tokens, func(t relay.OrgToken) string { return t.Kind })
	v.Clients, v.More = list.Clients, list.More
	f.page.render(w, status, "admin-tokens", &v.base, v)
}

// auditRow is one audit log entry in words.
type auditRow struct {
	At                           time.Time
	Who, Action, Whom, Addr, Det string
	WhoIsPerson                  bool
}

// auditWords says what each audit action did, as "who … whom".
var auditWords = map[string]string{
	relay.AuditRegister:       "registered",
	relay.AuditDeactivate:     "deactivated",
	relay.AuditReactivate:     "reactivated",
	relay.AuditPasswordReset:  "reset the password of",
	relay.AuditProfileNotes:   "edited the profile notes of",
	relay.AuditRoleGrant:      "gave the admin role to",
	relay.AuditRoleRevoke:     "took the admin role from",
	relay.AuditAdminPassword:  "changed the admin password",
	relay.AuditSignIn:         "signed in",
	relay.AuditSignInLocked:   "sign-in locked for",
	relay.AuditAdminLocked:    "admin password locked",
	relay.AuditPasswordChange: "changed the password of",
	relay.AuditTokenRevoke:    "revoked a token of",
	relay.AuditExport:         "downloaded the organization's data",
	relay.AuditNotifySettings: "saved the notification settings of",
	relay.AuditNotifyExcerpts: "changed the notification excerpts",
}

func auditRowOf(e relay.AuditEntry) auditRow {
	row := auditRow{At: e.At, Who: e.Actor, Action: auditWords[e.Action], Whom: e.Target, Addr: e.Address, Det: e.Detail,
		WhoIsPerson: e.Actor != ""}
	if row.Action == "" {
		row.Action = e.Action
	}
	if e.Actor == "" {
		// No person acted: the admin password did, or nobody (a lock).
		row.Who = "admin password"
		if e.Action == relay.AuditSignInLocked || e.Action == relay.AuditAdminLocked {
			row.Who = "—"
		}
	}
	return row
}

type adminAuditView struct {
	base
	Rows       []auditRow
	Before     int64
	NextBefore int64
}

// adminAudit is the organization's audit log, newest first, a page at a time.
func (f *Face) adminAudit(w http.ResponseWriter, r *http.Request, s *session) {
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	page, err := f.cfg.Relay.ListAudit(r.Context(), adminOf(s), max(before, 0))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v := &adminAuditView{base: base{Title: "Audit log", Nav: "admin", Sub: "audit"}, Before: max(before, 0), NextBefore: page.NextBefore}
	for _, e := range page.Entries {
		v.Rows = append(v.Rows, auditRowOf(e))
	}
	v.setSession(s)
	f.page.render(w, http.StatusOK, "admin-audit", &v.base, v)
}

// adminPassword changes the organization's admin password: the current
// one, the new one twice.
func (f *Face) adminPassword(w http.ResponseWriter, r *http.Request, s *session) {
	v := &becomeView{base: base{Title: "Admin password", Nav: "admin", Sub: "password"}}
	v.setSession(s)
	if !s.me.Admin && r.Method == http.MethodGet {
		f.becomePage(w, http.StatusForbidden, s, "")
		return
	}
	if r.Method == http.MethodGet {
		v.Status = statusText[r.URL.Query().Get("ok")]
		f.page.render(w, http.StatusOK, "admin-admin-password", &v.base, v)
		return
	}
	newPw := r.PostForm.Get("new_password")
	if newPw != r.PostForm.Get("repeat_password") {
		v.Alert = "The new password and its repeat differ, so nothing changed: type them again."
		f.page.render(w, http.StatusBadRequest, "admin-admin-password", &v.base, v)
		return
	}
	err := f.cfg.Relay.ChangeAdminPassword(f.withAddr(r), adminOf(s), r.PostForm.Get("current_password"), newPw)
	if err == nil {
		seeOther(w, r, Prefix+"/admin/password?ok=adminpw")
		return
	}
	msg, status := f.adminPasswordError(err)
	if msg == "" {
		f.adminFail(w, r, s, err)
		return
	}
	v.Alert = msg
	f.page.render(w, status, "admin-admin-password", &v.base, v)
}
