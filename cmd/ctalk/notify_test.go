package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/mail"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
)

// notifyEnv is the environment of a `ctalk serve` that sends email through
// smtpSrv (STARTTLS, trusting its certificate) and webhooks to this
// machine, over cfg's database.
func notifyEnv(cfg db.Config, smtpSrv *testkit.SMTPServer, lease string) []string {
	e := []string{"CTALK_SMTP_URL=smtp://" + smtpSrv.Addr, "CTALK_SMTP_FROM=ctalk <ctalk@example.com>",
		"SSL_CERT_FILE=" + smtpSrv.CertFile, "CTALK_WEBHOOK_ALLOW_PRIVATE=1", "CTALK_NOTIFY_LEASE=" + lease}
	for k, v := range backendEnv(cfg) {
		e = append(e, k+"="+v)
	}
	return e
}

// eventually waits up to 30 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s", what)
		}
	}
}

// notifySettle gives a wrong second delivery the time to show up.
const notifySettle = 1500 * time.Millisecond

// TestNotificationsEndToEnd runs the real binary on each backend with a
// real SMTP server and a webhook receiver in the test process: people set
// their notifications with the notification_settings tool; a question
// produces exactly one email (through STARTTLS) and one webhook whose
// signature verifies; then ctalk is killed (SIGKILL) while a delivery is in
// flight, after the question committed, and once restarted it delivers
// that notification, once, by the same id.
func TestNotificationsEndToEnd(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "notify")
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		ctx := t.Context()
		smtpSrv := testkit.StartSMTP(t)
		rcv := testkit.StartReceiver(t, nil)
		hung := make(chan struct{}, 1)
		flaky := testkit.StartReceiver(t, func(n int, r *http.Request) int {
			if n == 1 { // hang until ctalk dies
				hung <- struct{}{}
				<-r.Context().Done()
				return 599
			}
			return http.StatusOK
		})
		env := notifyEnv(cfg, smtpSrv, "2s")
		p := startServe(t, bin, env...)
		conns := faultTeam(t, p.base, faultClient(), "amy", "bob", "cal", "dan")

		set := func(c *relayclient.Client, args map[string]any) map[string]any {
			t.Helper()
			var out map[string]any
			if err := c.Call(ctx, "notification_settings", args, &out); err != nil {
				t.Fatalf("notification_settings %v: %v", args, err)
			}
			return out
		}
		set(conns["bob"], map[string]any{"channel": "email", "address": "bob@example.com"})
		secret, _ := set(conns["cal"], map[string]any{"channel": "webhook", "address": rcv.URL + "/cal"})["webhook_secret"].(string)
		set(conns["dan"], map[string]any{"channel": "slack", "address": flaky.URL + "/dan"})
		if !strings.HasPrefix(secret, notify.SecretPrefix) {
			t.Fatalf("cal's webhook secret = %q", secret)
		}

		testkit.Ask(t, conns["amy"], "bob", "Where is the deploy runbook?")
		cal := testkit.Ask(t, conns["amy"], "cal", "Who owns billing?")
		eventually(t, "one email and one webhook", func() bool { return len(smtpSrv.Mails()) >= 1 && len(rcv.Hits()) >= 1 })
		time.Sleep(notifySettle)
		mails, hits := smtpSrv.Mails(), rcv.Hits()
		if len(mails) != 1 || mails[0].To != "bob@example.com" {
			t.Fatalf("emails = %d (%+v), want one to bob", len(mails), mails)
		}
		msg, err := mail.ReadMessage(bytes.NewReader(mails[0].Data))
		if err != nil || msg.Header.Get("Subject") != "ctalk: Amy asked you a question" {
			t.Errorf("email: %v, subject %q", err, msg.Header.Get("Subject"))
		}
		if len(hits) != 1 {
			t.Fatalf("webhook requests = %d, want 1", len(hits))
		}
		if err := notify.Verify([]byte(secret), hits[0].Signature, hits[0].Body, time.Now(), notify.DefaultTolerance); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		var ev notify.Event
		if err := json.Unmarshal(hits[0].Body, &ev); err != nil || ev.MessageID != cal || ev.Type != "question.asked" || ev.From.UserID != "amy" {
			t.Errorf("webhook event = %+v, %v", ev, err)
		}

		// Killed mid-delivery: the question is committed, its notification
		// claimed and in flight, not marked.
		testkit.Ask(t, conns["amy"], "dan", "Is the pager rotation set?")
		select {
		case <-hung:
		case <-time.After(30 * time.Second):
			t.Fatal("the delivery to dan never started")
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		p = startServe(t, bin, env...)
		eventually(t, "dan's notification after the restart", func() bool { return len(flaky.Delivered()) == 1 })
		time.Sleep(notifySettle)
		got := flaky.Hits()
		if len(got) != 2 || got[0].ID != got[1].ID || got[1].Status != http.StatusOK {
			t.Errorf("dan's receiver got %+v; want the hung request and one delivery, same id", got)
		}
		if n := len(smtpSrv.Mails()) + len(rcv.Hits()); n != 2 {
			t.Errorf("after the restart %d emails and webhooks in all, want the first 2 only", n)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
	})
}
