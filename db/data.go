package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// DataQueries are the operator's data tools: export, retention and the
// deletion of a whole organization.
type DataQueries interface {
	// ExportMessages returns up to limit of an organization's questions with
	// id > afterID, in id order.
	ExportMessages(ctx context.Context, orgID string, afterID int64, limit int) ([]Message, error)
	// ExpiredConversations returns up to limit conversations whose every
	// question is answered and whose newest answer is before cutoff.
	ExpiredConversations(ctx context.Context, cutoff time.Time, limit int) ([]Conversation, error)
	// DeleteConversation deletes a conversation's questions and their search
	// index rows and returns how many questions it deleted.
	DeleteConversation(ctx context.Context, c Conversation) (int64, error)
	// DeleteOrganization deletes an organization and everything of it:
	// messages (and their search index rows), people, tokens, connected
	// clients, audit log and sign-in throttles. ErrNotFound if there is none.
	DeleteOrganization(ctx context.Context, orgID string) (OrgDeleted, error)
}

// Conversation names a conversation: its organization and first question.
type Conversation struct {
	OrgID    string
	ThreadID int64
}

// OrgDeleted counts what deleting an organization removed.
type OrgDeleted struct {
	Users, Messages int64
}

// orgDeleter is the generated code's deletion of an organization's rows,
// the same on both backends.
type orgDeleter interface {
	DeleteOrgOAuthCodes(ctx context.Context, orgID string) error
	DeleteOrgRefreshTokens(ctx context.Context, orgID string) error
	DeleteOrgTokens(ctx context.Context, orgID string) error
	DeleteOrgGrants(ctx context.Context, orgID string) error
	DeleteOrgAudit(ctx context.Context, orgID string) error
	DeleteOrgMessages(ctx context.Context, orgID string) (int64, error)
	DeleteOrgUsers(ctx context.Context, orgID string) (int64, error)
	DeleteOrganization(ctx context.Context, id string) (int64, error)
	ClearThrottle(ctx context.Context, key string) error
}

// deleteOrg deletes an organization's rows in foreign-key order; prefixes
// deletes its people's throttle keys.
func deleteOrg(ctx context.Context, d orgDeleter, orgID string, prefixes func(start, end string) error) (OrgDeleted, error) {
	var out OrgDeleted
	for _, del := range []func(context.Context, string) error{
		d.DeleteOrgOAuthCodes, d.DeleteOrgRefreshTokens, d.DeleteOrgTokens, d.DeleteOrgGrants, d.DeleteOrgAudit,
	} {
		if err := del(ctx, orgID); err != nil {
			return OrgDeleted{}, err
		}
	}
	var err error
	if out.Messages, err = d.DeleteOrgMessages(ctx, orgID); err != nil {
		return OrgDeleted{}, err
	}
	if out.Users, err = d.DeleteOrgUsers(ctx, orgID); err != nil {
		return OrgDeleted{}, err
	}
	if n, err := d.DeleteOrganization(ctx, orgID); err != nil {
		return OrgDeleted{}, err
	} else if n == 0 {
		return OrgDeleted{}, ErrNotFound
	}
	// The sign-in throttles: "admin:<org>", and "user:<org>/<user>" for
	// every user, which sort between "user:<org>/" and "user:<org>0".
	if err := d.ClearThrottle(ctx, "admin:"+orgID); err != nil {
		return OrgDeleted{}, err
	}
	return out, prefixes("user:"+orgID+"/", "user:"+orgID+"0")
}

func (a pgQueries) ExportMessages(ctx context.Context, orgID string, afterID int64, limit int) ([]Message, error) {
	rows, err := a.q.ExportMessages(ctx, pgdb.ExportMessagesParams{OrgID: orgID, AfterID: afterID, MaxRows: int32(limit)})
	return convertAll(rows, func(m pgdb.Message) Message { return Message(m) }), pgError(err)
}

func (a sqliteQueries) ExportMessages(ctx context.Context, orgID string, afterID int64, limit int) ([]Message, error) {
	rows, err := a.q.ExportMessages(ctx, sqlitedb.ExportMessagesParams{OrgID: orgID, AfterID: afterID, MaxRows: int64(limit)})
	return convertAll(rows, func(m sqlitedb.Message) Message { return Message(m) }), sqliteError(err)
}

func (a pgQueries) ExpiredConversations(ctx context.Context, cutoff time.Time, limit int) ([]Conversation, error) {
	rows, err := a.q.ExpiredConversations(ctx, pgdb.ExpiredConversationsParams{Cutoff: &cutoff, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ExpiredConversationsRow) Conversation { return Conversation(r) }), pgError(err)
}

func (a sqliteQueries) ExpiredConversations(ctx context.Context, cutoff time.Time, limit int) ([]Conversation, error) {
	rows, err := a.q.ExpiredConversations(ctx, sqlitedb.ExpiredConversationsParams{Cutoff: &cutoff, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ExpiredConversationsRow) Conversation { return Conversation(r) }), sqliteError(err)
}

// DeleteConversation: on SQLite a trigger removes each question's search
// index row with it.
func (a pgQueries) DeleteConversation(ctx context.Context, c Conversation) (int64, error) {
	n, err := a.q.DeleteConversation(ctx, pgdb.DeleteConversationParams(c))
	return n, pgError(err)
}

func (a sqliteQueries) DeleteConversation(ctx context.Context, c Conversation) (int64, error) {
	n, err := a.q.DeleteConversation(ctx, sqlitedb.DeleteConversationParams(c))
	return n, sqliteError(err)
}

func (a pgQueries) DeleteOrganization(ctx context.Context, orgID string) (OrgDeleted, error) {
	out, err := deleteOrg(ctx, a.q, orgID, func(start, end string) error {
		return a.q.DeleteOrgThrottles(ctx, pgdb.DeleteOrgThrottlesParams{UserPrefix: start, UserPrefixEnd: end})
	})
	return out, pgError(err)
}

func (a sqliteQueries) DeleteOrganization(ctx context.Context, orgID string) (OrgDeleted, error) {
	out, err := deleteOrg(ctx, a.q, orgID, func(start, end string) error {
		return a.q.DeleteOrgThrottles(ctx, sqlitedb.DeleteOrgThrottlesParams{UserPrefix: start, UserPrefixEnd: end})
	})
	return out, sqliteError(err)
}
