package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// Notifications (issue 16): a person's settings, the organization's policy
// and the outbox. Outbox rows are written by triggers in the transaction
// that asks or answers (migration 00010), never by these methods; the
// delivery workers claim, finish and retry them.

// Notification channels, as NotificationSettings.Channel spells them.
const (
	ChannelNone    = "none"
	ChannelEmail   = "email"
	ChannelSlack   = "slack"
	ChannelTeams   = "teams"
	ChannelWebhook = "webhook"
)

// Notification kinds and outcomes, as the outbox spells them.
const (
	NotifyQuestion = "question" // a question asked of the recipient
	NotifyAnswer   = "answer"   // an answer to a question the recipient asked

	OutcomeSent       = "sent"       // delivered
	OutcomeSuppressed = "suppressed" // the question was answered within the delay
	OutcomeSkipped    = "skipped"    // the setting changed to none, or was paused
	OutcomeFailed     = "failed"     // the last attempt failed
)

// NotificationSettings are how one person wants to be told.
type NotificationSettings struct {
	OrgID, UserID string
	// Channel is one of the Channel constants.
	Channel string
	// Address is the email address or webhook URL ("" for none).
	Address string
	// Secret signs the generic webhook's bodies.
	Secret      string
	OnQuestions bool
	OnAnswers   bool
	// DelaySeconds: a question is announced only if still unanswered after it.
	DelaySeconds int
	// QuietStart and QuietEnd are minutes after midnight in TimeZone; equal: none.
	QuietStart, QuietEnd int
	TimeZone             string
	// PausedAt is when deliveries were paused for failing (nil: not paused).
	PausedAt    *time.Time
	PauseReason string
	// Failures counts consecutive failed deliveries.
	Failures  int
	UpdatedAt time.Time
}

// OrgNotificationSettings is an organization's notification policy.
type OrgNotificationSettings struct {
	OrgID string
	// Excerpts lets question and answer text leave ctalk in notifications.
	Excerpts  bool
	UpdatedAt time.Time
}

// FailedNotification is a notification whose last attempt failed.
type FailedNotification struct {
	ID        int64
	UserID    string
	UserName  string
	MessageID int64
	ThreadID  int64
	Kind      string
	CreatedAt time.Time
	Attempts  int
	// FailedAt is when it was given up.
	FailedAt  *time.Time
	LastError string
	// Channel is the person's channel now.
	Channel string
}

// NotificationDelivery is a claimed notification with what delivering it
// needs: the question, both people's names, the recipient's settings and
// the organization's excerpt policy. (Its fields are the generated rows'
// of both backends, in their order.)
type NotificationDelivery struct {
	ID        int64
	OrgID     string
	UserID    string
	MessageID int64
	Kind      string
	CreatedAt time.Time
	// Attempts counts this one.
	Attempts   int64
	ThreadID   int64
	FromUserID string
	ToUserID   string
	Question   string
	AnswerText *string
	AnsweredAt *time.Time
	FromName   string
	ToName     string
	// The recipient's settings as they are now.
	Channel     string
	Address     string
	Secret      string
	QuietStart  int64
	QuietEnd    int64
	TimeZone    string
	PausedAt    *time.Time
	OnQuestions bool
	OnAnswers   bool
	Excerpts    bool
}

// NotificationQueries are the notifications' storage.
type NotificationQueries interface {
	// GetNotificationSettings returns a person's settings; ErrNotFound if they never saved any.
	GetNotificationSettings(ctx context.Context, orgID, userID string) (NotificationSettings, error)
	// SaveNotificationSettings stores a person's settings whole, clearing a
	// pause and the failure count (PausedAt, PauseReason and Failures are ignored).
	SaveNotificationSettings(ctx context.Context, s NotificationSettings) error
	// GetOrgNotificationSettings returns an organization's policy; ErrNotFound if never saved.
	GetOrgNotificationSettings(ctx context.Context, orgID string) (OrgNotificationSettings, error)
	SaveOrgNotificationSettings(ctx context.Context, o OrgNotificationSettings) error
	// ListFailedNotifications returns up to limit failed notifications of an
	// organization with id < beforeID, newest first.
	ListFailedNotifications(ctx context.Context, orgID string, beforeID int64, limit int) ([]FailedNotification, error)

	// ClaimNotifications leases up to limit notifications due at now until
	// leaseUntil (skipping rows another transaction holds) and returns them,
	// each attempt counted.
	ClaimNotifications(ctx context.Context, now, leaseUntil time.Time, limit int) ([]NotificationDelivery, error)
	// FinishNotification records a notification's outcome at at, once: false
	// if it was finished already.
	FinishNotification(ctx context.Context, id int64, outcome, lastError string, at time.Time) (bool, error)
	// RetryNotification makes an unfinished notification due again at next.
	RetryNotification(ctx context.Context, id int64, next time.Time, lastError string) error
	// PostponeNotification makes an unfinished notification due at next
	// without counting its claim as an attempt (quiet hours).
	PostponeNotification(ctx context.Context, id int64, next time.Time) error
	// NotificationFailed counts a failed delivery to a person's endpoint and
	// returns the consecutive failures.
	NotificationFailed(ctx context.Context, orgID, userID string) (int, error)
	// NotificationDelivered resets a person's consecutive failures.
	NotificationDelivered(ctx context.Context, orgID, userID string) error
	// PauseNotifications pauses a person's deliveries; false if already paused.
	PauseNotifications(ctx context.Context, orgID, userID string, at time.Time, reason string) (bool, error)
	// NextNotificationDue returns when the next unfinished notification comes
	// due; ok is false when there is none.
	NextNotificationDue(ctx context.Context) (at time.Time, ok bool, err error)
	// CountPendingNotifications counts the unfinished notifications.
	CountPendingNotifications(ctx context.Context) (int64, error)
	// PruneNotifications deletes up to limit notifications finished before
	// cutoff and returns how many.
	PruneNotifications(ctx context.Context, cutoff time.Time, limit int) (int64, error)
}

func (a pgQueries) GetNotificationSettings(ctx context.Context, orgID, userID string) (NotificationSettings, error) {
	r, err := a.q.GetNotificationSettings(ctx, pgdb.GetNotificationSettingsParams{OrgID: orgID, UserID: userID})
	return NotificationSettings{OrgID: r.OrgID, UserID: r.UserID, Channel: r.Channel, Address: r.Address, Secret: r.Secret,
		OnQuestions: r.OnQuestions, OnAnswers: r.OnAnswers, DelaySeconds: int(r.DelaySeconds), QuietStart: int(r.QuietStart),
		QuietEnd: int(r.QuietEnd), TimeZone: r.TimeZone, PausedAt: r.PausedAt, PauseReason: r.PauseReason,
		Failures: int(r.Failures), UpdatedAt: r.UpdatedAt}, pgError(err)
}

func (a sqliteQueries) GetNotificationSettings(ctx context.Context, orgID, userID string) (NotificationSettings, error) {
	r, err := a.q.GetNotificationSettings(ctx, sqlitedb.GetNotificationSettingsParams{OrgID: orgID, UserID: userID})
	return NotificationSettings{OrgID: r.OrgID, UserID: r.UserID, Channel: r.Channel, Address: r.Address, Secret: r.Secret,
		OnQuestions: r.OnQuestions, OnAnswers: r.OnAnswers, DelaySeconds: int(r.DelaySeconds), QuietStart: int(r.QuietStart),
		QuietEnd: int(r.QuietEnd), TimeZone: r.TimeZone, PausedAt: r.PausedAt, PauseReason: r.PauseReason,
		Failures: int(r.Failures), UpdatedAt: r.UpdatedAt}, sqliteError(err)
}

func (a pgQueries) SaveNotificationSettings(ctx context.Context, s NotificationSettings) error {
	return pgError(a.q.UpsertNotificationSettings(ctx, pgdb.UpsertNotificationSettingsParams{OrgID: s.OrgID, UserID: s.UserID,
		Channel: s.Channel, Address: s.Address, Secret: s.Secret, OnQuestions: s.OnQuestions, OnAnswers: s.OnAnswers,
		DelaySeconds: int32(s.DelaySeconds), QuietStart: int32(s.QuietStart), QuietEnd: int32(s.QuietEnd),
		TimeZone: s.TimeZone, UpdatedAt: s.UpdatedAt}))
}

func (a sqliteQueries) SaveNotificationSettings(ctx context.Context, s NotificationSettings) error {
	return sqliteError(a.q.UpsertNotificationSettings(ctx, sqlitedb.UpsertNotificationSettingsParams{OrgID: s.OrgID, UserID: s.UserID,
		Channel: s.Channel, Address: s.Address, Secret: s.Secret, OnQuestions: s.OnQuestions, OnAnswers: s.OnAnswers,
		DelaySeconds: int64(s.DelaySeconds), QuietStart: int64(s.QuietStart), QuietEnd: int64(s.QuietEnd),
		TimeZone: s.TimeZone, UpdatedAt: s.UpdatedAt}))
}

func (a pgQueries) GetOrgNotificationSettings(ctx context.Context, orgID string) (OrgNotificationSettings, error) {
	r, err := a.q.GetOrgNotificationSettings(ctx, orgID)
	return OrgNotificationSettings(r), pgError(err)
}

func (a sqliteQueries) GetOrgNotificationSettings(ctx context.Context, orgID string) (OrgNotificationSettings, error) {
	r, err := a.q.GetOrgNotificationSettings(ctx, orgID)
	return OrgNotificationSettings(r), sqliteError(err)
}

func (a pgQueries) SaveOrgNotificationSettings(ctx context.Context, o OrgNotificationSettings) error {
	return pgError(a.q.UpsertOrgNotificationSettings(ctx, pgdb.UpsertOrgNotificationSettingsParams(o)))
}

func (a sqliteQueries) SaveOrgNotificationSettings(ctx context.Context, o OrgNotificationSettings) error {
	return sqliteError(a.q.UpsertOrgNotificationSettings(ctx, sqlitedb.UpsertOrgNotificationSettingsParams(o)))
}

func (a pgQueries) ListFailedNotifications(ctx context.Context, orgID string, beforeID int64, limit int) ([]FailedNotification, error) {
	rows, err := a.q.ListFailedNotifications(ctx, pgdb.ListFailedNotificationsParams{OrgID: orgID, BeforeID: beforeID, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ListFailedNotificationsRow) FailedNotification {
		return FailedNotification{ID: r.ID, UserID: r.UserID, UserName: r.UserName, MessageID: r.MessageID, ThreadID: r.ThreadID,
			Kind: r.Kind, CreatedAt: r.CreatedAt, Attempts: int(r.Attempts), FailedAt: r.DeliveredAt, LastError: r.LastError, Channel: r.Channel}
	}), pgError(err)
}

func (a sqliteQueries) ListFailedNotifications(ctx context.Context, orgID string, beforeID int64, limit int) ([]FailedNotification, error) {
	rows, err := a.q.ListFailedNotifications(ctx, sqlitedb.ListFailedNotificationsParams{OrgID: orgID, BeforeID: beforeID, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ListFailedNotificationsRow) FailedNotification {
		return FailedNotification{ID: r.ID, UserID: r.UserID, UserName: r.UserName, MessageID: r.MessageID, ThreadID: r.ThreadID,
			Kind: r.Kind, CreatedAt: r.CreatedAt, Attempts: int(r.Attempts), FailedAt: r.DeliveredAt, LastError: r.LastError, Channel: r.Channel}
	}), sqliteError(err)
}

func (a pgQueries) ClaimNotifications(ctx context.Context, now, leaseUntil time.Time, limit int) ([]NotificationDelivery, error) {
	ids, err := a.q.ClaimNotifications(ctx, pgdb.ClaimNotificationsParams{LeaseUntil: &leaseUntil, Now: now, MaxRows: int32(limit)})
	if err != nil || len(ids) == 0 {
		return nil, pgError(err)
	}
	rows, err := a.q.GetNotificationDeliveries(ctx, ids)
	return convertAll(rows, func(r pgdb.GetNotificationDeliveriesRow) NotificationDelivery { return NotificationDelivery(r) }), pgError(err)
}

func (a sqliteQueries) ClaimNotifications(ctx context.Context, now, leaseUntil time.Time, limit int) ([]NotificationDelivery, error) {
	ids, err := a.q.ClaimNotifications(ctx, sqlitedb.ClaimNotificationsParams{LeaseUntil: &leaseUntil, Now: now, MaxRows: int64(limit)})
	if err != nil || len(ids) == 0 {
		return nil, sqliteError(err)
	}
	rows, err := a.q.GetNotificationDeliveries(ctx, ids)
	return convertAll(rows, func(r sqlitedb.GetNotificationDeliveriesRow) NotificationDelivery { return NotificationDelivery(r) }), sqliteError(err)
}

func (a pgQueries) FinishNotification(ctx context.Context, id int64, outcome, lastError string, at time.Time) (bool, error) {
	n, err := a.q.FinishNotification(ctx, pgdb.FinishNotificationParams{DeliveredAt: &at, Outcome: outcome, LastError: lastError, ID: id})
	return n == 1, pgError(err)
}

func (a sqliteQueries) FinishNotification(ctx context.Context, id int64, outcome, lastError string, at time.Time) (bool, error) {
	n, err := a.q.FinishNotification(ctx, sqlitedb.FinishNotificationParams{DeliveredAt: &at, Outcome: outcome, LastError: lastError, ID: id})
	return n == 1, sqliteError(err)
}

func (a pgQueries) RetryNotification(ctx context.Context, id int64, next time.Time, lastError string) error {
	_, err := a.q.RetryNotification(ctx, pgdb.RetryNotificationParams{NextAttemptAt: next, LastError: lastError, ID: id})
	return pgError(err)
}

func (a sqliteQueries) RetryNotification(ctx context.Context, id int64, next time.Time, lastError string) error {
	_, err := a.q.RetryNotification(ctx, sqlitedb.RetryNotificationParams{NextAttemptAt: next, LastError: lastError, ID: id})
	return sqliteError(err)
}

func (a pgQueries) PostponeNotification(ctx context.Context, id int64, next time.Time) error {
	_, err := a.q.PostponeNotification(ctx, pgdb.PostponeNotificationParams{NextAttemptAt: next, ID: id})
	return pgError(err)
}

func (a sqliteQueries) PostponeNotification(ctx context.Context, id int64, next time.Time) error {
	_, err := a.q.PostponeNotification(ctx, sqlitedb.PostponeNotificationParams{NextAttemptAt: next, ID: id})
	return sqliteError(err)
}

func (a pgQueries) NotificationFailed(ctx context.Context, orgID, userID string) (int, error) {
	n, err := a.q.BumpNotificationFailures(ctx, pgdb.BumpNotificationFailuresParams{OrgID: orgID, UserID: userID})
	return int(n), pgError(err)
}

func (a sqliteQueries) NotificationFailed(ctx context.Context, orgID, userID string) (int, error) {
	n, err := a.q.BumpNotificationFailures(ctx, sqlitedb.BumpNotificationFailuresParams{OrgID: orgID, UserID: userID})
	return int(n), sqliteError(err)
}

func (a pgQueries) NotificationDelivered(ctx context.Context, orgID, userID string) error {
	return pgError(a.q.ClearNotificationFailures(ctx, pgdb.ClearNotificationFailuresParams{OrgID: orgID, UserID: userID}))
}

func (a sqliteQueries) NotificationDelivered(ctx context.Context, orgID, userID string) error {
	return sqliteError(a.q.ClearNotificationFailures(ctx, sqlitedb.ClearNotificationFailuresParams{OrgID: orgID, UserID: userID}))
}

func (a pgQueries) PauseNotifications(ctx context.Context, orgID, userID string, at time.Time, reason string) (bool, error) {
	n, err := a.q.PauseNotifications(ctx, pgdb.PauseNotificationsParams{PausedAt: &at, PauseReason: reason, OrgID: orgID, UserID: userID})
	return n == 1, pgError(err)
}

func (a sqliteQueries) PauseNotifications(ctx context.Context, orgID, userID string, at time.Time, reason string) (bool, error) {
	n, err := a.q.PauseNotifications(ctx, sqlitedb.PauseNotificationsParams{PausedAt: &at, PauseReason: reason, OrgID: orgID, UserID: userID})
	return n == 1, sqliteError(err)
}

func (a pgQueries) NextNotificationDue(ctx context.Context) (time.Time, bool, error) {
	rows, err := a.q.NextNotificationDue(ctx)
	if err != nil || len(rows) == 0 {
		return time.Time{}, false, pgError(err)
	}
	return rows[0], true, nil
}

func (a sqliteQueries) NextNotificationDue(ctx context.Context) (time.Time, bool, error) {
	rows, err := a.q.NextNotificationDue(ctx)
	if err != nil || len(rows) == 0 {
		return time.Time{}, false, sqliteError(err)
	}
	return rows[0], true, nil
}

func (a pgQueries) CountPendingNotifications(ctx context.Context) (int64, error) {
	n, err := a.q.CountPendingNotifications(ctx)
	return n, pgError(err)
}

func (a sqliteQueries) CountPendingNotifications(ctx context.Context) (int64, error) {
	n, err := a.q.CountPendingNotifications(ctx)
	return n, sqliteError(err)
}

func (a pgQueries) PruneNotifications(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	n, err := a.q.PruneNotifications(ctx, pgdb.PruneNotificationsParams{Cutoff: &cutoff, MaxRows: int32(limit)})
	return n, pgError(err)
}

func (a sqliteQueries) PruneNotifications(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	n, err := a.q.PruneNotifications(ctx, sqlitedb.PruneNotificationsParams{Cutoff: &cutoff, MaxRows: int64(limit)})
	return n, sqliteError(err)
}
