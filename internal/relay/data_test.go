package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// exportLines parses an export into its lines, by type.
func exportLines(t *testing.T, b []byte) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export line %q is not JSON: %v", sc.Text(), err)
		}
		typ, _ := line["type"].(string)
		out[typ] = append(out[typ], line)
	}
	return out
}

// TestExportOrganization: an export holds the organization, its people
// (no password hash) and every question and answer with its conversation
// (no draft), and nothing of another organization; a wrong admin password
// gets nothing; the audit log records the export.
func TestExportOrganization(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john, _, _ := searchTeam(t, s)
		session := Admin{Session: &Credentials{Token: f.adminSession(t)}}
		q := f.ask(umar, AskInput{To: "john", Question: "Draft test?"})
		if _, err := f.s.Propose(ctx, john, q.MessageID, "UNSENT-DRAFT-TEXT"); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := f.s.ExportOrganization(ctx, Admin{OrgID: "acme", Password: "wrong-password-x"}, &buf); err == nil || buf.Len() > 0 {
			t.Fatalf("export with a wrong admin password = %v, %d bytes written; want refused, nothing written", err, buf.Len())
		}
		if err := f.s.ExportOrganization(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, &buf); err != nil {
			t.Fatalf("ExportOrganization = %v", err)
		}
		var bySession bytes.Buffer
		if err := f.s.ExportOrganization(ctx, session, &bySession); err != nil || bySession.String() != buf.String() {
			t.Errorf("export by an admin's session = %v, or differs from the one by admin password", err)
		}
		lines := exportLines(t, buf.Bytes())
		if len(lines["organization"]) != 1 || lines["organization"][0]["org_id"] != "acme" || len(lines["user"]) != 3 || len(lines["message"]) != 4 {
			t.Errorf("export = %d organization, %d user, %d message lines; want 1, 3 (umar, john, cal), 4",
				len(lines["organization"]), len(lines["user"]), len(lines["message"]))
		}
		text := buf.String()
		for _, never := range []string{"argon2", "UNSENT-DRAFT-TEXT", "Other organization", "eve", "zed", testUserPassword} {
			if strings.Contains(text, never) {
				t.Errorf("the export contains %q", never)
			}
		}
		if m := lines["message"][0]; m["thread_id"] != float64(1) || m["shared"] != true || m["answer"] == nil {
			t.Errorf("first message line = %v; want conversation 1, shared, with its answer", m)
		}
		// The other organization's export is its own.
		buf.Reset()
		if err := f.s.ExportForOperator(ctx, "other", &buf); err != nil || strings.Contains(buf.String(), "Three retries") {
			t.Errorf("ExportForOperator(other) = %v; want only the other organization", err)
		}
		if l := exportLines(t, buf.Bytes()); len(l["user"]) != 2 || len(l["message"]) != 1 {
			t.Errorf("other's export = %d users, %d messages; want 2, 1", len(l["user"]), len(l["message"]))
		}
		if err := f.s.ExportForOperator(ctx, "nobody", &buf); err == nil || !strings.Contains(err.Error(), `no organization "nobody"`) {
			t.Errorf("ExportForOperator(nobody) = %v; want not found", err)
		}
		log, err := f.s.ListAudit(ctx, session, 0)
		if err != nil || len(log.Entries) == 0 || log.Entries[0].Action != AuditExport {
			t.Errorf("audit log = %+v, %v; want the export on top", log, err)
		}
	})
}

// adminSession signs john in and gives him the admin role; it returns his token.
func (f *fixture) adminSession(t *testing.T) string {
	t.Helper()
	tok := f.login("acme", "john")
	if _, err := f.s.BecomeAdmin(t.Context(), Credentials{Token: tok}, testAdminPassword); err != nil {
		t.Fatalf("BecomeAdmin = %v", err)
	}
	return tok
}

// TestDeleteOrganization: an admin deletes their organization only after
// repeating its id; everything of it goes (people, tokens, questions and
// their search rows, throttles), nothing of another organization does, and
// the id can be registered again from nothing.
func TestDeleteOrganization(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, _, _, eve := searchTeam(t, s)
		admin := Admin{OrgID: "acme", Password: testAdminPassword}
		// A lock on the admin password and one on a person, to see them go.
		for range 12 {
			f.s.Login(ctx, "acme", "umar", "wrong-password-x")
		}
		if _, err := f.s.DeleteOrganization(ctx, admin, "acme-typo"); err == nil || !strings.Contains(err.Error(), "nothing was deleted") {
			t.Fatalf("DeleteOrganization with a wrong confirmation = %v; want refused", err)
		}
		if _, err := f.s.Whoami(ctx, umar); err != nil {
			t.Fatalf("after a refused deletion, umar's token = %v; want it still good", err)
		}
		out, err := f.s.DeleteOrganization(ctx, admin, "acme")
		if err != nil || out.Users != 3 || out.Messages != 3 {
			t.Fatalf("DeleteOrganization = %+v, %v; want 3 users and 3 messages deleted", out, err)
		}
		if _, err := f.s.Whoami(ctx, umar); err == nil {
			t.Errorf("umar's token still works after the organization was deleted")
		}
		if _, err := f.s.DeleteOrganization(ctx, admin, "acme"); err == nil {
			t.Errorf("deleting it again = nil; want refused")
		}
		// The other organization is untouched, its search too.
		if r, err := f.s.SearchAnswers(ctx, eve, "retry logic"); err != nil || len(r.Results) != 1 {
			t.Errorf("eve's search after acme's deletion = %+v, %v; want her organization's answer", r, err)
		}
		// The id starts from nothing: no people, no lock, no search rows.
		f.org("acme")
		f.user("acme", "umar")
		umar2 := Credentials{Token: f.login("acme", "umar")} // not locked
		if r, err := f.s.SearchAnswers(ctx, umar2, "retry"); err != nil || len(r.Results) != 0 {
			t.Errorf("a new acme's search = %+v, %v; want nothing of the deleted one", r, err)
		}
		if _, err := f.s.GetThread(ctx, umar2, 1); err == nil {
			t.Errorf("a new acme sees conversation 1 of the deleted one")
		}
	})
}

// TestPruneConversations: retention deletes conversations answered
// through and older than the limit, with their search rows, and leaves
// younger ones and ones still waiting for an answer.
func TestPruneConversations(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john := umarAndJohn(t, s)
		old := f.ask(umar, AskInput{To: "john", Question: "Old retry question?"})
		f.answer(john, old.MessageID, "Old retry answer.", true)
		waiting := f.ask(umar, AskInput{To: "john", Question: "Old but followed up?"})
		f.answer(john, waiting.MessageID, "Yes.", true)
		f.ask(umar, AskInput{FollowUpTo: waiting.MessageID, Question: "And still open?"})
		revived := f.ask(umar, AskInput{To: "john", Question: "Old, answered again lately?"})
		f.answer(john, revived.MessageID, "Yes.", true)
		f.advance(60 * 24 * time.Hour)
		umar, john = Credentials{Token: f.login("acme", "umar")}, Credentials{Token: f.login("acme", "john")} // the old tokens expired
		late := f.ask(umar, AskInput{FollowUpTo: revived.MessageID, Question: "A late follow-up?"})
		f.answer(john, late.MessageID, "Late answer.", true)
		young := f.ask(umar, AskInput{To: "john", Question: "Young retry question?"})
		f.answer(john, young.MessageID, "Young retry answer.", true)

		if _, err := f.s.PruneConversations(ctx, 0); err == nil {
			t.Errorf("PruneConversations(0) = nil; want refused")
		}
		n, err := f.s.PruneConversations(ctx, 30*24*time.Hour)
		if err != nil || n != 1 {
			t.Fatalf("PruneConversations = %d, %v; want the one old conversation's 1 question", n, err)
		}
		if _, err := f.s.GetThread(ctx, umar, old.MessageID); err == nil {
			t.Errorf("the old conversation is still there")
		}
		for _, id := range []int64{waiting.MessageID, revived.MessageID, young.MessageID} {
			if th, err := f.s.GetThread(ctx, umar, id); err != nil || len(th.Turns) == 0 {
				t.Errorf("conversation of %d = %+v, %v; want kept", id, th, err)
			}
		}
		r, err := f.s.SearchAnswers(ctx, umar, "retry")
		if err != nil || len(r.Results) != 1 || r.Results[0].MessageID != young.MessageID {
			t.Errorf("search after retention = %+v, %v; want only the young answer (the old one's index row gone)", r, err)
		}
		if n, err := f.s.PruneConversations(ctx, 30*24*time.Hour); err != nil || n != 0 {
			t.Errorf("a second run = %d, %v; want nothing more", n, err)
		}
	})
}

// TestKeepPruning: the retention loop prunes at once, reports it, and stops
// with its context.
func TestKeepPruning(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := umarAndJohn(t, s)
		q := f.ask(umar, AskInput{To: "john", Question: "Old?"})
		f.answer(john, q.MessageID, "Yes.", false)
		f.advance(48 * time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		reports := make(chan int64, 4)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.s.KeepPruning(ctx, 24*time.Hour, time.Hour, func(n int64, err error) {
				if err != nil {
					t.Errorf("retention run: %v", err)
				}
				reports <- n
			})
		}()
		if n := <-reports; n != 1 {
			t.Errorf("first retention run deleted %d questions, want 1", n)
		}
		cancel()
		<-done
	})
}
