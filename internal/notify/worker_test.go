package notify_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/internal/testkit"
)

// t0 is the fixtures' clock: UTC with microseconds, as both backends store times.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// clock is a test clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(t0.UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// startSMTP runs a real SMTP server offering STARTTLS and returns it with
// the SMTP configuration that trusts it.
func startSMTP(t *testing.T) (*testkit.SMTPServer, *notify.SMTP) {
	t.Helper()
	srv := testkit.StartSMTP(t)
	cfg, err := notify.ParseSMTP("smtp://"+srv.Addr, "ctalk <ctalk@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = &tls.Config{RootCAs: srv.Roots, ServerName: "127.0.0.1"}
	return srv, cfg
}

// startReceiver is a webhook receiver answering 500 to the requests fail
// picks (by number, from 1).
func startReceiver(t *testing.T, fail func(n int) bool) *testkit.Receiver {
	return testkit.StartReceiver(t, func(n int, _ *http.Request) int {
		if fail != nil && fail(n) {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
}

// --- data ---

// team creates organization orgID with people; who asks whom is up to the test.
func team(t testing.TB, s db.Store, orgID string, people ...string) {
	t.Helper()
	err := s.InTx(t.Context(), func(q db.Queries) error {
		if err := q.CreateOrganization(t.Context(), db.Organization{ID: orgID, Name: "Org " + orgID, AdminPasswordHash: "x", CreatedAt: t0}); err != nil {
			return err
		}
		for _, p := range people {
			if err := q.CreateUser(t.Context(), db.User{OrgID: orgID, ID: p, Name: "Name " + p, PasswordHash: "x", CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func settings(t testing.TB, s db.Store, st db.NotificationSettings) {
	t.Helper()
	if st.TimeZone == "" {
		st.TimeZone = "UTC"
	}
	st.UpdatedAt = t0
	if err := s.InTx(t.Context(), func(q db.Queries) error { return q.SaveNotificationSettings(t.Context(), st) }); err != nil {
		t.Fatal(err)
	}
}

func ask(t *testing.T, s db.Store, orgID, from, to, question string, at time.Time) db.Message {
	t.Helper()
	m := db.Message{OrgID: orgID, FromUserID: from, ToUserID: to, Question: question, AskedAt: at}
	err := s.InTx(t.Context(), func(q db.Queries) (err error) {
		if m.ID, m.AskedSeq, err = q.AllocateMessage(t.Context(), orgID); err != nil {
			return err
		}
		m.ThreadID = m.ID
		if err := q.CreateMessage(t.Context(), m); err != nil {
			return err
		}
		return q.NotifyEvent(t.Context(), orgID, to, m.AskedSeq)
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func answer(t *testing.T, s db.Store, m db.Message, text string, at time.Time) {
	t.Helper()
	err := s.InTx(t.Context(), func(q db.Queries) error {
		seq, err := q.AllocateEvent(t.Context(), m.OrgID)
		if err != nil {
			return err
		}
		return q.AnswerMessage(t.Context(), m.OrgID, m.ID, text, at, seq, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pending counts the unfinished notifications.
func pending(t *testing.T, s db.Store) int64 {
	t.Helper()
	var n int64
	if err := s.View(t.Context(), func(q db.Queries) (err error) { n, err = q.CountPendingNotifications(t.Context()); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

func drain(t *testing.T, w *notify.Worker) {
	t.Helper()
	if _, err := w.Drain(t.Context()); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// bobOnSlack is organization acme where bob is told of questions on a
// Slack-style receiver (fail as startReceiver's), his settings changed by
// edit when not nil.
func bobOnSlack(t *testing.T, s db.Store, fail func(int) bool, edit func(*db.NotificationSettings)) *testkit.Receiver {
	t.Helper()
	rcv := startReceiver(t, fail)
	team(t, s, "acme", "amy", "bob")
	st := db.NotificationSettings{OrgID: "acme", UserID: "bob", Channel: db.ChannelSlack, Address: rcv.URL, OnQuestions: true}
	if edit != nil {
		edit(&st)
	}
	settings(t, s, st)
	return rcv
}

// local is the guard for tests' receivers on 127.0.0.1.
var local = notify.Guard{AllowPrivate: true}

// TestDeliversEmailAndWebhook: one question to a person who wants email
// and one to a person with a generic webhook produce exactly one email
// (through STARTTLS, its Message-ID naming the notification) and one
// webhook whose signature verifies with the person's secret; neither holds
// the question's text while the organization allows no excerpts; an answer
// reaches the asker who wants answers, with an excerpt once allowed.
func TestDeliversEmailAndWebhook(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		box, smtpCfg := startSMTP(t)
		rcv := startReceiver(t, nil)
		team(t, s, "acme", "amy", "bob", "cal")
		settings(t, s, db.NotificationSettings{OrgID: "acme", UserID: "bob", Channel: db.ChannelEmail, Address: "bob@example.com", OnQuestions: true})
		secret := notify.NewSecret()
		settings(t, s, db.NotificationSettings{OrgID: "acme", UserID: "cal", Channel: db.ChannelWebhook, Address: rcv.URL + "/hook?token=url-secret",
			Secret: secret, OnQuestions: true})
		settings(t, s, db.NotificationSettings{OrgID: "acme", UserID: "amy", Channel: db.ChannelWebhook, Address: rcv.URL + "/amy",
			Secret: secret, OnAnswers: true})
		c := newClock()
		w := notify.NewWorker(notify.Config{Store: s, SMTP: smtpCfg, Guard: local, PublicURL: "https://ctalk.example.com/", Now: c.now})

		toBob := ask(t, s, "acme", "amy", "bob", "Where is the secret runbook?", t0)
		toCal := ask(t, s, "acme", "amy", "cal", "Is the secret deploy on?", t0)
		drain(t, w)
		drain(t, w) // nothing left: nothing sent twice

		mails := box.Mails()
		if len(mails) != 1 || mails[0].To != "bob@example.com" || mails[0].From != "ctalk@example.com" {
			t.Fatalf("emails = %+v, want one to bob", mails)
		}
		msg, err := mail.ReadMessage(bytes.NewReader(mails[0].Data))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(msg.Body)
		if got := msg.Header.Get("Subject"); got != "ctalk: Name amy asked you a question" {
			t.Errorf("Subject = %q", got)
		}
		if got := msg.Header.Get("Message-Id"); !strings.HasPrefix(got, "<ctalk-notification-") || !strings.HasSuffix(got, "@example.com>") {
			t.Errorf("Message-ID = %q, want the notification's", got)
		}
		link := fmt.Sprintf("https://ctalk.example.com/app/thread/%d", toBob.ID)
		if !strings.Contains(string(body), "Name amy (amy) asked you a question in ctalk") || !strings.Contains(string(body), link) {
			t.Errorf("email body lacks who asked or the link %s:\n%s", link, body)
		}
		hits := rcv.Hits()
		if len(hits) != 1 {
			t.Fatalf("webhook requests = %d, want 1", len(hits))
		}
		if err := notify.Verify([]byte(secret), hits[0].Signature, hits[0].Body, time.Now(), 100*24*time.Hour); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		var ev notify.Event
		if err := json.Unmarshal(hits[0].Body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ID != hits[0].ID || ev.Type != "question.asked" || ev.OrgID != "acme" || ev.MessageID != toCal.ID || ev.ThreadID != toCal.ThreadID ||
			ev.From != (notify.EventPerson{UserID: "amy", Name: "Name amy"}) || ev.Excerpt != nil || ev.URL == nil || !ev.CreatedAt.Equal(t0) {
			t.Errorf("webhook event = %+v (id header %q)", ev, hits[0].ID)
		}
		for _, leak := range []string{"secret runbook", "secret deploy", "url-secret"} {
			if bytes.Contains(mails[0].Data, []byte(leak)) || bytes.Contains(hits[0].Body, []byte(leak)) {
				t.Errorf("a notification holds %q with excerpts off", leak)
			}
		}

		// Excerpts on: the answer's text, shortened, reaches the asker.
		if err := s.InTx(t.Context(), func(q db.Queries) error {
			return q.SaveOrgNotificationSettings(t.Context(), db.OrgNotificationSettings{OrgID: "acme", Excerpts: true, UpdatedAt: t0})
		}); err != nil {
			t.Fatal(err)
		}
		answer(t, s, toCal, "Yes, "+strings.Repeat("deploying ", 40), t0.Add(time.Minute))
		c.add(time.Minute)
		drain(t, w)
		hits = rcv.Hits()
		if len(hits) != 2 {
			t.Fatalf("webhook requests = %d, want 2", len(hits))
		}
		if err := json.Unmarshal(hits[1].Body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "answer.received" || ev.From.UserID != "cal" || ev.Excerpt == nil || !strings.HasPrefix(*ev.Excerpt, "Yes, deploying") ||
			len([]rune(*ev.Excerpt)) != notify.ExcerptRunes || !strings.HasSuffix(*ev.Excerpt, "…") {
			t.Errorf("answer event = %+v", ev)
		}
		if n := pending(t, s); n != 0 {
			t.Errorf("pending = %d, want 0", n)
		}
	})
}

// TestRetriesUntilRecovered: a receiver failing three times then
// recovering gets the notification exactly once by id (four requests, the
// same id each time), and the endpoint's failure count goes back to 0.
func TestRetriesUntilRecovered(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		rcv := bobOnSlack(t, s, func(n int) bool { return n <= 3 }, nil)
		c := newClock()
		m := metrics.New("test")
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Now: c.now, BackoffBase: time.Second, BackoffCap: time.Minute, Metrics: m})
		ask(t, s, "acme", "amy", "bob", "q", t0)
		for range 10 {
			drain(t, w)
			c.add(time.Minute) // past any backoff
		}
		hits := rcv.Hits()
		if len(hits) != 4 || hits[0].ID == "" || hits[3].ID != hits[0].ID {
			t.Fatalf("requests = %+v, want 4 with one id", hits)
		}
		if got := rcv.Delivered(); len(got) != 1 || got[hits[0].ID] != 1 {
			t.Errorf("delivered = %v, want the id once", got)
		}
		var st db.NotificationSettings
		s.View(t.Context(), func(q db.Queries) (err error) {
			st, err = q.GetNotificationSettings(t.Context(), "acme", "bob")
			return err
		})
		if st.Failures != 0 || st.PausedAt != nil {
			t.Errorf("settings after recovering = %+v", st)
		}
		got := map[string]float64{}
		families, _ := m.Gatherer().Gather()
		for _, f := range families {
			for _, mt := range f.GetMetric() {
				labels := ""
				for _, l := range mt.GetLabel() {
					labels += l.GetName() + "=" + l.GetValue() + " "
				}
				switch f.GetName() {
				case "ctalk_notification_deliveries_total":
					got[labels] = mt.GetCounter().GetValue()
				case "ctalk_notifications_pending":
					got["pending"] = mt.GetGauge().GetValue()
				}
			}
		}
		if got["channel=slack outcome=retry "] != 3 || got["channel=slack outcome=sent "] != 1 || got["pending"] != 0 {
			t.Errorf("metrics = %v; want 3 retries, 1 sent, 0 pending", got)
		}
		var text struct{ Text string }
		json.Unmarshal(hits[3].Body, &text)
		if !strings.HasPrefix(text.Text, "Name amy (amy) asked you a question in ctalk.") {
			t.Errorf("slack text = %q", text.Text)
		}
	})
}

// TestGivesUpAndPauses: a receiver that always fails: each notification is
// given up after MaxAttempts with its last error (no URL path or query in
// it), the endpoint is paused after PauseAfter failures in a row, and a
// notification of a paused endpoint is skipped without a request.
func TestGivesUpAndPauses(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		rcv := bobOnSlack(t, s, func(int) bool { return true }, func(st *db.NotificationSettings) {
			st.Channel, st.Address = db.ChannelTeams, st.Address+"/wf?sig=url-secret"
		})
		c := newClock()
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Now: c.now, MaxAttempts: 2, PauseAfter: 3,
			BackoffBase: time.Second, BackoffCap: time.Second})
		ask(t, s, "acme", "amy", "bob", "one", t0)
		for range 3 {
			drain(t, w)
			c.add(time.Minute)
		}
		ask(t, s, "acme", "amy", "bob", "two", c.now())
		for range 3 {
			drain(t, w)
			c.add(time.Minute)
		}
		// one: 2 attempts, failed; two: 1 attempt, then the pause (3 in a
		// row), then skipped at its second claim.
		if n := len(rcv.Hits()); n != 3 {
			t.Errorf("requests = %d, want 3", n)
		}
		var failed []db.FailedNotification
		var st db.NotificationSettings
		s.View(t.Context(), func(q db.Queries) (err error) {
			if failed, err = q.ListFailedNotifications(t.Context(), "acme", 1<<62, 10); err != nil {
				return err
			}
			st, err = q.GetNotificationSettings(t.Context(), "acme", "bob")
			return err
		})
		host := strings.TrimPrefix(rcv.URL, "http://")
		if len(failed) != 1 || failed[0].Attempts != 2 || failed[0].LastError != "HTTP 500 from "+host {
			t.Errorf("failed = %+v", failed)
		}
		if st.PausedAt == nil || st.PauseReason != "3 deliveries in a row failed (last: HTTP 500 from "+host+")" {
			t.Errorf("settings = %+v, want paused", st)
		}
		if n := pending(t, s); n != 0 {
			t.Errorf("pending = %d, want 0 (the second skipped)", n)
		}
		var teams struct {
			Type        string
			Attachments []struct{ ContentType string }
		}
		if err := json.Unmarshal(rcv.Hits()[0].Body, &teams); err != nil || teams.Type != "message" || len(teams.Attachments) != 1 ||
			teams.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
			t.Errorf("teams body = %s", rcv.Hits()[0].Body)
		}
	})
}

// TestDigestDelay: a question answered within its recipient's delay is
// suppressed (nothing sent); one still unanswered when the delay ends is
// sent then, not before.
func TestDigestDelay(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		rcv := bobOnSlack(t, s, nil, func(st *db.NotificationSettings) { st.DelaySeconds = 15 * 60 })
		c := newClock()
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Now: c.now})
		quick := ask(t, s, "acme", "amy", "bob", "answered from Claude Code", t0)
		ask(t, s, "acme", "amy", "bob", "still waiting", t0)
		c.add(5 * time.Minute)
		answer(t, s, quick, "done", c.now())
		drain(t, w)
		if n := len(rcv.Hits()); n != 0 {
			t.Fatalf("%d requests within the delay, want none", n)
		}
		c.add(10*time.Minute + time.Second)
		drain(t, w)
		if n := len(rcv.Hits()); n != 1 {
			t.Fatalf("%d requests after the delay, want 1 (the unanswered question)", n)
		}
		if n := pending(t, s); n != 0 {
			t.Errorf("pending = %d, want 0 (one sent, one suppressed)", n)
		}
		// Finished notifications go after Keep (30 days), not before.
		c.add(29 * 24 * time.Hour)
		if n, err := w.Prune(t.Context()); n != 0 || err != nil {
			t.Errorf("Prune after 29 days = %d, %v; want 0", n, err)
		}
		c.add(2 * 24 * time.Hour)
		if n, err := w.Prune(t.Context()); n != 2 || err != nil {
			t.Errorf("Prune after 31 days = %d, %v; want 2", n, err)
		}
	})
}

// TestQuietHours: a notification due in quiet hours waits for their end.
func TestQuietHours(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		// 10:00 UTC is 11:00 in Berlin: quiet from 10:30 to 12:15 there.
		rcv := bobOnSlack(t, s, nil, func(st *db.NotificationSettings) {
			st.QuietStart, st.QuietEnd, st.TimeZone = 10*60+30, 12*60+15, "Europe/Berlin"
		})
		c := newClock()
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Now: c.now})
		ask(t, s, "acme", "amy", "bob", "q", t0)
		drain(t, w)
		c.add(time.Hour + 14*time.Minute) // 12:14 in Berlin
		drain(t, w)
		if n := len(rcv.Hits()); n != 0 {
			t.Fatalf("%d requests in quiet hours, want none", n)
		}
		c.add(time.Minute)
		drain(t, w)
		if n := len(rcv.Hits()); n != 1 {
			t.Fatalf("%d requests after quiet hours, want 1", n)
		}
	})
}

// TestNoPacketToPrivateAddress: a webhook stored for 127.0.0.1 (as if saved
// before the guard, or by an operator who allowed it and then stopped) is
// refused at connect time: the listener sees no connection, and the error
// says why.
func TestNoPacketToPrivateAddress(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				c.Close()
			}
		}()
		t.Cleanup(func() { ln.Close() })
		team(t, s, "acme", "amy", "bob")
		settings(t, s, db.NotificationSettings{OrgID: "acme", UserID: "bob", Channel: db.ChannelWebhook, Address: "http://" + ln.Addr().String() + "/h",
			Secret: "whsec_x", OnQuestions: true})
		c := newClock()
		w := notify.NewWorker(notify.Config{Store: s, Now: c.now, MaxAttempts: 1}) // the default guard
		ask(t, s, "acme", "amy", "bob", "q", t0)
		drain(t, w)
		var failed []db.FailedNotification
		s.View(t.Context(), func(q db.Queries) (err error) {
			failed, err = q.ListFailedNotifications(t.Context(), "acme", 1<<62, 10)
			return err
		})
		if len(failed) != 1 || !strings.Contains(failed[0].LastError, "refused") || !strings.Contains(failed[0].LastError, "CTALK_WEBHOOK_ALLOW_PRIVATE") {
			t.Errorf("failed = %+v; want the guard's refusal", failed)
		}
		if n := conns.Load(); n != 0 {
			t.Errorf("%d connections reached the private listener", n)
		}
	})
}

// TestTwoWorkersOnePostgres: two replicas (two stores, two workers) on one
// PostgreSQL schema deliver each of many notifications once.
func TestTwoWorkersOnePostgres(t *testing.T) {
	t.Parallel()
	url, _ := dbtest.NewPostgresSchema(t)
	a := dbtest.Open(t, db.Config{DatabaseURL: url})
	b := dbtest.Open(t, db.Config{DatabaseURL: url})
	rcv := startReceiver(t, nil)
	team(t, a, "acme", "amy", "bob")
	settings(t, a, db.NotificationSettings{OrgID: "acme", UserID: "bob", Channel: db.ChannelSlack, Address: rcv.URL, OnQuestions: true})
	const n = 400
	for i := range n {
		ask(t, a, "acme", "amy", "bob", fmt.Sprint("q", i), t0)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, s := range []db.Store{a, b} {
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Batch: 8, Concurrency: 4})
		wg.Go(func() { w.Run(ctx) })
	}
	deadline := time.Now().Add(time.Minute)
	for pending(t, a) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	got := rcv.Delivered()
	if len(got) != n {
		t.Errorf("%d distinct notifications delivered, want %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("%s delivered %d times", id, k)
		}
	}
}

// TestWorkerWakesOnEvents: a running worker delivers a new question at
// once (woken by the commit, not a poll: its safety poll is an hour).
func TestWorkerWakesOnEvents(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		rcv := bobOnSlack(t, s, nil, nil)
		w := notify.NewWorker(notify.Config{Store: s, Guard: local, Idle: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(100 * time.Millisecond) // the first round found nothing; now it sleeps
		ask(t, s, "acme", "amy", "bob", "q", time.Now().UTC().Truncate(time.Microsecond))
		deadline := time.Now().Add(30 * time.Second)
		for len(rcv.Hits()) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if len(rcv.Hits()) != 1 {
			t.Fatal("the worker did not deliver a new question without a poll")
		}
	})
}

// TestParseSMTP: the URL forms, and refusals that say what to write.
func TestParseSMTP(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url, from string
		want      string // String(), or the error's text
	}{
		{"", "", ""},
		{"smtp://u:p@mail.example.com", "ctalk@example.com", "mail.example.com:587 (STARTTLS)"},
		{"smtps://u:p@mail.example.com", "ctalk@example.com", "mail.example.com:465 (TLS)"},
		{"smtp://127.0.0.1:25?tls=none", "ctalk <ctalk@example.com>", "127.0.0.1:25 (no TLS)"},
		{"smtp://u:p@127.0.0.1:25?tls=none", "ctalk@example.com", "sends a password without TLS"},
		{"smtps://h?tls=none", "ctalk@example.com", "smtps and tls=none at once"},
		{"smtp://h?tls=maybe", "ctalk@example.com", `tls="maybe"`},
		{"smtp://h?debug=1", "ctalk@example.com", `unknown option "debug"`},
		{"http://h", "ctalk@example.com", `scheme "http"`},
		{"smtp://h:99999", "ctalk@example.com", "bad port"},
		{"smtp://h", "", "CTALK_SMTP_FROM is not set"},
		{"smtp://h", "not an address", "is not an email address"},
	} {
		s, err := notify.ParseSMTP(tt.url, tt.from)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
			if strings.Contains(got, ":p@") {
				t.Errorf("ParseSMTP(%q) error shows the password: %v", tt.url, err)
			}
		case s != nil:
			got = s.String()
		}
		if !strings.Contains(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("ParseSMTP(%q, %q) = %q, want %q", tt.url, tt.from, got, tt.want)
		}
	}
}

// TestQuietUntil covers quiet hours within a day, across midnight, and none.
func TestQuietUntil(t *testing.T) {
	t.Parallel()
	at := func(h, m int) time.Time { return time.Date(2026, 11, 30, h, m, 0, 0, time.UTC) }
	for _, tt := range []struct {
		now        time.Time
		start, end int
		want       time.Time // zero: not quiet
	}{
		{at(23, 0), 22 * 60, 7 * 60, time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)},
		{at(3, 0), 22 * 60, 7 * 60, at(7, 0)},
		{at(7, 0), 22 * 60, 7 * 60, time.Time{}},
		{at(12, 0), 9 * 60, 17 * 60, at(17, 0)},
		{at(18, 0), 9 * 60, 17 * 60, time.Time{}},
		{at(12, 0), 0, 0, time.Time{}},
	} {
		got, ok := notify.QuietUntil(tt.now, tt.start, tt.end, time.UTC)
		if ok != !tt.want.IsZero() || !got.Equal(tt.want) {
			t.Errorf("QuietUntil(%v, %d, %d) = %v, %v; want %v", tt.now, tt.start, tt.end, got, ok, tt.want)
		}
	}
	if _, err := notify.ParseClock("7:05"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "7", "24:00", "07:60", "7:5", "ab:cd"} {
		if _, err := notify.ParseClock(bad); err == nil {
			t.Errorf("ParseClock(%q) accepted", bad)
		}
	}
	if got := notify.Excerpt("  a\n\tb  \x00c ", 10); got != "a b c" {
		t.Errorf("Excerpt = %q", got)
	}
}
