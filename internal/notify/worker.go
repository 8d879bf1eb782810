package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/metrics"
)

// The delivery worker. Every `ctalk serve` replica runs one. It claims due
// outbox rows with a lease (on PostgreSQL skipping rows another replica
// holds), delivers them with bounded concurrency, and marks each one
// finished once (delivered_at is set only while it is NULL): delivery is
// at least once, and the notification's id (Ctalk-Webhook-Id, the email's
// Message-ID) lets a receiver drop the rare repeat, such as a delivery
// whose worker died after sending and before marking it.
//
// It sleeps until the next row comes due or an event commits (the store's
// wake-ups, from any replica), so an idle server does no work, with a
// slow safety poll for wake-ups lost on the way.

// Config configures a Worker. Zero fields take the defaults below.
type Config struct {
	Store db.Store
	// PublicURL is CTALK_PUBLIC_URL: notifications link to the conversation
	// under it ("" : no link).
	PublicURL string
	// SMTP sends email (nil: email deliveries fail with a message saying so).
	SMTP *SMTP
	// Guard checks every webhook connection and redirect.
	Guard Guard
	// Concurrency bounds deliveries in flight (default 8); Batch is how
	// many rows one claim takes (default 4 × Concurrency).
	Concurrency int
	Batch       int
	// Lease is how long a claimed row is this worker's (default 2 min):
	// a worker that dies leaves its rows due again after it.
	Lease time.Duration
	// Timeout bounds one webhook delivery (default 10 s).
	Timeout time.Duration
	// BackoffBase and BackoffCap shape retries: the n-th failed attempt
	// waits BackoffBase × 2^(n-1), at most BackoffCap, less up to half at
	// random (defaults 30 s and 1 h).
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxAttempts is when a notification is given up as failed (default 8).
	MaxAttempts int
	// PauseAfter consecutive failed attempts to one person's endpoint
	// pause it until they save their settings (default 10).
	PauseAfter int
	// Idle is the safety poll (default 1 min).
	Idle time.Duration
	// Keep is how long finished notifications stay (the admins' failed
	// list, a receiver's questions) before the hourly prune deletes them
	// (default 30 days).
	Keep time.Duration
	// Now is the clock (default time.Now).
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// Worker delivers the outbox of one store.
type Worker struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
}

// NewWorker returns a worker; Run starts it.
func NewWorker(cfg Config) *Worker {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 4 * cfg.Concurrency
	}
	def(&cfg.Lease, 2*time.Minute)
	def(&cfg.Timeout, 10*time.Second)
	def(&cfg.BackoffBase, 30*time.Second)
	def(&cfg.BackoffCap, time.Hour)
	def(&cfg.Idle, time.Minute)
	def(&cfg.Keep, 30*24*time.Hour)
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.PauseAfter <= 0 {
		cfg.PauseAfter = 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Worker{cfg: cfg, client: cfg.Guard.Client(cfg.Timeout), log: cfg.Logger}
	cfg.Metrics.WatchNotifications(w.pending)
	return w
}

// pending counts the unfinished notifications, for the metrics.
func (w *Worker) pending() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int64
	_ = w.cfg.Store.View(ctx, func(q db.Queries) (err error) {
		n, err = q.CountPendingNotifications(ctx)
		return err
	})
	return n
}

func (w *Worker) now() time.Time { return w.cfg.Now().UTC().Truncate(time.Microsecond) }

// Run delivers until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	wake, cancel := w.cfg.Store.Subscribe(ctx, "", "")
	defer cancel()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			// Most events queue nothing (people without notifications):
			// a read says whether a claim, a write, is worth it, and
			// wake-ups under load coalesce over a few milliseconds.
			time.Sleep(wakeDebounce)
			if d := w.sleep(ctx); d > 0 {
				timer.Reset(d) // a new row may come due before the timer
				continue
			}
		case <-timer.C:
		}
		floor := wakeDebounce
		if _, err := w.Drain(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("notifications: delivery round failed", "err", err)
			floor = time.Second // not a hot loop while the database refuses
		}
		if time.Since(pruned) >= time.Hour {
			pruned = time.Now()
			if n, err := w.Prune(ctx); err != nil && ctx.Err() == nil {
				w.log.Error("notifications: prune failed", "err", err)
			} else if n > 0 {
				w.log.Info("notifications: pruned finished notifications", "deleted", n)
			}
		}
		timer.Reset(max(w.sleep(ctx), floor))
	}
}

// pruneBatch is how many finished notifications one prune transaction deletes.
const pruneBatch = 1000

// Prune deletes the notifications finished more than Keep ago, a batch a
// transaction, and returns how many.
func (w *Worker) Prune(ctx context.Context) (int64, error) {
	cutoff := w.now().Add(-w.cfg.Keep)
	var total int64
	for {
		var n int64
		err := w.cfg.Store.InTx(ctx, func(q db.Queries) (err error) {
			n, err = q.PruneNotifications(ctx, cutoff, pruneBatch)
			return err
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// wakeDebounce is how long a wake-up waits for others to coalesce with.
const wakeDebounce = 5 * time.Millisecond

// sleep is how long to wait for the next due row (the safety poll at
// most; 0 when one is due now).
func (w *Worker) sleep(ctx context.Context) time.Duration {
	var next time.Time
	var ok bool
	err := w.cfg.Store.View(ctx, func(q db.Queries) (err error) {
		next, ok, err = q.NextNotificationDue(ctx)
		return err
	})
	switch {
	case err != nil:
		return time.Second // the database is away: look again soon
	case !ok:
		return w.cfg.Idle
	case !next.After(w.now()):
		return 0
	}
	return min(next.Sub(w.now())+5*time.Millisecond, w.cfg.Idle)
}

// Drain delivers due notifications until none is due, and returns how many
// it finished or retried.
func (w *Worker) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := w.RunOnce(ctx)
		total += n
		if err != nil || n < w.cfg.Batch {
			return total, err
		}
	}
}

// RunOnce claims one batch of due notifications, delivers it, and records
// the outcomes in one transaction; it returns how many it claimed. (A
// worker that dies between sending and recording leaves its batch to be
// sent again when the lease ends: at least once.)
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	now := w.now()
	var batch []db.NotificationDelivery
	err := w.cfg.Store.InTx(ctx, func(q db.Queries) (err error) {
		batch, err = q.ClaimNotifications(ctx, now, now.Add(w.cfg.Lease), w.cfg.Batch)
		return err
	})
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	results := make([]result, len(batch))
	sem := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, d := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = w.deliver(ctx, d)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return len(batch), nil // shutting down: what was sent goes again after the lease
	}
	return len(batch), w.record(ctx, results)
}

// result is what became of one claimed notification.
type result struct {
	d       db.NotificationDelivery
	outcome string    // an Outcome constant, "retry" or "postpone"
	err     string    // the failed attempt's error
	until   time.Time // postpone: when quiet hours end
}

// deliver handles one claimed notification: skips what is no longer
// wanted, suppresses a question answered within the delay, postpones past
// quiet hours, or sends it.
func (w *Worker) deliver(ctx context.Context, d db.NotificationDelivery) result {
	now := w.now()
	switch {
	case d.Channel == db.ChannelNone || d.PausedAt != nil ||
		(d.Kind == db.NotifyQuestion && !d.OnQuestions) || (d.Kind == db.NotifyAnswer && !d.OnAnswers):
		return result{d: d, outcome: db.OutcomeSkipped}
	case d.Kind == db.NotifyQuestion && d.AnsweredAt != nil:
		return result{d: d, outcome: db.OutcomeSuppressed}
	}
	if loc, err := time.LoadLocation(d.TimeZone); err == nil {
		if until, quiet := QuietUntil(now, int(d.QuietStart), int(d.QuietEnd), loc); quiet {
			return result{d: d, outcome: "postpone", until: until}
		}
	}
	if err := w.send(ctx, d, now); err != nil {
		r := result{d: d, outcome: "retry", err: shortError(err)}
		if int(d.Attempts) >= w.cfg.MaxAttempts {
			r.outcome = db.OutcomeFailed
		}
		return r
	}
	return result{d: d, outcome: db.OutcomeSent}
}

// send renders and sends one notification on its channel.
func (w *Worker) send(ctx context.Context, d db.NotificationDelivery, now time.Time) error {
	c := describe(d, w.cfg.PublicURL)
	if d.Channel == db.ChannelEmail {
		if w.cfg.SMTP == nil {
			return errors.New("email is not configured on this server (CTALK_SMTP_URL)")
		}
		return w.cfg.SMTP.send(ctx, d.Address, c)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	return post(ctx, w.client, d.Address, d.Channel, d.Secret, c, now)
}

// record stores a batch's outcomes in one transaction: each finished
// notification marked once, each failed attempt retried after its backoff
// and counted against its endpoint (paused after PauseAfter in a row), a
// delivery clearing that count.
func (w *Worker) record(ctx context.Context, results []result) error {
	now := w.now()
	err := w.cfg.Store.InTx(ctx, func(q db.Queries) error {
		for _, r := range results {
			if err := w.recordOne(ctx, q, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, r := range results {
			if r.outcome != "postpone" {
				w.cfg.Metrics.NotificationAttempt(r.d.Channel, r.outcome)
			}
		}
	}
	return err
}

func (w *Worker) recordOne(ctx context.Context, q db.Queries, r result, now time.Time) error {
	d := r.d
	switch r.outcome {
	case "postpone":
		return q.PostponeNotification(ctx, d.ID, r.until)
	case "retry":
		if err := q.RetryNotification(ctx, d.ID, now.Add(w.backoff(int(d.Attempts))), r.err); err != nil {
			return err
		}
	default:
		if _, err := q.FinishNotification(ctx, d.ID, r.outcome, r.err, now); err != nil {
			return err
		}
		if r.outcome == db.OutcomeSent {
			return q.NotificationDelivered(ctx, d.OrgID, d.UserID)
		}
		if r.outcome != db.OutcomeFailed {
			return nil
		}
	}
	n, err := q.NotificationFailed(ctx, d.OrgID, d.UserID)
	if err != nil || n < w.cfg.PauseAfter {
		return err
	}
	_, err = q.PauseNotifications(ctx, d.OrgID, d.UserID, now, fmt.Sprintf("%d deliveries in a row failed (last: %s)", n, r.err))
	return err
}

// backoff is the wait after the n-th failed attempt: exponential, capped,
// with jitter (between half and all of it) so retries spread out.
func (w *Worker) backoff(n int) time.Duration {
	d := w.cfg.BackoffBase
	for i := 1; i < n && d < w.cfg.BackoffCap; i++ {
		d *= 2
	}
	d = min(d, w.cfg.BackoffCap)
	return d/2 + rand.N(d/2+1)
}

// maxErrorLen bounds a stored error.
const maxErrorLen = 300

// shortError is an error as last_error stores it: one line, bounded.
func shortError(err error) string {
	s := Excerpt(err.Error(), maxErrorLen)
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
