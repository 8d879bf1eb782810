package web

import (
	"net/http"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

// The admin console's data pages (issue 15): the organization's data as a
// download (relay.ExportOrganization, JSON lines) and the organization's
// deletion (relay.DeleteOrganization, confirmed by typing its id). Both
// authorize with the session's admin role, like every admin page.

// exportWriteTimeout bounds one download: longer than the server's write
// timeout, which would cut a large organization's export.
const exportWriteTimeout = 15 * time.Minute

type adminDataView struct {
	base
	People  int // how many people go with the organization
	Confirm string
}

// adminData is the data page: the download and the way to deletion.
func (f *Face) adminData(w http.ResponseWriter, r *http.Request, s *session) {
	f.dataPage(w, r, s, "admin-data", "Data of the organization")
}

// dataPage shows name (the data or the delete page) to an admin; a person
// without the role gets the become-admin page.
func (f *Face) dataPage(w http.ResponseWriter, r *http.Request, s *session, name, title string) {
	if !s.me.Admin {
		f.becomePage(w, http.StatusForbidden, s, "")
		return
	}
	people, err := f.cfg.Relay.ListOrgPeople(r.Context(), adminOf(s))
	if err != nil {
		f.adminFail(w, r, s, err)
		return
	}
	v := &adminDataView{base: base{Title: title, Nav: "admin", Sub: "data"}, People: len(people)}
	v.setSession(s)
	f.page.render(w, http.StatusOK, name, &v.base, v)
}

// download is the export's response: its headers go out with the first
// byte, so a refusal before any (not an admin, a session that ended) can
// still be a page, and nobody else ever gets a byte of the data.
type download struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (d *download) Write(p []byte) (int, error) {
	if !d.started {
		d.started = true
		h := d.w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("Content-Disposition", `attachment; filename="`+d.name+`"`)
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		d.w.WriteHeader(http.StatusOK)
	}
	return d.w.Write(p)
}

// adminExport sends the organization's data as a file,
// ctalk-ORG-DATE.jsonl (a post, with the session's CSRF token: the export
// is audited, so another site must not start one).
func (f *Face) adminExport(w http.ResponseWriter, r *http.Request, s *session) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportWriteTimeout)) //nolint:errcheck // best effort
	d := &download{w: w, name: "ctalk-" + s.me.OrgID + "-" + time.Now().UTC().Format("2006-01-02") + ".jsonl"}
	err := f.cfg.Relay.ExportOrganization(r.Context(), adminOf(s), d)
	switch {
	case err == nil:
	case !d.started:
		f.adminFail(w, r, s, err)
	default:
		// Half a file must not look whole: the connection is cut, and the
		// browser reports a failed download.
		if r.Context().Err() == nil {
			f.cfg.Logger.ErrorContext(r.Context(), "web export stopped part way", "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

type deletedView struct {
	base
	Deleted relay.OrgDeleted
}

// adminDelete is the delete page; its post deletes the organization when
// the typed confirmation is its id. The session goes with it: the answer
// is a page without one, saying what was deleted.
func (f *Face) adminDelete(w http.ResponseWriter, r *http.Request, s *session) {
	if r.Method == http.MethodGet {
		f.dataPage(w, r, s, "admin-delete", "Delete the organization")
		return
	}
	confirm := r.PostForm.Get("confirm_org_id")
	out, err := f.cfg.Relay.DeleteOrganization(f.withAddr(r), adminOf(s), confirm)
	if err != nil {
		v := &adminDataView{base: base{Title: "Delete the organization", Nav: "admin", Sub: "data"}, Confirm: confirm}
		status, answered := f.alertOr(w, r, s, &v.base, err)
		if answered {
			return
		}
		people, err := f.cfg.Relay.ListOrgPeople(r.Context(), adminOf(s))
		if err != nil {
			f.adminFail(w, r, s, err)
			return
		}
		v.People = len(people)
		v.setSession(s)
		f.page.render(w, status, "admin-delete", &v.base, v)
		return
	}
	f.clearSession(w, f.secure(r))
	v := &deletedView{base: base{Title: "Organization deleted"}, Deleted: out}
	f.page.render(w, http.StatusOK, "deleted", &v.base, v)
}
