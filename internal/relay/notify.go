package relay

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/notify"
)

// Notifications (issue 16): each person chooses how they are told of new
// questions and of answers to theirs, outside their agent: by email, a
// Slack or Microsoft Teams incoming webhook, a signed generic webhook, or
// not at all. The rules here validate and store those choices, the
// organization's excerpt policy (admins) and show admins the failed
// deliveries; the outbox rows themselves are written by database triggers
// in the transaction that asks or answers, and delivered by the workers of
// internal/notify.

// NotifyOptions configures what notification settings may name.
type NotifyOptions struct {
	// EmailEnabled says the server can send email (CTALK_SMTP_URL is set):
	// without it the email channel is refused when saved.
	EmailEnabled bool
	// Guard checks webhook URLs when they are saved (no private, loopback or
	// reserved destinations unless the operator allows them).
	Guard notify.Guard
}

// Audit actions of notification settings. Their details never hold an
// address, a webhook URL or a secret.
const (
	AuditNotifySettings = "notify.settings"
	AuditNotifyExcerpts = "notify.excerpts"
)

// Limits of notification settings.
const (
	MaxNotifyDelayMinutes = 24 * 60
	MaxNotifyAddressLen   = 2048
	maxEmailLen           = 254
	failedPage            = 100
)

// NotifyChannels are the channels a person may choose, in the order help texts list them.
var NotifyChannels = []string{db.ChannelNone, db.ChannelEmail, db.ChannelSlack, db.ChannelTeams, db.ChannelWebhook}

// NotificationSettings are a person's notification settings as they see them.
type NotificationSettings struct {
	// Channel is none, email, slack, teams or webhook.
	Channel string `json:"channel"`
	// Address is the email address or webhook URL ("" when none was given).
	Address     string `json:"address,omitempty"`
	OnQuestions bool   `json:"on_questions"`
	OnAnswers   bool   `json:"on_answers"`
	// DelayMinutes: a question is announced only if still unanswered after it (0: at once).
	DelayMinutes int `json:"delay_minutes"`
	// QuietStart and QuietEnd are "HH:MM" in TimeZone ("" when there are no quiet hours).
	QuietStart string `json:"quiet_start,omitempty"`
	QuietEnd   string `json:"quiet_end,omitempty"`
	TimeZone   string `json:"time_zone"`
	// Secret signs the generic webhook's bodies (channel webhook only):
	// shown to its owner only.
	Secret string `json:"webhook_secret,omitempty"`
	// PausedAt is set when deliveries stopped because the endpoint kept
	// failing; saving the settings resumes them.
	PausedAt    *time.Time `json:"paused_at,omitempty"`
	PauseReason string     `json:"pause_reason,omitempty"`
	// Failures counts consecutive failed deliveries.
	Failures int `json:"consecutive_failures,omitempty"`
	// Excerpts says whether the organization lets notifications carry
	// question and answer text (an admin setting).
	Excerpts bool `json:"excerpts"`
	// EmailAvailable says whether this server can send email.
	EmailAvailable bool `json:"email_available"`
	// Saved is false while the person has never saved settings (these are the defaults).
	Saved bool `json:"saved"`
	// Notice says what to do about a pause, when there is one.
	Notice string `json:"notice,omitempty"`
}

// NotificationUpdate changes some of a person's settings: nil fields keep
// their value.
type NotificationUpdate struct {
	Channel      *string
	Address      *string
	OnQuestions  *bool
	OnAnswers    *bool
	DelayMinutes *int
	// QuietStart and QuietEnd are "HH:MM"; both "" removes the quiet hours.
	QuietStart *string
	QuietEnd   *string
	TimeZone   *string
	// RotateSecret replaces the generic webhook's signing secret.
	RotateSecret bool
}

// OrgNotificationSettings is the organization's notification policy.
type OrgNotificationSettings struct {
	// Excerpts lets notifications carry a short excerpt of the question or
	// answer; off, they say only who asked and link to the thread.
	Excerpts  bool       `json:"excerpts"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// FailedNotification is a notification given up after its last attempt.
type FailedNotification struct {
	ID       int64  `json:"id"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
	// Kind is question (a question asked of the person) or answer (to their question).
	Kind      string     `json:"kind"`
	MessageID int64      `json:"message_id"`
	ThreadID  int64      `json:"thread_id"`
	Channel   string     `json:"channel"`
	CreatedAt time.Time  `json:"created_at"`
	FailedAt  *time.Time `json:"failed_at,omitempty"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"last_error"`
}

// FailedNotificationsPage is one page of failed deliveries, newest first.
type FailedNotificationsPage struct {
	Failed []FailedNotification `json:"failed"`
	// NextBefore, when not 0, is the beforeID of the next (older) page.
	NextBefore int64 `json:"next_before,omitempty"`
}

// defaultNotify are the settings of a person who never saved any: nothing is sent.
func defaultNotify(orgID, userID string) db.NotificationSettings {
	return db.NotificationSettings{OrgID: orgID, UserID: userID, Channel: db.ChannelNone, OnQuestions: true, OnAnswers: true,
		TimeZone: "UTC"}
}

// NotificationSettings returns the caller's notification settings.
func (s *Service) NotificationSettings(ctx context.Context, cred Credentials) (NotificationSettings, error) {
	var out NotificationSettings
	err := s.store.View(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		st, saved, err := loadNotify(ctx, q, c.user)
		if err != nil {
			return err
		}
		excerpts, err := orgExcerpts(ctx, q, c.user.OrgID)
		out = s.notifyView(st, saved, excerpts)
		return err
	})
	return out, err
}

// UpdateNotificationSettings changes the caller's notification settings
// and returns them. Saving also resumes paused deliveries. A webhook URL is
// checked against the destination guard before anything is stored.
func (s *Service) UpdateNotificationSettings(ctx context.Context, cred Credentials, u NotificationUpdate) (NotificationSettings, error) {
	var cur db.NotificationSettings
	err := s.store.View(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		cur, _, err = loadNotify(ctx, q, c.user)
		return err
	})
	if err != nil {
		return NotificationSettings{}, err
	}
	next, err := s.mergeNotify(ctx, cur, u)
	if err != nil {
		return NotificationSettings{}, err
	}
	var out NotificationSettings
	err = s.store.InTx(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		if c.user.OrgID != next.OrgID || c.user.ID != next.UserID {
			return errBadToken // the token changed hands between the two transactions: impossible, but never save for another
		}
		next.UpdatedAt = s.clock()
		if err := q.SaveNotificationSettings(ctx, next); err != nil {
			return err
		}
		detail := notifyDetail(next)
		if u.RotateSecret && next.Channel == db.ChannelWebhook {
			detail += "; webhook secret replaced"
		}
		if err := s.audit(ctx, q, c.user.OrgID, c.user.ID, AuditNotifySettings, c.user.ID, detail); err != nil {
			return err
		}
		excerpts, err := orgExcerpts(ctx, q, c.user.OrgID)
		out = s.notifyView(next, true, excerpts)
		return err
	})
	return out, err
}

// mergeNotify applies an update to the current settings and validates the
// result, with errors that say what to write instead.
func (s *Service) mergeNotify(ctx context.Context, cur db.NotificationSettings, u NotificationUpdate) (db.NotificationSettings, error) {
	next := cur
	next.PausedAt, next.PauseReason, next.Failures = nil, "", 0 // saving resumes deliveries
	if u.Channel != nil {
		ch := strings.ToLower(strings.TrimSpace(*u.Channel))
		if !slices.Contains(NotifyChannels, ch) {
			return next, badInput("channel %s is not one of %s", quoteShort(*u.Channel), strings.Join(NotifyChannels, ", "))
		}
		next.Channel = ch
	}
	if u.Address != nil {
		next.Address = strings.TrimSpace(*u.Address)
	}
	if u.OnQuestions != nil {
		next.OnQuestions = *u.OnQuestions
	}
	if u.OnAnswers != nil {
		next.OnAnswers = *u.OnAnswers
	}
	if u.DelayMinutes != nil {
		if *u.DelayMinutes < 0 || *u.DelayMinutes > MaxNotifyDelayMinutes {
			return next, badInput("delay_minutes must be between 0 (at once) and %d (a day), not %d", MaxNotifyDelayMinutes, *u.DelayMinutes)
		}
		next.DelaySeconds = *u.DelayMinutes * 60
	}
	if u.TimeZone != nil {
		tz := strings.TrimSpace(*u.TimeZone)
		if tz == "" {
			tz = "UTC"
		}
		if _, err := time.LoadLocation(tz); err != nil || strings.EqualFold(tz, "Local") {
			return next, badInput("time_zone %s is not an IANA time zone: write one such as Europe/Berlin, America/New_York or UTC", quoteShort(tz))
		}
		next.TimeZone = tz
	}
	if u.QuietStart != nil || u.QuietEnd != nil {
		start, end := FormatQuiet(cur.QuietStart, cur.QuietEnd)
		if u.QuietStart != nil {
			start = strings.TrimSpace(*u.QuietStart)
		}
		if u.QuietEnd != nil {
			end = strings.TrimSpace(*u.QuietEnd)
		}
		var err error
		if next.QuietStart, next.QuietEnd, err = parseQuiet(start, end); err != nil {
			return next, err
		}
	}
	if next.Channel == db.ChannelNone {
		return next, nil
	}
	if !next.OnQuestions && !next.OnAnswers {
		return next, badInput("on_questions and on_answers are both off, so nothing would be sent: turn one on, or choose channel none")
	}
	if next.Address == "" {
		return next, badInput("channel %s needs an address: %s", next.Channel, addressHint(next.Channel))
	}
	if len(next.Address) > MaxNotifyAddressLen {
		return next, badInput("address is too long (at most %d characters)", MaxNotifyAddressLen)
	}
	switch next.Channel {
	case db.ChannelEmail:
		if !s.notify.EmailEnabled {
			return next, badInput("this server cannot send email (its operator has not set CTALK_SMTP_URL): choose slack, teams, webhook or none")
		}
		if err := checkEmail(next.Address); err != nil {
			return next, err
		}
	default:
		if _, err := s.notify.Guard.CheckURL(ctx, next.Address); err != nil {
			if errors.Is(err, notify.ErrBlocked) {
				return next, badInput("address: %v", err)
			}
			return next, err
		}
	}
	if next.Channel == db.ChannelWebhook && (next.Secret == "" || u.RotateSecret) {
		next.Secret = notify.NewSecret()
	}
	return next, nil
}

// addressHint says what address a channel takes.
func addressHint(channel string) string {
	switch channel {
	case db.ChannelEmail:
		return "give your email address"
	case db.ChannelSlack:
		return "give a Slack incoming-webhook URL (https://hooks.slack.com/services/...)"
	case db.ChannelTeams:
		return "give a Microsoft Teams incoming-webhook or workflow URL"
	}
	return "give the https:// URL ctalk should POST signed JSON to"
}

// checkEmail accepts a plain address such as amy@example.com.
func checkEmail(addr string) error {
	a, err := mail.ParseAddress(addr)
	_, domain, _ := strings.Cut(addr, "@")
	if err != nil || a.Address != addr || len(addr) > maxEmailLen || !strings.Contains(domain, ".") {
		return badInput("address %s is not an email address: write it plainly, such as amy@example.com", quoteShort(addr))
	}
	return nil
}

// parseQuiet reads quiet hours: both times, or both empty for none.
func parseQuiet(start, end string) (int, int, error) {
	if start == "" && end == "" {
		return 0, 0, nil
	}
	if start == "" || end == "" {
		return 0, 0, badInput("quiet hours need both quiet_start and quiet_end (HH:MM), or both empty for none")
	}
	s, err := notify.ParseClock(start)
	if err != nil {
		return 0, 0, badInput("quiet_start: %v", err)
	}
	e, err := notify.ParseClock(end)
	if err != nil {
		return 0, 0, badInput("quiet_end: %v", err)
	}
	if s == e {
		return 0, 0, badInput("quiet_start and quiet_end are both %s: give two different times, or both empty for no quiet hours", start)
	}
	return s, e, nil
}

// FormatQuiet writes stored quiet hours as "HH:MM" times, or two empty strings for none.
func FormatQuiet(start, end int) (string, string) {
	if start == end {
		return "", ""
	}
	return notify.FormatClock(start), notify.FormatClock(end)
}

// notifyDetail describes settings for the audit log: the channel and
// choices, never the address or secret.
func notifyDetail(st db.NotificationSettings) string {
	if st.Channel == db.ChannelNone {
		return "channel none"
	}
	onOff := map[bool]string{true: "on", false: "off"}
	d := fmt.Sprintf("channel %s; questions %s, answers %s", st.Channel, onOff[st.OnQuestions], onOff[st.OnAnswers])
	if st.DelaySeconds > 0 {
		d += fmt.Sprintf("; delay %d min", st.DelaySeconds/60)
	}
	if st.QuietStart != st.QuietEnd {
		start, end := FormatQuiet(st.QuietStart, st.QuietEnd)
		d += fmt.Sprintf("; quiet %s-%s %s", start, end, st.TimeZone)
	}
	return d
}

// loadNotify reads a person's settings, or the defaults (saved false).
func loadNotify(ctx context.Context, q db.Queries, u db.User) (db.NotificationSettings, bool, error) {
	st, err := q.GetNotificationSettings(ctx, u.OrgID, u.ID)
	if errors.Is(err, db.ErrNotFound) {
		return defaultNotify(u.OrgID, u.ID), false, nil
	}
	return st, err == nil, err
}

// pausedNotice is what check_inbox tells a person whose notifications are
// paused (the endpoint kept failing), and the settings page's notice; both
// "" while they are not paused. The agent is where they look when the chat
// or mail that failed is silent.
func pausedNotice(ctx context.Context, q db.Queries, u db.User) (agent, page string, err error) {
	st, err := q.GetNotificationSettings(ctx, u.OrgID, u.ID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && st.PausedAt == nil) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return fmt.Sprintf("Your %s notifications are paused since %s: %s. Tell the user: nothing reaches them outside "+
			"their agent until they fix the address and save their settings again (notification_settings, or "+
			"Settings in the web app), which resumes them.", st.Channel, st.PausedAt.UTC().Format("2 Jan 2006 15:04 UTC"), st.PauseReason),
		pausedPageNotice(st.PauseReason), nil
}

// pausedPageNotice is the settings' notice for a pause.
func pausedPageNotice(reason string) string {
	return "Notifications are paused: " + reason + ". Fix the address if needed and save your settings to resume them."
}

// orgExcerpts reads whether the organization lets notifications carry excerpts.
func orgExcerpts(ctx context.Context, q db.Queries, orgID string) (bool, error) {
	o, err := q.GetOrgNotificationSettings(ctx, orgID)
	if errors.Is(err, db.ErrNotFound) {
		return false, nil
	}
	return o.Excerpts, err
}

// notifyView renders stored settings for their owner.
func (s *Service) notifyView(st db.NotificationSettings, saved, excerpts bool) NotificationSettings {
	out := NotificationSettings{Channel: st.Channel, Address: st.Address, OnQuestions: st.OnQuestions, OnAnswers: st.OnAnswers,
		DelayMinutes: st.DelaySeconds / 60, TimeZone: st.TimeZone, PausedAt: st.PausedAt, PauseReason: st.PauseReason,
		Failures: st.Failures, Excerpts: excerpts, EmailAvailable: s.notify.EmailEnabled, Saved: saved}
	out.QuietStart, out.QuietEnd = FormatQuiet(st.QuietStart, st.QuietEnd)
	if st.Channel == db.ChannelWebhook {
		out.Secret = st.Secret
	}
	if st.PausedAt != nil {
		out.Notice = pausedPageNotice(st.PauseReason)
	}
	return out
}

// OrgNotificationSettings returns the organization's notification policy, to an admin.
func (s *Service) OrgNotificationSettings(ctx context.Context, a Admin) (OrgNotificationSettings, error) {
	var out OrgNotificationSettings
	err := s.store.View(ctx, func(q db.Queries) error {
		auth, err := s.viewAdmin(ctx, q, a)
		if err != nil {
			return err
		}
		o, err := q.GetOrgNotificationSettings(ctx, auth.org.ID)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		out = OrgNotificationSettings{Excerpts: o.Excerpts, UpdatedAt: &o.UpdatedAt}
		return err
	})
	return out, err
}

// SetOrgExcerpts turns the organization's notification excerpts on or off.
func (s *Service) SetOrgExcerpts(ctx context.Context, a Admin, on bool) (OrgNotificationSettings, error) {
	if a.Session == nil {
		// The admin password's check is a hash: take a place in its queue.
		var release func()
		var err error
		if ctx, release, err = s.passwordTurn(ctx); err != nil {
			return OrgNotificationSettings{}, err
		}
		defer release()
	}
	auth, err := s.adminCheck(ctx, a)
	if err != nil {
		return OrgNotificationSettings{}, err
	}
	now := s.clock()
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, auth); err != nil {
			return err
		}
		before, err := orgExcerpts(ctx, q, auth.org.ID)
		if err != nil {
			return err
		}
		if err := q.SaveOrgNotificationSettings(ctx, db.OrgNotificationSettings{OrgID: auth.org.ID, Excerpts: on, UpdatedAt: now}); err != nil {
			return err
		}
		if before == on {
			return nil
		}
		detail := "excerpts off: notifications carry no question or answer text"
		if on {
			detail = "excerpts on: notifications carry a short excerpt"
		}
		return s.audit(ctx, q, auth.org.ID, auth.actorID(), AuditNotifyExcerpts, "", detail)
	})
	if err != nil {
		return OrgNotificationSettings{}, err
	}
	return OrgNotificationSettings{Excerpts: on, UpdatedAt: &now}, nil
}

// ListFailedNotifications returns the organization's failed deliveries,
// newest first, from the one before beforeID (0: the newest), to an admin.
func (s *Service) ListFailedNotifications(ctx context.Context, a Admin, beforeID int64) (FailedNotificationsPage, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	var out FailedNotificationsPage
	err := s.store.View(ctx, func(q db.Queries) error {
		auth, err := s.viewAdmin(ctx, q, a)
		if err != nil {
			return err
		}
		rows, err := q.ListFailedNotifications(ctx, auth.org.ID, beforeID, failedPage+1)
		if err != nil {
			return err
		}
		if len(rows) > failedPage {
			rows = rows[:failedPage]
			out.NextBefore = rows[len(rows)-1].ID
		}
		out.Failed = make([]FailedNotification, 0, len(rows))
		for _, r := range rows {
			out.Failed = append(out.Failed, FailedNotification{ID: r.ID, UserID: r.UserID, UserName: r.UserName, Kind: r.Kind,
				MessageID: r.MessageID, ThreadID: r.ThreadID, Channel: r.Channel, CreatedAt: r.CreatedAt, FailedAt: r.FailedAt,
				Attempts: r.Attempts, LastError: r.LastError})
		}
		return nil
	})
	return out, err
}
