// Package db is ctalk's storage: domain types, the Store the rules run every
// transaction through, and one adapter per backend (SQLite and PostgreSQL).
//
// Both backends run the same named queries (sql/queries, plus the few whose
// text differs by dialect in sql/<dialect>/queries) through sqlc output
// kept in db/internal. Adapters turn driver errors into the sentinels below in
// one place each, so callers never see a driver type.
package db

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors every backend maps its driver errors to.
var (
	// ErrNotFound means the row does not exist (or belongs to another organization,
	// which callers must not be able to tell apart).
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique key already exists.
	ErrConflict = errors.New("already exists")
	// ErrUnavailable means the database could not be reached.
	ErrUnavailable = errors.New("database unavailable")
)

// Organization is a team: every user, token and message belongs to exactly one.
type Organization struct {
	ID                string
	Name              string
	AdminPasswordHash string
	CreatedAt         time.Time
	LastMessageID     int64
	LastEventSeq      int64
}

// User is a person in an organization. IDs are unique within their organization only.
type User struct {
	OrgID         string
	ID            string
	Name          string
	PasswordHash  string
	Ownership     string
	Notes         string
	ProfileNotes  string
	CreatedAt     time.Time
	DeactivatedAt *time.Time
	// RepliesSeenSeq is the newest answer sequence number check_replies has shown the user.
	RepliesSeenSeq int64
	// AdminSince is when the person was given the admin role (nil: not an admin).
	AdminSince *time.Time
}

// Token is a stored auth token: only the SHA-256 hash of the secret is kept.
type Token struct {
	TokenHash []byte
	OrgID     string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
	// GrantID, Resource and Scope are set on OAuth access tokens: the grant
	// (connected client) that issued the token, the resource indicator it is
	// for and its space-separated scopes. All nil on tokens from the login tool.
	GrantID  *string
	Resource *string
	Scope    *string
	// LastUsedAt is when the token was last recorded as used (TouchToken):
	// within a few minutes of its newest use. Nil: not since it was issued.
	LastUsedAt *time.Time
}

// Message is a question from one user to another in the same organization, with
// the recipient's current draft and, once sent, the final answer.
type Message struct {
	OrgID          string
	ID             int64
	FromUserID     string
	ToUserID       string
	Question       string
	AskedAt        time.Time
	AskedSeq       int64
	DraftText      *string
	DraftUpdatedAt *time.Time
	AnswerText     *string
	AnsweredAt     *time.Time
	AnsweredSeq    *int64
	// ThreadID is the conversation's first question (its own id for a first question).
	ThreadID int64
	// SharedAt is when the answer was shared with the organization (nil: only the two people).
	SharedAt *time.Time
	// DraftShare says the saved draft would be shared when sent.
	DraftShare bool
}

// Answered reports whether the question has its final answer.
func (m Message) Answered() bool { return m.AnsweredSeq != nil }

// InboxItem is an unanswered question with the context of who asked it.
type InboxItem struct {
	Message
	SenderName         string
	SenderOwnership    string
	SenderNotes        string
	SenderProfileNotes string
}

// Reply is an answered question with the name of who answered it.
type Reply struct {
	Message
	RecipientName string
}

// ThreadMessage is a question of a conversation with the names of who asked
// it and who was asked.
type ThreadMessage struct {
	Message
	FromName string
	ToName   string
}

// Throttle counts failed password attempts for one key.
type Throttle struct {
	Key         string
	Failures    int64
	LockedUntil time.Time
	UpdatedAt   time.Time
}

// Queries are the operations available inside one transaction. Every method
// that reads or writes organization data takes the organization's id: scoping
// is part of every query, never a filter applied afterwards.
type Queries interface {
	CreateOrganization(ctx context.Context, o Organization) error
	GetOrganization(ctx context.Context, id string) (Organization, error)
	// AllocateMessage numbers a new question and its event; it holds the
	// organization's lock until the transaction ends.
	AllocateMessage(ctx context.Context, orgID string) (id, seq int64, err error)
	// AllocateEvent takes the next event sequence number under the same lock.
	AllocateEvent(ctx context.Context, orgID string) (int64, error)

	CreateUser(ctx context.Context, u User) error
	GetUser(ctx context.Context, orgID, id string) (User, error)
	// LockUser reads a user and holds their row until the transaction ends:
	// what a password was verified against cannot change before it commits.
	LockUser(ctx context.Context, orgID, id string) (User, error)
	ListUsers(ctx context.Context, orgID string) ([]User, error)
	UpdateUserNotes(ctx context.Context, orgID, id, notes string) error
	UpdateUserProfileNotes(ctx context.Context, orgID, id, profileNotes string) error
	UpdateUserPassword(ctx context.Context, orgID, id, passwordHash string) error
	// SetUserDeactivated deactivates a user at the given time, or reactivates them with nil.
	SetUserDeactivated(ctx context.Context, orgID, id string, at *time.Time) error

	// GetThrottles returns the stored rows of up to two throttle keys.
	GetThrottles(ctx context.Context, accountKey, addrKey string) ([]Throttle, error)
	// BumpThrottle counts one attempt against key atomically and returns the
	// row: failures including this attempt, and the lock as it was before it.
	BumpThrottle(ctx context.Context, key string, at time.Time) (Throttle, error)
	// LockThrottle locks key until the given time.
	LockThrottle(ctx context.Context, key string, until time.Time) error
	// ForgiveThrottle takes back one counted attempt of key.
	ForgiveThrottle(ctx context.Context, key string) error
	ClearThrottle(ctx context.Context, key string) error
	// PruneThrottles deletes rows not updated since before.
	PruneThrottles(ctx context.Context, before time.Time) (int64, error)

	CreateToken(ctx context.Context, t Token) error
	GetToken(ctx context.Context, hash []byte) (Token, error)
	// GetTokenUser returns a token and its user in one query.
	GetTokenUser(ctx context.Context, hash []byte) (Token, User, error)
	RevokeToken(ctx context.Context, hash []byte, at time.Time) error
	// RevokeUserTokens revokes every live access token of a user except keep
	// (which may be nil), and every live OAuth grant of the user except keep's
	// grant if keep has one, marking the revoked grants' refresh tokens used.
	// It returns how many access tokens it revoked.
	RevokeUserTokens(ctx context.Context, orgID, userID string, keep []byte, at time.Time) (int64, error)
	// TouchToken records that a token was used at usedAt, unless a use since
	// staleBefore is recorded already.
	TouchToken(ctx context.Context, hash []byte, usedAt, staleBefore time.Time) error
	// PruneTokens deletes the tokens that expired before before and returns how many.
	PruneTokens(ctx context.Context, before time.Time) (int64, error)

	OAuthQueries
	WebQueries
	TokenListQueries
	AdminQueries
	DataQueries
	NotificationQueries

	CreateMessage(ctx context.Context, m Message) error
	// AskPerson stores a question from a token's owner to another user of
	// their organization and notifies the recipient, checking the token
	// (live, not expired at p.At, user active) and the recipient first;
	// nothing is written unless every check passes. On PostgreSQL it is
	// one statement.
	AskPerson(ctx context.Context, p AskParams) (AskOutcome, error)
	GetMessage(ctx context.Context, orgID string, id int64) (Message, error)
	// ListInbox returns up to limit unanswered questions to a user with id > afterID, oldest first.
	ListInbox(ctx context.Context, orgID, toUserID string, afterID int64, limit int) ([]InboxItem, error)
	// SaveDraft replaces the draft of an unanswered question; ErrNotFound if it is answered.
	// share is whether the draft, once sent, would be shared with the organization.
	SaveDraft(ctx context.Context, orgID string, id int64, draft string, at time.Time, share bool) error
	// AnswerMessage stores the final answer of an unanswered question, shared
	// with the organization from sharedAt (nil: not shared); ErrNotFound if it is answered.
	AnswerMessage(ctx context.Context, orgID string, id int64, answer string, at time.Time, seq int64, sharedAt *time.Time) error
	// ListThread returns up to limit questions of a conversation in the order asked.
	ListThread(ctx context.Context, orgID string, threadID int64, limit int) ([]ThreadMessage, error)
	// SearchMessages returns up to limit answered questions of an organization
	// matching a search (see Search), newest answer first, among those visible
	// to userID: shared with the organization, or asked by or of them ("": shared only).
	SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error)
	// ListReplies returns up to limit answers to a user's questions, in commit
	// order: those with a sequence number above afterSeq answered at or after
	// since, and all those above seenSeq (not yet shown to the user).
	ListReplies(ctx context.Context, orgID, fromUserID string, since time.Time, afterSeq, seenSeq int64, limit int) ([]Reply, error)
	// MarkRepliesSeen raises the user's RepliesSeenSeq to seq.
	MarkRepliesSeen(ctx context.Context, orgID, userID string, seq int64) error
	CountQuestions(ctx context.Context, orgID, fromUserID, toUserID string) (int64, error)
	// LastQuestion and LastAnswer return the newest question (answer) from one user
	// to another, or ErrNotFound.
	LastQuestion(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error)
	LastAnswer(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error)

	// ListEvents returns up to limit events of a user with a sequence number
	// above afterSeq, in commit order: questions asked of them and answers to
	// questions they asked.
	ListEvents(ctx context.Context, orgID, userID string, afterSeq int64, limit int) ([]Event, error)
	// NotifyEvent wakes the user's waiters on every replica once the
	// transaction commits (and never if it rolls back). Call it in the
	// transaction that writes event seq for userID.
	NotifyEvent(ctx context.Context, orgID, userID string, seq int64) error
}

// Store is a database ctalk can run transactions on.
type Store interface {
	// InTx runs fn in one transaction: committed if fn returns nil, rolled back otherwise.
	InTx(ctx context.Context, fn func(q Queries) error) error
	// View runs fn in one read-only transaction; on SQLite it does not take the write lock.
	View(ctx context.Context, fn func(q Queries) error) error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
	// Backend names the backend: "sqlite" or "postgres".
	Backend() string
	Close() error

	// Subscribe returns a channel that receives a value soon after an event
	// for the user commits, on this replica or another, and whenever one may
	// have been missed (a lost database connection, a writer that did not
	// notify): a wake-up means "look again", never "there is something".
	// Values coalesce. The subscription holds no database connection; cancel
	// ends it, and so does the end of ctx. Empty orgID and userID subscribe
	// to every event of every organization (the notification workers).
	Subscribe(ctx context.Context, orgID, userID string) (wake <-chan struct{}, cancel func())
	// SubscribeFunc is Subscribe, calling onWake at each wake-up instead of
	// sending on a channel, so that a waiter needs no goroutine blocked on
	// one. onWake runs with the store's subscription lock held: it must
	// return at once, and never call the store.
	SubscribeFunc(ctx context.Context, orgID, userID string, onWake func()) (cancel func())
	// TouchTokens records when tokens were used (Queries.TouchToken), in a
	// transaction of its own: bookkeeping that runs beside the calls, never
	// inside one.
	TouchTokens(ctx context.Context, uses []TokenUse) error
	// Backup writes a consistent copy of the database to a new file while
	// it serves (SQLite); on PostgreSQL it is ErrUnsupported, saying to use pg_dump.
	Backup(ctx context.Context, path string) error
	// Connections reports the store's pooled database connections: how many
	// are open and how many are in use. (PostgreSQL's LISTEN connection,
	// once open, is one more, outside the pool.)
	Connections() (open, inUse int)
}
