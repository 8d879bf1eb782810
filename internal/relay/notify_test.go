package relay

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/notify"
)

// fakeDNS resolves the test's host names without a network.
type fakeDNS map[string]string

func (r fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &netErr{host}
}

type netErr struct{ host string }

func (e *netErr) Error() string { return "no such host " + e.host }

// notifyFixture is a team (umar, john) whose server can send email and
// checks webhook URLs with fakeDNS.
func notifyFixture(t *testing.T, s db.Store) (*fixture, Credentials, Credentials) {
	f, umar, john := umarAndJohn(t, s)
	f.s.notify = NotifyOptions{EmailEnabled: true, Guard: notify.Guard{Resolver: fakeDNS{
		"hooks.example.com": "93.184.216.34", "inside.example.com": "10.1.2.3"}}}
	return f, umar, john
}

func ptrTo[T any](v T) *T { return &v }

// TestNotificationSettings: a person starts with nothing sent; each bad
// value is refused with a message that says what to write and changes
// nothing; a good update is stored, audited without its address or
// secret, and a generic webhook gets a secret shown only to its owner.
func TestNotificationSettings(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := notifyFixture(t, s)
		ctx := t.Context()
		st, err := f.s.NotificationSettings(ctx, umar)
		if err != nil || st.Channel != "none" || st.Saved || !st.OnQuestions || st.TimeZone != "UTC" || st.Excerpts || !st.EmailAvailable {
			t.Fatalf("NotificationSettings before saving = %+v, %v; want the defaults", st, err)
		}
		if _, err := f.s.NotificationSettings(ctx, Credentials{}); err == nil {
			t.Fatal("NotificationSettings without a token worked")
		}

		for _, tt := range []struct {
			name string
			u    NotificationUpdate
			want string
		}{
			{"unknown channel", NotificationUpdate{Channel: ptrTo("pager")}, "is not one of none, email, slack, teams, webhook"},
			{"email without address", NotificationUpdate{Channel: ptrTo("email")}, "needs an address: give your email address"},
			{"bad email", NotificationUpdate{Channel: ptrTo("email"), Address: ptrTo("umar at example")}, "is not an email address"},
			{"named email", NotificationUpdate{Channel: ptrTo("email"), Address: ptrTo("Umar <umar@example.com>")}, "write it plainly"},
			{"not a URL", NotificationUpdate{Channel: ptrTo("slack"), Address: ptrTo("hooks.example.com/x")}, "is not an absolute URL"},
			{"plain http", NotificationUpdate{Channel: ptrTo("slack"), Address: ptrTo("http://hooks.example.com/x")}, "must start with https://"},
			{"loopback", NotificationUpdate{Channel: ptrTo("webhook"), Address: ptrTo("https://127.0.0.1/hook")}, "private, loopback or reserved"},
			{"private", NotificationUpdate{Channel: ptrTo("teams"), Address: ptrTo("https://10.0.0.1/hook")}, "private, loopback or reserved"},
			{"resolves private", NotificationUpdate{Channel: ptrTo("webhook"), Address: ptrTo("https://inside.example.com/h")}, "resolves to 10.1.2.3"},
			{"unresolvable", NotificationUpdate{Channel: ptrTo("webhook"), Address: ptrTo("https://nowhere.example.com/h")}, "could not be resolved"},
			{"delay", NotificationUpdate{DelayMinutes: ptrTo(1441)}, "delay_minutes must be between 0 (at once) and 1440"},
			{"negative delay", NotificationUpdate{DelayMinutes: ptrTo(-1)}, "delay_minutes must be between"},
			{"quiet format", NotificationUpdate{QuietStart: ptrTo("10pm"), QuietEnd: ptrTo("07:00")}, "quiet_start: \"10pm\" is not a time of day: write it as HH:MM"},
			{"quiet hour", NotificationUpdate{QuietStart: ptrTo("22:00"), QuietEnd: ptrTo("24:00")}, "quiet_end:"},
			{"quiet half", NotificationUpdate{QuietStart: ptrTo("22:00")}, "need both quiet_start and quiet_end"},
			{"quiet equal", NotificationUpdate{QuietStart: ptrTo("22:00"), QuietEnd: ptrTo("22:00")}, "give two different times"},
			{"time zone", NotificationUpdate{TimeZone: ptrTo("Mars/Olympus")}, "is not an IANA time zone: write one such as Europe/Berlin"},
			{"nothing on", NotificationUpdate{Channel: ptrTo("email"), Address: ptrTo("umar@example.com"), OnQuestions: ptrTo(false),
				OnAnswers: ptrTo(false)}, "nothing would be sent"},
		} {
			_, err := f.s.UpdateNotificationSettings(ctx, umar, tt.u)
			wantKind(t, tt.name, err, KindBadInput)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, tt.want)
			}
		}
		if st, _ := f.s.NotificationSettings(ctx, umar); st.Saved {
			t.Fatalf("refused updates stored settings: %+v", st)
		}

		// Email is refused where the server cannot send it.
		f.s.notify.EmailEnabled = false
		_, err = f.s.UpdateNotificationSettings(ctx, umar, NotificationUpdate{Channel: ptrTo("email"), Address: ptrTo("umar@example.com")})
		wantKind(t, "email without SMTP", err, KindBadInput)
		if !strings.Contains(err.Error(), "CTALK_SMTP_URL") {
			t.Errorf("email without SMTP: %v; want it to name CTALK_SMTP_URL", err)
		}
		f.s.notify.EmailEnabled = true

		st, err = f.s.UpdateNotificationSettings(ctx, umar, NotificationUpdate{Channel: ptrTo(" Email "), Address: ptrTo("umar@example.com"),
			OnAnswers: ptrTo(false), DelayMinutes: ptrTo(15), QuietStart: ptrTo("22:00"), QuietEnd: ptrTo("7:30"), TimeZone: ptrTo("Europe/Berlin")})
		want := NotificationSettings{Channel: "email", Address: "umar@example.com", OnQuestions: true, DelayMinutes: 15, QuietStart: "22:00",
			QuietEnd: "07:30", TimeZone: "Europe/Berlin", EmailAvailable: true, Saved: true}
		if err != nil || st != want {
			t.Fatalf("UpdateNotificationSettings = %+v, %v; want %+v", st, err, want)
		}
		if got, _ := f.s.NotificationSettings(ctx, umar); got != want {
			t.Errorf("NotificationSettings after saving = %+v, want %+v", got, want)
		}
		// A partial update keeps the rest.
		st, err = f.s.UpdateNotificationSettings(ctx, umar, NotificationUpdate{QuietStart: ptrTo(""), QuietEnd: ptrTo("")})
		if err != nil || st.QuietStart != "" || st.DelayMinutes != 15 || st.Address != "umar@example.com" {
			t.Errorf("clearing quiet hours = %+v, %v", st, err)
		}

		// The generic webhook: a secret, kept across saves, replaced on request.
		st, err = f.s.UpdateNotificationSettings(ctx, john, NotificationUpdate{Channel: ptrTo("webhook"), Address: ptrTo("https://hooks.example.com/ctalk?key=sekrit-url")})
		if err != nil || !strings.HasPrefix(st.Secret, notify.SecretPrefix) || len(st.Secret) < 40 {
			t.Fatalf("webhook settings = %+v, %v; want a whsec_ secret", st, err)
		}
		secret := st.Secret
		if st, _ = f.s.UpdateNotificationSettings(ctx, john, NotificationUpdate{DelayMinutes: ptrTo(5)}); st.Secret != secret {
			t.Errorf("saving again changed the secret")
		}
		if st, _ = f.s.UpdateNotificationSettings(ctx, john, NotificationUpdate{RotateSecret: true}); st.Secret == secret || st.Secret == "" {
			t.Errorf("RotateSecret kept the secret")
		}
		secret = st.Secret
		if st, _ = f.s.UpdateNotificationSettings(ctx, john, NotificationUpdate{Channel: ptrTo("slack")}); st.Secret != "" {
			t.Errorf("a slack channel shows a secret: %+v", st)
		}

		// The audit log names the choices, never an address, URL or secret.
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		page, err := f.s.ListAudit(ctx, Admin{Session: &umar}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, e := range page.Entries {
			if e.Action == AuditNotifySettings {
				details = append(details, e.Actor+": "+e.Detail)
			}
		}
		all := strings.Join(details, "\n")
		if len(details) != 6 || !strings.Contains(all, "umar: channel email; questions on, answers off; delay 15 min; quiet 22:00-07:30 Europe/Berlin") ||
			!strings.Contains(all, "john: channel webhook; questions on, answers on; delay 5 min; webhook secret replaced") {
			t.Errorf("audit entries:\n%s", all)
		}
		for _, leak := range []string{"example.com", "sekrit", secret, notify.SecretPrefix} {
			if strings.Contains(all, leak) {
				t.Errorf("the audit log holds %q:\n%s", leak, all)
			}
		}
	})
}

// TestNotificationPause: a paused endpoint shows its owner a notice, in
// their settings and in check_inbox, and saving the settings resumes it.
func TestNotificationPause(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := notifyFixture(t, s)
		ctx := t.Context()
		if _, err := f.s.UpdateNotificationSettings(ctx, umar, NotificationUpdate{Channel: ptrTo("slack"), Address: ptrTo("https://hooks.example.com/a")}); err != nil {
			t.Fatal(err)
		}
		err := s.InTx(ctx, func(q db.Queries) error {
			_, err := q.PauseNotifications(ctx, "acme", "umar", f.s.clock(), "5 deliveries in a row failed (last: HTTP 404)")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.s.NotificationSettings(ctx, umar)
		if st.PausedAt == nil || !strings.Contains(st.Notice, "paused: 5 deliveries in a row failed (last: HTTP 404)") {
			t.Fatalf("paused settings = %+v; want a notice", st)
		}
		// The owner's agent is told too, where it looks: check_inbox.
		inbox := func(who Credentials) string {
			t.Helper()
			res, err := f.s.Inbox(ctx, who, 0)
			if err != nil {
				t.Fatal(err)
			}
			return res.NotificationsPaused
		}
		if got := inbox(umar); !strings.Contains(got, "slack notifications are paused") ||
			!strings.Contains(got, "5 deliveries in a row failed (last: HTTP 404)") || !strings.Contains(got, "notification_settings") {
			t.Errorf("check_inbox of the paused person: notifications_paused = %q; want the channel, the reason and how to resume", got)
		}
		if got := inbox(john); got != "" {
			t.Errorf("check_inbox of someone else: notifications_paused = %q; want none", got)
		}
		if st, err = f.s.UpdateNotificationSettings(ctx, umar, NotificationUpdate{}); err != nil || st.PausedAt != nil || st.Notice != "" {
			t.Errorf("saving = %+v, %v; want the pause gone", st, err)
		}
		if got := inbox(umar); got != "" {
			t.Errorf("check_inbox after saving: notifications_paused = %q; want none", got)
		}
	})
}

// TestNotificationOutboxFromRules: asking and answering through the rules
// queue a notification, in the same transaction, only for the people whose
// settings want one.
func TestNotificationOutboxFromRules(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := notifyFixture(t, s)
		ctx := t.Context()
		if _, err := f.s.UpdateNotificationSettings(ctx, john, NotificationUpdate{Channel: ptrTo("slack"), Address: ptrTo("https://hooks.example.com/j"),
			OnAnswers: ptrTo(false)}); err != nil {
			t.Fatal(err)
		}
		asked, err := f.s.Ask(ctx, umar, "john", "Who owns the billing service?")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Ask(ctx, john, "umar", "umar has no settings: nothing queued"); err != nil {
			t.Fatal(err)
		}
		var got []db.NotificationDelivery
		err = s.InTx(ctx, func(q db.Queries) (err error) {
			got, err = q.ClaimNotifications(ctx, f.s.clock(), f.s.clock().Add(time.Minute), 10)
			return err
		})
		if err != nil || len(got) != 1 || got[0].UserID != "john" || got[0].MessageID != asked.MessageID || got[0].FromName != "umar" {
			t.Fatalf("claimed %+v, %v; want john's one question", got, err)
		}
	})
}

// TestOrgNotificationAdmin: only admins read and change the excerpt policy
// and see failed deliveries, of their own organization only; changes are
// audited.
func TestOrgNotificationAdmin(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := notifyFixture(t, s)
		ctx := t.Context()
		f.org("other")
		f.user("other", "eve")
		eve := Credentials{Token: f.login("other", "eve")}
		f.s.notify.Guard.AllowPrivate = true
		for _, c := range []Credentials{john, eve} {
			if _, err := f.s.UpdateNotificationSettings(ctx, c, NotificationUpdate{Channel: ptrTo("webhook"), Address: ptrTo("http://127.0.0.1:1/h")}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.s.Ask(ctx, umar, "john", "q1"); err != nil {
			t.Fatal(err)
		}
		f.user("other", "fay")
		fay := Credentials{Token: f.login("other", "fay")}
		if _, err := f.s.Ask(ctx, fay, "eve", "q2"); err != nil {
			t.Fatal(err)
		}
		// Both fail for good.
		err := s.InTx(ctx, func(q db.Queries) error {
			got, err := q.ClaimNotifications(ctx, f.s.clock(), f.s.clock().Add(time.Minute), 10)
			if err != nil || len(got) != 2 {
				t.Fatalf("claimed %d, %v; want 2", len(got), err)
			}
			for _, d := range got {
				if _, err := q.FinishNotification(ctx, d.ID, db.OutcomeFailed, "HTTP 500 from "+d.OrgID, f.s.clock()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		asUmar := Admin{Session: &umar}
		_, err = f.s.ListFailedNotifications(ctx, asUmar, 0)
		wantKind(t, "ListFailedNotifications by a non-admin", err, KindForbidden)
		_, err = f.s.SetOrgExcerpts(ctx, asUmar, true)
		wantKind(t, "SetOrgExcerpts by a non-admin", err, KindForbidden)
		_, err = f.s.OrgNotificationSettings(ctx, asUmar)
		wantKind(t, "OrgNotificationSettings by a non-admin", err, KindForbidden)
		_, err = f.s.SetOrgExcerpts(ctx, Admin{OrgID: "acme", Password: "wrong-password"}, true)
		wantKind(t, "SetOrgExcerpts with a wrong admin password", err, KindUnauthorized)
		if st, _ := f.s.NotificationSettings(ctx, john); st.Excerpts {
			t.Fatal("a refused SetOrgExcerpts turned excerpts on")
		}

		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		page, err := f.s.ListFailedNotifications(ctx, asUmar, 0)
		if err != nil || len(page.Failed) != 1 || page.Failed[0].UserID != "john" || page.Failed[0].LastError != "HTTP 500 from acme" ||
			page.Failed[0].Channel != "webhook" || page.Failed[0].Attempts != 1 || page.Failed[0].Kind != "question" {
			t.Fatalf("failed deliveries of acme = %+v, %v; want john's only", page, err)
		}
		o, err := f.s.SetOrgExcerpts(ctx, asUmar, true)
		if err != nil || !o.Excerpts {
			t.Fatalf("SetOrgExcerpts = %+v, %v", o, err)
		}
		if o, _ = f.s.OrgNotificationSettings(ctx, asUmar); !o.Excerpts {
			t.Error("OrgNotificationSettings after turning excerpts on says off")
		}
		if st, _ := f.s.NotificationSettings(ctx, john); !st.Excerpts {
			t.Error("john does not see the organization's excerpts on")
		}
		if st, _ := f.s.NotificationSettings(ctx, eve); st.Excerpts {
			t.Error("another organization's excerpts turned on")
		}
		if _, err := f.s.SetOrgExcerpts(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, false); err != nil {
			t.Fatal(err)
		}
		audit, _ := f.s.ListAudit(ctx, asUmar, 0)
		var got []string
		for _, e := range audit.Entries {
			if e.Action == AuditNotifyExcerpts {
				got = append(got, e.Actor+": "+e.Detail)
			}
		}
		if len(got) != 2 || got[0] != ": excerpts off: notifications carry no question or answer text" ||
			got[1] != "umar: excerpts on: notifications carry a short excerpt" {
			t.Errorf("excerpt audit entries = %q", got)
		}
	})
}
