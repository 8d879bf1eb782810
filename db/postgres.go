package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctalk/ctalk/db/internal/pgdb"
)

// postgresStore is the production backend: a pgx pool.
type postgresStore struct {
	pool *pgxpool.Pool
	// listen configures the LISTEN connection, outside the pool: a direct
	// URL of the same database when the pool goes through a pooler.
	listenConfig *pgx.ConnConfig
	// events wakes waiters through that connection.
	events notifier
	log    *slog.Logger
}

func (s *postgresStore) Backend() string { return "postgres" }

func (s *postgresStore) Close() error {
	s.events.close()
	s.pool.Close()
	return nil
}

func (s *postgresStore) Ping(ctx context.Context) error {
	return pgError(s.pool.Ping(ctx))
}

func (s *postgresStore) InTx(ctx context.Context, fn func(q Queries) error) error {
	return s.tx(ctx, pgx.TxOptions{}, fn)
}

func (s *postgresStore) View(ctx context.Context, fn func(q Queries) error) error {
	return s.tx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, fn)
}

func (s *postgresStore) tx(ctx context.Context, opts pgx.TxOptions, fn func(q Queries) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return pgError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := fn(pgQueries{pgdb.New(tx), tx}); err != nil {
		return err
	}
	return pgError(tx.Commit(ctx))
}

// pgError maps pgx errors to the package's sentinels, keeping the original for logs.
func pgError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%w: %s", ErrNotFound, pgErr.ConstraintName)
		case "57P01", "57P02", "57P03", "53300": // shutdown, crash, cannot connect now, too many connections
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		// The connection broke mid-call (a restart, a network cut): the
		// database is unavailable, not ctalk broken.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// pgQueries adapts the generated Postgres queries to Queries.
type pgQueries struct {
	q  *pgdb.Queries
	tx pgx.Tx // for NOTIFY, which sqlc's shared queries cannot express
}

func (a pgQueries) CreateOrganization(ctx context.Context, o Organization) error {
	return pgError(a.q.CreateOrganization(ctx, pgdb.CreateOrganizationParams{
		ID: o.ID, Name: o.Name, AdminPasswordHash: o.AdminPasswordHash, CreatedAt: o.CreatedAt,
	}))
}

func (a pgQueries) GetOrganization(ctx context.Context, id string) (Organization, error) {
	o, err := a.q.GetOrganization(ctx, id)
	return Organization(o), pgError(err)
}

func (a pgQueries) AllocateMessage(ctx context.Context, orgID string) (int64, int64, error) {
	r, err := a.q.AllocateMessage(ctx, orgID)
	return r.LastMessageID, r.LastEventSeq, pgError(err)
}

func (a pgQueries) AllocateEvent(ctx context.Context, orgID string) (int64, error) {
	seq, err := a.q.AllocateEvent(ctx, orgID)
	return seq, pgError(err)
}

func (a pgQueries) CreateUser(ctx context.Context, u User) error {
	return pgError(a.q.CreateUser(ctx, pgdb.CreateUserParams{
		OrgID: u.OrgID, ID: u.ID, Name: u.Name, PasswordHash: u.PasswordHash, Ownership: u.Ownership,
		Notes: u.Notes, ProfileNotes: u.ProfileNotes, CreatedAt: u.CreatedAt, AdminSince: u.AdminSince,
	}))
}

func (a pgQueries) GetUser(ctx context.Context, orgID, id string) (User, error) {
	u, err := a.q.GetUser(ctx, pgdb.GetUserParams{OrgID: orgID, ID: id})
	return User(u), pgError(err)
}

func (a pgQueries) LockUser(ctx context.Context, orgID, id string) (User, error) {
	u, err := a.q.LockUser(ctx, pgdb.LockUserParams{OrgID: orgID, ID: id})
	return User(u), pgError(err)
}

func (a pgQueries) ListUsers(ctx context.Context, orgID string) ([]User, error) {
	rows, err := a.q.ListUsers(ctx, orgID)
	return convertAll(rows, func(u pgdb.User) User { return User(u) }), pgError(err)
}

func (a pgQueries) UpdateUserNotes(ctx context.Context, orgID, id, notes string) error {
	return oneRow(a.q.UpdateUserNotes(ctx, pgdb.UpdateUserNotesParams{OrgID: orgID, ID: id, Notes: notes}))(pgError)
}

func (a pgQueries) UpdateUserProfileNotes(ctx context.Context, orgID, id, notes string) error {
	return oneRow(a.q.UpdateUserProfileNotes(ctx, pgdb.UpdateUserProfileNotesParams{OrgID: orgID, ID: id, ProfileNotes: notes}))(pgError)
}

func (a pgQueries) CreateToken(ctx context.Context, t Token) error {
	return pgError(a.q.CreateToken(ctx, pgdb.CreateTokenParams{
		TokenHash: t.TokenHash, OrgID: t.OrgID, UserID: t.UserID, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
		GrantID: t.GrantID, Resource: t.Resource, Scope: t.Scope,
	}))
}

func (a pgQueries) GetToken(ctx context.Context, hash []byte) (Token, error) {
	t, err := a.q.GetToken(ctx, hash)
	return Token(t), pgError(err)
}

func (a pgQueries) RevokeToken(ctx context.Context, hash []byte, at time.Time) error {
	return oneRow(a.q.RevokeToken(ctx, pgdb.RevokeTokenParams{TokenHash: hash, RevokedAt: &at}))(pgError)
}

func (a pgQueries) RevokeUserTokens(ctx context.Context, orgID, userID string, keep []byte, at time.Time) (int64, error) {
	if err := a.revokeUserGrants(ctx, orgID, userID, keep, at); err != nil {
		return 0, err
	}
	n, err := a.q.RevokeUserTokens(ctx, pgdb.RevokeUserTokensParams{
		OrgID: orgID, UserID: userID, KeepTokenHash: nonNil(keep), RevokedAt: &at,
	})
	return n, pgError(err)
}

func (a pgQueries) CreateMessage(ctx context.Context, m Message) error {
	return pgError(a.q.CreateMessage(ctx, pgdb.CreateMessageParams{
		OrgID: m.OrgID, ID: m.ID, FromUserID: m.FromUserID, ToUserID: m.ToUserID,
		Question: m.Question, AskedAt: m.AskedAt, AskedSeq: m.AskedSeq, ThreadID: threadOf(m),
	}))
}

func (a pgQueries) AskPerson(ctx context.Context, p AskParams) (AskOutcome, error) {
	// The statement notifies on pgEventChannel with NotifyEvent's payload.
	r, err := a.q.AskPerson(ctx, pgdb.AskPersonParams{TokenHash: p.TokenHash, AskedAt: p.At, ToUserID: p.ToUserID, Question: p.Question, Resource: p.Resource, ThreadID: p.ThreadID})
	if err != nil {
		return AskOutcome{}, pgError(err)
	}
	out := AskOutcome{
		Status: AskStatus(r.Status),
		Message: Message{OrgID: r.OrgID, ID: r.ID, FromUserID: r.FromUserID, ToUserID: p.ToUserID,
			Question: p.Question, AskedAt: p.At, AskedSeq: r.AskedSeq, ThreadID: p.ThreadID},
		ToName: r.ToName,
	}
	if out.Message.ThreadID == 0 {
		out.Message.ThreadID = out.Message.ID
	}
	if r.TokenLastUsedAt.Unix() != 0 {
		out.TokenLastUsedAt = &r.TokenLastUsedAt
	}
	return out, nil
}

func (a pgQueries) GetMessage(ctx context.Context, orgID string, id int64) (Message, error) {
	m, err := a.q.GetMessage(ctx, pgdb.GetMessageParams{OrgID: orgID, ID: id})
	return Message(m), pgError(err)
}

func (a pgQueries) ListInbox(ctx context.Context, orgID, toUserID string, afterID int64, limit int) ([]InboxItem, error) {
	rows, err := a.q.ListInbox(ctx, pgdb.ListInboxParams{OrgID: orgID, ToUserID: toUserID, AfterID: afterID, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ListInboxRow) InboxItem {
		return InboxItem{Message(r.Message), r.SenderName, r.SenderOwnership, r.SenderNotes, r.SenderProfileNotes}
	}), pgError(err)
}

func (a pgQueries) SaveDraft(ctx context.Context, orgID string, id int64, draft string, at time.Time, share bool) error {
	return oneRow(a.q.SaveDraft(ctx, pgdb.SaveDraftParams{OrgID: orgID, ID: id, DraftText: &draft, DraftUpdatedAt: &at, DraftShare: share}))(pgError)
}

func (a pgQueries) AnswerMessage(ctx context.Context, orgID string, id int64, answer string, at time.Time, seq int64, sharedAt *time.Time) error {
	return oneRow(a.q.AnswerMessage(ctx, pgdb.AnswerMessageParams{
		OrgID: orgID, ID: id, AnswerText: &answer, AnsweredAt: &at, AnsweredSeq: &seq, SharedAt: sharedAt,
	}))(pgError)
}

func (a pgQueries) ListReplies(ctx context.Context, orgID, fromUserID string, since time.Time, afterSeq, seenSeq int64, limit int) ([]Reply, error) {
	minSeq := min(afterSeq, seenSeq)
	rows, err := a.q.ListReplies(ctx, pgdb.ListRepliesParams{
		OrgID: orgID, FromUserID: fromUserID, MinSeq: &minSeq, AfterSeq: &afterSeq, Since: &since, SeenSeq: &seenSeq, MaxRows: int32(limit),
	})
	return convertAll(rows, func(r pgdb.ListRepliesRow) Reply { return Reply{Message(r.Message), r.RecipientName} }), pgError(err)
}

func (a pgQueries) MarkRepliesSeen(ctx context.Context, orgID, userID string, seq int64) error {
	return pgError(a.q.MarkRepliesSeen(ctx, pgdb.MarkRepliesSeenParams{OrgID: orgID, ID: userID, SeenSeq: seq}))
}

func (a pgQueries) CountQuestions(ctx context.Context, orgID, fromUserID, toUserID string) (int64, error) {
	n, err := a.q.CountQuestions(ctx, pgdb.CountQuestionsParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return n, pgError(err)
}

func (a pgQueries) LastQuestion(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error) {
	rows, err := a.q.LastQuestion(ctx, pgdb.LastQuestionParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return first(convertAll(rows, func(m pgdb.Message) Message { return Message(m) }), pgError(err))
}

func (a pgQueries) LastAnswer(ctx context.Context, orgID, fromUserID, toUserID string) (Message, error) {
	rows, err := a.q.LastAnswer(ctx, pgdb.LastAnswerParams{OrgID: orgID, FromUserID: fromUserID, ToUserID: toUserID})
	return first(convertAll(rows, func(m pgdb.Message) Message { return Message(m) }), pgError(err))
}

func (a pgQueries) UpdateUserPassword(ctx context.Context, orgID, id, passwordHash string) error {
	return oneRow(a.q.UpdateUserPassword(ctx, pgdb.UpdateUserPasswordParams{OrgID: orgID, ID: id, PasswordHash: passwordHash}))(pgError)
}

func (a pgQueries) SetUserDeactivated(ctx context.Context, orgID, id string, at *time.Time) error {
	return oneRow(a.q.SetUserDeactivated(ctx, pgdb.SetUserDeactivatedParams{OrgID: orgID, ID: id, DeactivatedAt: at}))(pgError)
}

func (a pgQueries) GetThrottles(ctx context.Context, accountKey, addrKey string) ([]Throttle, error) {
	rows, err := a.q.GetThrottle(ctx, pgdb.GetThrottleParams{AccountKey: accountKey, AddrKey: addrKey})
	return convertAll(rows, func(r pgdb.LoginThrottle) Throttle { return Throttle(r) }), pgError(err)
}

func (a pgQueries) BumpThrottle(ctx context.Context, key string, at time.Time) (Throttle, error) {
	r, err := a.q.BumpThrottle(ctx, pgdb.BumpThrottleParams{Key: key, Unlocked: time.Unix(0, 0).UTC(), UpdatedAt: at})
	return Throttle(r), pgError(err)
}

func (a pgQueries) LockThrottle(ctx context.Context, key string, until time.Time) error {
	return pgError(a.q.LockThrottle(ctx, pgdb.LockThrottleParams{Key: key, LockedUntil: until}))
}

func (a pgQueries) ForgiveThrottle(ctx context.Context, key string) error {
	return pgError(a.q.ForgiveThrottle(ctx, key))
}

func (a pgQueries) ClearThrottle(ctx context.Context, key string) error {
	return pgError(a.q.ClearThrottle(ctx, key))
}

func (a pgQueries) PruneThrottles(ctx context.Context, before time.Time) (int64, error) {
	n, err := a.q.PruneThrottle(ctx, before)
	return n, pgError(err)
}

func (a pgQueries) ListEvents(ctx context.Context, orgID, userID string, afterSeq int64, limit int) ([]Event, error) {
	rows, err := a.q.ListEvents(ctx, pgdb.ListEventsParams{OrgID: orgID, UserID: userID, AfterSeq: afterSeq, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ListEventsRow) Event { return Event(r) }), pgError(err)
}

// pgEventChannel is the NOTIFY channel of event wake-ups. Channels are
// database-wide: the payload names the schema, so deployments (and tests)
// sharing a database in different schemas ignore each other's events.
const pgEventChannel = "ctalk_events"

// pgEvent is a NOTIFY payload.
type pgEvent struct {
	Schema string `json:"s"`
	OrgID  string `json:"o"`
	UserID string `json:"u"`
	Seq    int64  `json:"q"`
	// Probe is set on the notification a LISTEN connection sends itself
	// through the pool to prove that it hears what the pool's commits send.
	Probe string `json:"p,omitempty"`
}

// NotifyEvent queues a NOTIFY that PostgreSQL delivers when the transaction
// commits (and drops if it rolls back).
func (a pgQueries) NotifyEvent(ctx context.Context, orgID, userID string, seq int64) error {
	_, err := a.tx.Exec(ctx, `SELECT pg_notify($1, json_build_object('s', current_schema(), 'o', $2::text, 'u', $3::text, 'q', $4::bigint)::text)`,
		pgEventChannel, orgID, userID, seq)
	return pgError(err)
}

func (s *postgresStore) Subscribe(ctx context.Context, orgID, userID string) (<-chan struct{}, func()) {
	return s.events.subscribe(ctx, orgID, userID, s.listen, func(ctx context.Context) { s.events.poll(ctx, s) })
}

func (s *postgresStore) SubscribeFunc(ctx context.Context, orgID, userID string, onWake func()) func() {
	return s.events.subscribeFunc(ctx, orgID, userID, onWake, s.listen, func(ctx context.Context) { s.events.poll(ctx, s) })
}

// Reconnect delays of the LISTEN connection.
const (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 10 * time.Second
	// listenPing is how long the LISTEN connection may stay silent before it
	// is pinged: a dead peer would otherwise leave it waiting forever.
	listenPing = 30 * time.Second
	// listenProbe is how long a new LISTEN connection waits for the probe
	// it sent itself through the pool before warning that it hears nothing.
	listenProbe = 5 * time.Second
)

// listen keeps one LISTEN connection open until ctx ends, reconnecting with
// backoff, and hands each notification to the notifier.
func (s *postgresStore) listen(ctx context.Context) {
	backoff := listenMinBackoff
	for {
		listening, err := s.listenOnce(ctx)
		if listening {
			backoff = listenMinBackoff
		}
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "postgres LISTEN connection lost; waiters are woken by the fallback poll until it is back",
				"err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listenOnce connects, listens, and relays notifications until the
// connection fails or ctx ends. listening reports whether LISTEN succeeded.
func (s *postgresStore) listenOnce(ctx context.Context) (listening bool, _ error) {
	conn, err := pgx.ConnectConfig(ctx, s.listenConfig)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(closeCtx)
	}()
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgEventChannel); err != nil {
		return false, err
	}
	// Whatever committed while nobody listened was not heard: look again.
	s.events.wakeAll()
	// A LISTEN through a transaction pooler succeeds but hears nothing: send
	// a probe through the pool and say so when it does not arrive.
	probe := strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, json_build_object('s', current_schema(), 'p', $2::text)::text)`,
		pgEventChannel, probe); err != nil {
		return true, err
	}
	probeBy := time.Now().Add(listenProbe)
	for {
		wait := listenPing
		if probe != "" {
			wait = time.Until(probeBy)
		}
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return true, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && probe != "":
			probe = ""
			s.log.WarnContext(ctx, "the LISTEN connection did not hear a notification sent through DATABASE_URL within "+listenProbe.String()+
				": a transaction pooler (PgBouncer, a pooled URL) or another database or search_path; wake-ups fall back to the 5 s poll. "+
				"Set CTALK_LISTEN_DATABASE_URL to the direct (unpooled) URL of the same database")
			continue
		case errors.Is(err, context.DeadlineExceeded):
			pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = conn.Ping(pingCtx)
			cancel()
			if err != nil {
				return true, err
			}
			continue
		case err != nil:
			return true, err
		}
		var ev pgEvent
		if json.Unmarshal([]byte(n.Payload), &ev) != nil || ev.Schema != schema {
			continue
		}
		if ev.Probe != "" {
			if ev.Probe == probe {
				probe = ""
			}
			continue
		}
		s.events.publish(ev.OrgID, ev.UserID, ev.Seq)
	}
}

func (s *postgresStore) Connections() (open, inUse int) {
	st := s.pool.Stat()
	return int(st.TotalConns()), int(st.AcquiredConns())
}

func (a pgQueries) GetTokenUser(ctx context.Context, hash []byte) (Token, User, error) {
	r, err := a.q.GetTokenUser(ctx, hash)
	return Token(r.AuthToken), User(r.User), pgError(err)
}

func (a pgQueries) PruneTokens(ctx context.Context, before time.Time) (int64, error) {
	n, err := a.q.PruneTokens(ctx, before)
	return n, pgError(err)
}

func (a pgQueries) TouchToken(ctx context.Context, hash []byte, usedAt, staleBefore time.Time) error {
	_, err := a.q.TouchToken(ctx, pgdb.TouchTokenParams{UsedAt: &usedAt, TokenHash: hash, StaleBefore: &staleBefore})
	return pgError(err)
}
