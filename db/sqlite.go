package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// Full-text search (search_answers) runs on FTS5, an extension this build
// of SQLite loads into every connection it opens, with ctalk_terms (see
// search_lists.go).
func init() { sqlite3.AutoExtension(registerFTS5) }

// sqliteTimeFormat stores times as fixed-width UTC text with microseconds, so
// that text comparison in SQL is time order and both backends keep the same
// precision.
const sqliteTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// sqliteDSN builds the connection string for a database file.
//
// The DSN must start with "file:" for the driver to apply _pragma and _txlock.
// Setting any _pragma drops the driver's default busy timeout, so one is set.
// Writers take the lock when they begin (_txlock=immediate): deferred
// read-then-write transactions fail with SQLITE_BUSY under concurrency.
// synchronous(full) makes an acknowledged write survive power loss, not only a
// crash of the process.
//
// Migrations get a DSN without _timefmt: goose writes its own timestamps
// with SQLite's datetime('now') and must read them back.
func sqliteDSN(path string, forMigrations bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "foreign_keys(on)")
	q.Add("_pragma", "synchronous(full)")
	q.Set("_txlock", "immediate")
	if !forMigrations {
		q.Set("_timefmt", sqliteTimeFormat)
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// sqliteStore is the embedded backend: one database file.
type sqliteStore struct {
	db         *sql.DB
	migrations *sql.DB // for goose, without _timefmt
	// events wakes this process's waiters after commits.
	events notifier
	// stmts are ask_person's prepared statements.
	stmts stmtCache
	// writer admits one write transaction at a time (see InTx).
	writer writeLock
	// lister fills the search lists (search_lists.go).
	lister lister
}

func (s *sqliteStore) Backend() string { return "sqlite" }

func (s *sqliteStore) Close() error {
	s.stopListing()
	s.events.close()
	s.stmts.close()
	return errors.Join(s.db.Close(), s.migrations.Close())
}

func (s *sqliteStore) Ping(ctx context.Context) error {
	return sqliteError(s.db.PingContext(ctx))
}

// InTx runs fn in a write transaction. SQLite admits one writer at a time
// anyway (BEGIN IMMEDIATE), but a connection refused the lock polls for it,
// taking and dropping file locks, which cost ask_person a third of its CPU
// under load; this process's writers queue on a channel instead, without
// holding a connection while they wait. Other processes still meet the busy
// timeout.
func (s *sqliteStore) InTx(ctx context.Context, fn func(q Queries) error) error {
	if err := s.writer.lock(ctx); err != nil {
		return err
	}
	defer s.writer.unlock()
	return s.tx(ctx, nil, fn)
}

func (s *sqliteStore) View(ctx context.Context, fn func(q Queries) error) error {
	return s.tx(ctx, &sql.TxOptions{ReadOnly: true}, fn)
}

func (s *sqliteStore) tx(ctx context.Context, opts *sql.TxOptions, fn func(q Queries) error) error {
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return interrupted(ctx, sqliteError(err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var events []pendingEvent
	q := sqliteQueries{sqlitedb.New(utcArgs{tx}), sqlitedb.New(utcArgs{preparedTx{tx, s}}), &events}
	if err := fn(q); err != nil {
		return interrupted(ctx, err)
	}
	if err := tx.Commit(); err != nil {
		return interrupted(ctx, sqliteError(err))
	}
	for _, e := range events {
		s.events.publish(e.orgID, e.userID, e.seq)
	}
	return nil
}

// interrupted reports a transaction that failed after ctx ended (the caller
// went away) as that context error: the driver interrupts the running
// statement ("interrupted") and database/sql rolls the transaction back
// (later statements: "transaction has already been committed or rolled
// back"). Either way nothing was written, and callers see a cancellation,
// not a database failure, as with PostgreSQL.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// sqliteError maps SQLite errors to the package's sentinels, keeping the original for logs.
func sqliteError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	switch {
	case errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY), errors.Is(err, sqlite3.CONSTRAINT_UNIQUE):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, sqlite3.CONSTRAINT_FOREIGNKEY):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, sqlite3.BUSY), errors.Is(err, sqlite3.CANTOPEN), errors.Is(err, sqlite3.READONLY),
		errors.Is(err, sqlite3.FULL), errors.Is(err, sqlite3.IOERR):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// utcArgs converts time arguments to UTC before SQLite stores or compares
// them: the driver writes a custom layout in the value's own zone, and text
// comparison is time order only when every value is in one zone.
type utcArgs struct{ sqlitedb.DBTX }

func toUTC(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			args[i] = v.UTC()
		case *time.Time:
			if v != nil {
				args[i] = v.UTC()
			}
		}
	}
	return args
}

func (u utcArgs) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return u.DBTX.ExecContext(ctx, query, toUTC(args)...)
}

func (u utcArgs) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return u.DBTX.QueryContext(ctx, query, toUTC(args)...)
}

func (u utcArgs) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return u.DBTX.QueryRowContext(ctx, query, toUTC(args)...)
}

// sqliteQueries adapts the generated SQLite queries to Queries.
type sqliteQueries struct {
	q *sqlitedb.Queries
	// ask runs ask_person's statements (and the same statements for any
	// other caller) prepared once per connection.
	ask    *sqlitedb.Queries
	events *[]pendingEvent // published after the transaction commits
}

// pendingEvent is a NotifyEvent waiting for its transaction to commit.
type pendingEvent struct {
	orgID, userID string
	seq           int64
}

func (a sqliteQueries) CreateOrganization(ctx context.Context, o Organization) error {
	return sqliteError(a.q.CreateOrganization(ctx, sqlitedb.CreateOrganizationParams{
		ID: o.ID, Name: o.Name, AdminPasswordHash: o.AdminPasswordHash, CreatedAt: o.CreatedAt,
	}))
}

func (a sqliteQueries) GetOrganization(ctx context.Context, id string) (Organization, error) {
	o, err := a.q.GetOrganization(ctx, id)
	return Organization(o), sqliteError(err)
}

func (a sqliteQueries) AllocateMessage(ctx context.Context, orgID string) (int64, int64, error) {
	r, err := a.ask.AllocateMessage(ctx, orgID)
	return r.LastMessageID, r.LastEventSeq, sqliteError(err)
}

func (a sqliteQueries) AllocateEvent(ctx context.Context, orgID string) (int64, error) {
	seq, err := a.q.AllocateEvent(ctx, orgID)
	return seq, sqliteError(err)
}

func (a sqliteQueries) CreateUser(ctx context.Context, u User) error {
	return sqliteError(a.q.CreateUser(ctx, sqlitedb.CreateUserParams{
		OrgID: u.OrgID, ID: u.ID, Name: u.Name, PasswordHash: u.PasswordHash, Ownership: u.Ownership,
		Notes: u.Notes, ProfileNotes: u.ProfileNotes, CreatedAt: u.CreatedAt, AdminSince: u.AdminSince,
	}))
}

func (a sqliteQueries) GetUser(ctx context.Context, orgID, id string) (User, error) {
	u, err := a.q.GetUser(ctx, sqlitedb.GetUserParams{OrgID: orgID, ID: id})
	return User(u), sqliteError(err)
}

func (a sqliteQueries) LockUser(ctx context.Context, orgID, id string) (User, error) {
	u, err := a.q.LockUser(ctx, sqlitedb.LockUserParams{OrgID: orgID, ID: id})
	return User(u), sqliteError(err)
}

func (a sqliteQueries) ListUsers(ctx context.Context, orgID string) ([]User, error) {
	rows, err := a.q.ListUsers(ctx, orgID)
	return convertAll(rows, func(u sqlitedb.User) User { return User(u) }), sqliteError(err)
}

func (a sqliteQueries) UpdateUserNotes(ctx context.Context, orgID, id, notes string) error {
	return oneRow(a.q.UpdateUserNotes(ctx, sqlitedb.UpdateUserNotesParams{OrgID: orgID, ID: id, Notes: notes}))(sqliteError)
}

func (a sqliteQueries) UpdateUserProfileNotes(ctx context.Context, orgID, id, notes string) error {
	return oneRow(a.q.UpdateUserProfileNotes(ctx, sqlitedb.UpdateUserProfileNotesParams{OrgID: orgID, ID: id, ProfileNotes: notes}))(sqliteError)
}

func (a sqliteQueries) CreateToken(ctx context.Context, t Token) error {
	return sqliteError(a.q.CreateToken(ctx, sqlitedb.CreateTokenParams{
		TokenHash: t.TokenHash, OrgID: t.OrgID, UserID: t.UserID, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
		GrantID: t.GrantID, Resource: t.Resource, Scope: t.Scope,
	}))
}

func (a sqliteQueries) GetToken(ctx context.Context, hash []byte) (Token, error) {
	t, err := a.q.GetToken(ctx, hash)
	return Token(t), sqliteError(err)
}

func (a sqliteQueries) RevokeToken(ctx context.Context, hash []byte, at time.Time) error {
	return oneRow(a.q.RevokeToken(ctx, sqlitedb.RevokeTokenParams{TokenHash: hash, RevokedAt: &at}))(sqliteError)
}

func (a sqliteQueries) RevokeUserTokens(ctx context.Context, orgID, userID string, keep []byte, at time.Time) (int64, error) {
	if err := a.revokeUserGrants(ctx, orgID, userID, keep, at); err != nil {
		return 0, err
	}
	n, err := a.q.RevokeUserTokens(ctx, sqlitedb.RevokeUserTokensParams{
		OrgID: orgID, UserID: userID, KeepTokenHash: nonNil(keep), RevokedAt: &at,
	})
	return n, sqliteError(err)
}

func (a sqliteQueries) CreateMessage(ctx context.Context, m Message) error {
	return sqliteError(a.ask.CreateMessage(ctx, sqlitedb.CreateMessageParams{
		OrgID: m.OrgID, ID: m.ID, FromUserID: m.FromUserID, ToUserID: m.ToUserID,
		Question: m.Question, AskedAt: m.AskedAt, AskedSeq: m.AskedSeq, ThreadID: threadOf(m),
	}))
}

// AskPerson reads what it decides on in one query, then numbers, stores
// and notifies. SQLite has no data-modifying CTEs, but the write
// transaction it runs in already excludes every other writer. (One
// INSERT … SELECT making every check measured slower than this.)
func (a sqliteQueries) AskPerson(ctx context.Context, p AskParams) (AskOutcome, error) {
	r, err := a.ask.AskCheck(ctx, sqlitedb.AskCheckParams{ToUserID: p.ToUserID, TokenHash: p.TokenHash, Resource: p.Resource})
	if err = sqliteError(err); errors.Is(err, ErrNotFound) {
		return AskOutcome{Status: AskBadToken}, nil
	} else if err != nil {
		return AskOutcome{}, err
	}
	facts := askFacts{orgID: r.OrgID, userID: r.UserID, expiresAt: r.ExpiresAt, revokedAt: r.RevokedAt,
		callerDeactivatedAt: r.CallerDeactivatedAt, toName: r.ToName, toDeactivatedAt: r.ToDeactivatedAt}
	out := AskOutcome{Status: facts.status(p), TokenLastUsedAt: r.LastUsedAt,
		Message: Message{OrgID: r.OrgID, FromUserID: r.UserID, ToUserID: p.ToUserID, Question: p.Question, AskedAt: p.At, ThreadID: p.ThreadID}}
	if r.ToName != nil {
		out.ToName = *r.ToName
	}
	if out.Status != Asked {
		return out, nil
	}
	if out.Message.ID, out.Message.AskedSeq, err = a.AllocateMessage(ctx, r.OrgID); err != nil {
		return AskOutcome{}, err
	}
	if out.Message.ThreadID == 0 {
		out.Message.ThreadID = out.Message.ID
	}
	if err := a.CreateMessage(ctx, out.Message); err != nil {
		return AskOutcome{}, err
	}
	return out, a.NotifyEvent(ctx, r.OrgID, p.ToUserID, out.Message.AskedSeq)
}

func (a sqliteQueries) GetMessage(ctx context.Context, orgID string, id int64) (Message, error) {
	m, err := a.q.GetMessage(ctx, sqlitedb.GetMessageParams{OrgID: orgID, ID: id})
	return Message(m), sqliteError(err)
}

func (a sqliteQueries) ListInbox(ctx context.Context, orgID, toUserID string, afterID int64, limit int) ([]InboxItem, error) {
	rows, err := a.q.ListInbox(ctx, sqlitedb.ListInboxParams{OrgID: orgID, ToUserID: toUserID, AfterID: afterID, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ListInboxRow) InboxItem {
		return InboxItem{Message(r.Message), r.SenderName, r.SenderOwnership, r.SenderNotes, r.SenderProfileNotes}
	}), sqliteError(err)
}

func (a sqliteQueries) SaveDraft(ctx context.Context, orgID string, id int64, draft string, at time.Time, share bool) error {
	return oneRow(a.q.SaveDraft(ctx, sqlitedb.SaveDraftParams{OrgID: orgID, ID: id, DraftText: &draft, DraftUpdatedAt: &at, DraftShare: share}))(sqliteError)
}

func (a sqliteQueries) AnswerMessage(ctx context.Context, orgID string, id int64, answer string, at time.Time, seq int64, sharedAt *time.Time) error {
	return oneRow(a.q.AnswerMessage(ctx, sqlitedb.AnswerMessageParams{
		OrgID: orgID, ID: id, AnswerText: &answer, AnsweredAt: &at, AnsweredSeq: &seq, SharedAt: sharedAt,
	}))(sqliteError)
}

func (a sqliteQueries) ListReplies(ctx context.Context, orgID, fromUserID string, since time.Time, afterSeq, seenSeq int64, limit int) ([]Reply, error) {
	minSeq := min(afterSeq, seenSeq)
	rows, err := a.q.ListReplies(ctx, sqlitedb.ListRepliesParams{
		OrgID: orgID, FromUserID: fromUserID, MinSeq: &minSeq, AfterSeq: &afterSeq, Since: &since, SeenSeq: &seenSeq, MaxRows: int64(limit),
	})
	return convertAll(rows, func(r sqlitedb.ListRepliesRow) Reply { return Reply{Message(r.Message), r.RecipientName} }), sqliteError(err)
}

func (a sqliteQueries) MarkRepliesSeen(ctx context.Context, orgID, userID string, seq int64) error {
	return sqliteError(a.q.MarkRepliesSeen(ctx, sqlitedb.MarkRepliesSeenParams{OrgID: orgID, ID: userID, SeenSeq: seq}))
}

func (a sqliteQueries) CountQuestions(ctx context.Context, orgID, fromUserID, toUserID string) (int64, error) {
	n, err := a.q.CountQuestions(ctx, sqlitedb.CountQuestionsParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return n, sqliteError(err)
}

func (a sqliteQueries) LastQuestion(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error) {
	rows, err := a.q.LastQuestion(ctx, sqlitedb.LastQuestionParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return first(convertAll(rows, func(m sqlitedb.Message) Message { return Message(m) }), sqliteError(err))
}

func (a sqliteQueries) LastAnswer(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error) {
	rows, err := a.q.LastAnswer(ctx, sqlitedb.LastAnswerParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return first(convertAll(rows, func(m sqlitedb.Message) Message { return Message(m) }), sqliteError(err))
}

func (a sqliteQueries) UpdateUserPassword(ctx context.Context, orgID, id, passwordHash string) error {
	return oneRow(a.q.UpdateUserPassword(ctx, sqlitedb.UpdateUserPasswordParams{OrgID: orgID, ID: id, PasswordHash: passwordHash}))(sqliteError)
}

func (a sqliteQueries) SetUserDeactivated(ctx context.Context, orgID, id string, at *time.Time) error {
	return oneRow(a.q.SetUserDeactivated(ctx, sqlitedb.SetUserDeactivatedParams{OrgID: orgID, ID: id, DeactivatedAt: at}))(sqliteError)
}

func (a sqliteQueries) GetThrottles(ctx context.Context, accountKey, addrKey string) ([]Throttle, error) {
	rows, err := a.q.GetThrottle(ctx, sqlitedb.GetThrottleParams{AccountKey: accountKey, AddrKey: addrKey})
	return convertAll(rows, func(r sqlitedb.LoginThrottle) Throttle { return Throttle(r) }), sqliteError(err)
}

func (a sqliteQueries) BumpThrottle(ctx context.Context, key string, at time.Time) (Throttle, error) {
	r, err := a.q.BumpThrottle(ctx, sqlitedb.BumpThrottleParams{Key: key, Unlocked: time.Unix(0, 0).UTC(), UpdatedAt: at})
	return Throttle(r), sqliteError(err)
}

func (a sqliteQueries) LockThrottle(ctx context.Context, key string, until time.Time) error {
	return sqliteError(a.q.LockThrottle(ctx, sqlitedb.LockThrottleParams{Key: key, LockedUntil: until}))
}

func (a sqliteQueries) ForgiveThrottle(ctx context.Context, key string) error {
	return sqliteError(a.q.ForgiveThrottle(ctx, key))
}

func (a sqliteQueries) ClearThrottle(ctx context.Context, key string) error {
	return sqliteError(a.q.ClearThrottle(ctx, key))
}

func (a sqliteQueries) PruneThrottles(ctx context.Context, before time.Time) (int64, error) {
	n, err := a.q.PruneThrottle(ctx, before)
	return n, sqliteError(err)
}

func (a sqliteQueries) ListEvents(ctx context.Context, orgID, userID string, afterSeq int64, limit int) ([]Event, error) {
	rows, err := a.q.ListEvents(ctx, sqlitedb.ListEventsParams{OrgID: orgID, UserID: userID, AfterSeq: afterSeq, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ListEventsRow) Event { return Event(r) }), sqliteError(err)
}

// NotifyEvent queues a wake-up that the transaction publishes in process
// after it commits. Other processes on the same file learn of the event
// through the notifier's fallback poll.
func (a sqliteQueries) NotifyEvent(_ context.Context, orgID, userID string, seq int64) error {
	*a.events = append(*a.events, pendingEvent{orgID, userID, seq})
	return nil
}

func (s *sqliteStore) Subscribe(ctx context.Context, orgID, userID string) (<-chan struct{}, func()) {
	return s.events.subscribe(ctx, orgID, userID, func(ctx context.Context) { s.events.poll(ctx, s) })
}

func (s *sqliteStore) SubscribeFunc(ctx context.Context, orgID, userID string, onWake func()) func() {
	return s.events.subscribeFunc(ctx, orgID, userID, onWake, func(ctx context.Context) { s.events.poll(ctx, s) })
}

func (s *sqliteStore) Connections() (open, inUse int) {
	st := s.db.Stats()
	return st.OpenConnections, st.InUse
}

func (a sqliteQueries) GetTokenUser(ctx context.Context, hash []byte) (Token, User, error) {
	r, err := a.q.GetTokenUser(ctx, hash)
	return Token(r.AuthToken), User(r.User), sqliteError(err)
}

func (a sqliteQueries) PruneTokens(ctx context.Context, before time.Time) (int64, error) {
	n, err := a.q.PruneTokens(ctx, before)
	return n, sqliteError(err)
}

func (a sqliteQueries) TouchToken(ctx context.Context, hash []byte, usedAt, staleBefore time.Time) error {
	_, err := a.q.TouchToken(ctx, sqlitedb.TouchTokenParams{UsedAt: &usedAt, TokenHash: hash, StaleBefore: &staleBefore})
	return sqliteError(err)
}
