package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// An organization's data: its export (JSON lines), its deletion by its
// admin, and retention (answered conversations older than a limit go).

// exportPage is how many questions one export read returns.
const exportPage = 500

// Export lines. Every line is one JSON object with a "type". A user line
// never has a password hash; a message line never has a draft (text its
// writer never sent).
type (
	exportOrg struct {
		Type      string    `json:"type"`
		OrgID     string    `json:"org_id"`
		Name      string    `json:"name"`
		CreatedAt time.Time `json:"created_at"`
	}
	exportUser struct {
		Type          string     `json:"type"`
		UserID        string     `json:"user_id"`
		Name          string     `json:"name"`
		Ownership     string     `json:"ownership"`
		Notes         string     `json:"notes"`
		ProfileNotes  string     `json:"profile_notes"`
		Admin         bool       `json:"admin"`
		CreatedAt     time.Time  `json:"created_at"`
		DeactivatedAt *time.Time `json:"deactivated_at,omitempty"`
	}
	exportMessage struct {
		Type       string     `json:"type"`
		MessageID  int64      `json:"message_id"`
		ThreadID   int64      `json:"thread_id"`
		FromUserID string     `json:"from_user_id"`
		ToUserID   string     `json:"to_user_id"`
		Question   string     `json:"question"`
		AskedAt    time.Time  `json:"asked_at"`
		Answer     *string    `json:"answer,omitempty"`
		AnsweredAt *time.Time `json:"answered_at,omitempty"`
		Shared     bool       `json:"shared"`
	}
)

// ExportOrganization writes the admin's organization as JSON lines to w:
// the organization, its people (no password hashes) and every question and
// answer with its conversation (no drafts). The audit log records it.
func (s *Service) ExportOrganization(ctx context.Context, a Admin, w io.Writer) error {
	release, auth, err := s.adminTurn(ctx, a)
	if err != nil {
		return err
	}
	defer release()
	return spooled(w, func(spool io.Writer) error {
		err := s.store.View(ctx, func(q db.Queries) error {
			if err := s.sameAdmin(ctx, q, auth); err != nil {
				return err
			}
			return export(ctx, q, auth.org.ID, spool)
		})
		if err != nil {
			return err
		}
		return s.store.InTx(ctx, func(q db.Queries) error {
			return s.audit(ctx, q, auth.org.ID, auth.actorID(), AuditExport, "", "")
		})
	})
}

// ExportForOperator writes an organization as ExportOrganization does, for
// the operator of the database (ctalk export), who needs no admin password.
func (s *Service) ExportForOperator(ctx context.Context, orgIDArg string, w io.Writer) error {
	orgID, err := slug("org_id", orgIDArg)
	if err != nil {
		return err
	}
	return spooled(w, func(spool io.Writer) error {
		return s.store.View(ctx, func(q db.Queries) error { return export(ctx, q, orgID, spool) })
	})
}

// spooled runs fill with a temporary file (readable by this process's
// user only, deleted afterwards) and then copies the file to w: the
// export's read transaction ends as fast as the database gives the rows,
// not as slowly as a browser or a pipe takes them, and w gets nothing if
// fill fails.
func spooled(w io.Writer, fill func(io.Writer) error) error {
	f, err := os.CreateTemp("", "ctalk-export-*.jsonl")
	if err != nil {
		return fmt.Errorf("export: a temporary file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := fill(f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// export writes one organization's lines, read in one transaction.
func export(ctx context.Context, q db.Queries, orgID string, w io.Writer) error {
	org, err := q.GetOrganization(ctx, orgID)
	if errors.Is(err, db.ErrNotFound) {
		return errorf(KindNotFound, "there is no organization %q", orgID)
	} else if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(exportOrg{Type: "organization", OrgID: org.ID, Name: org.Name, CreatedAt: org.CreatedAt}); err != nil {
		return err
	}
	users, err := q.ListUsers(ctx, orgID)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := enc.Encode(exportUser{Type: "user", UserID: u.ID, Name: u.Name, Ownership: u.Ownership, Notes: u.Notes,
			ProfileNotes: u.ProfileNotes, Admin: u.AdminSince != nil, CreatedAt: u.CreatedAt, DeactivatedAt: u.DeactivatedAt}); err != nil {
			return err
		}
	}
	for after := int64(0); ; {
		msgs, err := q.ExportMessages(ctx, orgID, after, exportPage)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := enc.Encode(exportMessage{Type: "message", MessageID: m.ID, ThreadID: m.ThreadID, FromUserID: m.FromUserID,
				ToUserID: m.ToUserID, Question: m.Question, AskedAt: m.AskedAt, Answer: m.AnswerText, AnsweredAt: m.AnsweredAt,
				Shared: m.SharedAt != nil}); err != nil {
				return err
			}
			after = m.ID
		}
		if len(msgs) < exportPage {
			return bw.Flush()
		}
	}
}

// adminTurn verifies an admin, holding a place in the password queue while
// an admin password is checked, and returns what releases it.
func (s *Service) adminTurn(ctx context.Context, a Admin) (func(), adminAuth, error) {
	release := func() {}
	if a.Session == nil {
		var err error
		if ctx, release, err = s.passwordTurn(ctx); err != nil {
			return nil, adminAuth{}, err
		}
	}
	auth, err := s.adminCheck(ctx, a)
	if err != nil {
		release()
		return nil, adminAuth{}, err
	}
	return release, auth, nil
}

// OrgDeleted is an organization deleted, with what went with it.
type OrgDeleted struct {
	OrgID    string `json:"org_id"`
	Users    int64  `json:"users_deleted"`
	Messages int64  `json:"messages_deleted"`
	Status   string `json:"status"`
}

// DeleteOrganization deletes the admin's organization and everything of
// it: people, questions and answers (and their search index), tokens and
// sessions, connected clients, the audit log. confirm must repeat the
// organization's id. It cannot be undone.
func (s *Service) DeleteOrganization(ctx context.Context, a Admin, confirm string) (OrgDeleted, error) {
	release, auth, err := s.adminTurn(ctx, a)
	if err != nil {
		return OrgDeleted{}, err
	}
	defer release()
	if strings.TrimSpace(confirm) != auth.org.ID {
		return OrgDeleted{}, badInput("to delete organization %q and everything in it, repeat its id %q as the confirmation; "+
			"nothing was deleted", auth.org.ID, auth.org.ID)
	}
	var out db.OrgDeleted
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, auth); err != nil {
			return err
		}
		out, err = q.DeleteOrganization(ctx, auth.org.ID)
		return err
	})
	if err != nil {
		return OrgDeleted{}, err
	}
	return OrgDeleted{OrgID: auth.org.ID, Users: out.Users, Messages: out.Messages, Status: "deleted"}, nil
}

// pruneBatch is how many conversations one retention transaction deletes.
const pruneBatch = 100

// PruneConversations deletes the conversations whose every question is
// answered and whose newest answer is older than retention, in batches,
// and returns how many questions it deleted. Unanswered and younger
// conversations stay.
func (s *Service) PruneConversations(ctx context.Context, retention time.Duration) (int64, error) {
	if retention <= 0 {
		return 0, badInput("retention must be positive")
	}
	cutoff := s.clock().Add(-retention)
	var total int64
	for {
		var n int
		var batch int64
		err := s.store.InTx(ctx, func(q db.Queries) error {
			convs, err := q.ExpiredConversations(ctx, cutoff, pruneBatch)
			if err != nil {
				return err
			}
			n, batch = len(convs), 0
			for _, c := range convs {
				deleted, err := q.DeleteConversation(ctx, c)
				if err != nil {
					return err
				}
				batch += deleted
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		if total += batch; n < pruneBatch {
			return total, nil
		}
	}
}

// KeepPruning runs PruneConversations with retention at once and then
// every interval until ctx ends, telling report what each run deleted (or
// why it failed). A failed run is retried at the next interval.
func (s *Service) KeepPruning(ctx context.Context, retention, interval time.Duration, report func(deleted int64, err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := s.PruneConversations(ctx, retention)
		if ctx.Err() != nil {
			return
		}
		report(n, err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
