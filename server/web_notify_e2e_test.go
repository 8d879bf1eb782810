package server_test

// The notification pages end to end (issue 16): a person saves each
// channel on /app/settings/notifications and reads it back (the page and
// the stored row agree); private and loopback webhook URLs, a bad email,
// email on a server without SMTP and a form without the session's CSRF
// token are refused with nothing stored; the generic webhook's secret is
// shown to its owner and rotated; a paused endpoint is announced on the
// inbox and the settings page until saving resumes it; the admin console's
// notifications page lists the organization's own failed deliveries only,
// pages them, and sets the excerpt policy; a non-admin gets the console's
// usual refusal.

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

const settingsPath = "/app/settings/notifications"

// publicDNS resolves the tests' webhook hosts without a network: the
// public ones to public addresses, internal.example to a private one.
type publicDNS struct{}

func (publicDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "hooks.slack.com":
		return []netip.Addr{netip.MustParseAddr("34.200.10.20")}, nil
	case "acme.webhook.office.com":
		return []netip.Addr{netip.MustParseAddr("52.96.10.20")}, nil
	case "receiver.example.net":
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	case "internal.example":
		return []netip.Addr{netip.MustParseAddr("10.20.30.40")}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// notifyServer serves ctalk with the web face over store, with the
// destination guard at its default (private addresses refused) and email
// available or not; it returns the base URL and the rules it serves.
func notifyServer(t *testing.T, store db.Store, email bool) (string, *relay.Service, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rules := relay.New(store, relay.Options{HashConcurrency: 4,
		Notify: relay.NotifyOptions{EmailEnabled: email, Guard: notify.Guard{Resolver: publicDNS{}}}})
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(nil, mcp.Options{Version: "e2e", Relay: rules, Logger: logger}), Relay: rules,
		Logger: logger, Version: "e2e",
	}))
	t.Cleanup(ts.Close)
	return ts.URL, rules, logs
}

// storedNotify is a person's stored settings row (found false: none).
func storedNotify(t *testing.T, store db.Store, orgID, userID string) (st db.NotificationSettings, found bool) {
	t.Helper()
	err := store.View(t.Context(), func(q db.Queries) (err error) {
		st, err = q.GetNotificationSettings(t.Context(), orgID, userID)
		return err
	})
	if err != nil && err != db.ErrNotFound {
		t.Fatalf("GetNotificationSettings(%s/%s): %v", orgID, userID, err)
	}
	return st, err == nil
}

// sameRow reports whether two reads of a settings row hold the same values.
func sameRow(a, b db.NotificationSettings) bool {
	a.UpdatedAt, b.UpdatedAt = a.UpdatedAt.UTC(), b.UpdatedAt.UTC()
	return a.UpdatedAt.Equal(b.UpdatedAt) && a.PausedAt == nil && b.PausedAt == nil && func() bool {
		a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
		return a == b
	}()
}

// settingsForm is a whole settings form as a browser posts it (unchecked
// boxes are absent).
func settingsForm(csrf, channel, address string, questions, answers bool, delay, quietStart, quietEnd, tz string) url.Values {
	f := url.Values{"csrf_token": {csrf}, "channel": {channel}, "address": {address}, "delay_minutes": {delay},
		"quiet_start": {quietStart}, "quiet_end": {quietEnd}, "time_zone": {tz}}
	if questions {
		f.Set("on_questions", "1")
	}
	if answers {
		f.Set("on_answers", "1")
	}
	return f
}

// inputValue is the value attribute of the input with id, as the page has it (unescaped).
func inputValue(t *testing.T, p webPage, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<input id="` + regexp.QuoteMeta(id) + `"[^>]*? value="([^"]*)"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("the page has no input #%s with a value\n%s", id, p.body)
	}
	return html.UnescapeString(m[1])
}

// checkedChannel is the channel radio button the page has checked ("" for none).
func checkedChannel(p webPage) string {
	m := regexp.MustCompile(`name="channel" value="([a-z]+)" checked`).FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return m[1]
}

var secretShown = regexp.MustCompile(`<code class="secret" id="webhook-secret">([^<]+)</code>`)

func TestWebNotifySettings(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		base, _, logs := notifyServer(t, store, true)
		cs := connectTo(t, base+"/mcp", "", "")
		team(t, cs, "acme")

		john := newBrowser(base)
		if p := john.get(t, settingsPath); p.status != http.StatusSeeOther || p.location != "/app/signin?next=%2Fapp%2Fsettings%2Fnotifications" {
			t.Errorf("signed-out GET %s = %d to %q; want the sign-in page and back", settingsPath, p.status, p.location)
		}
		john.signIn(t, "acme", "john", userPassword)
		if p := john.get(t, "/app"); !strings.Contains(p.body, `href="/app/settings/notifications"`) {
			t.Errorf("the nav does not link to the notification settings")
		}
		if p := john.get(t, "/app/settings"); p.status != http.StatusSeeOther || p.location != settingsPath {
			t.Errorf("GET /app/settings = %d to %q; want the notification settings", p.status, p.location)
		}
		if p := john.get(t, "/app/tokens"); !strings.Contains(p.body, `<a href="/app/settings/notifications" aria-current="page">Settings</a>`) ||
			!strings.Contains(p.body, `<a href="/app/tokens" aria-current="page">Tokens and clients</a>`) {
			t.Errorf("the tokens page is not in the Settings section next to Notifications")
		}
		p := john.get(t, settingsPath)
		if p.status != http.StatusOK || checkedChannel(p) != "none" || !strings.Contains(p.body, "You have not chosen yet") ||
			!strings.Contains(p.body, `href="/app/settings/notifications" aria-current="page"`) {
			t.Fatalf("first GET %s = %d, channel %q; want 200, none, not chosen yet\n%s", settingsPath, p.status, checkedChannel(p), p.body)
		}
		if !strings.Contains(p.body, "keeps question and answer text out of notifications") {
			t.Errorf("the settings page does not say the organization allows no excerpts (the default)")
		}
		if _, found := storedNotify(t, store, "acme", "john"); found {
			t.Fatal("reading the page stored settings")
		}
		tok := csrf(t, p)

		// Each channel, saved and read back from the page and the row.
		for _, c := range []struct{ channel, address string }{
			{"email", "john@example.com"},
			{"slack", "https://hooks.slack.com/services/T000/B000/XXXX"},
			{"teams", "https://acme.webhook.office.com/webhookb2/abc"},
			{"webhook", "https://receiver.example.net/ctalk"},
			{"none", "https://receiver.example.net/ctalk"},
		} {
			r := john.post(t, settingsPath, settingsForm(tok, c.channel, c.address, true, false, "15", "22:00", "07:30", "Europe/Berlin"))
			if r.status != http.StatusSeeOther || r.location != settingsPath+"?ok=notify" {
				t.Fatalf("save %s = %d to %q; want 303 back with a confirmation\n%s", c.channel, r.status, r.location, r.body)
			}
			g := john.get(t, r.location)
			if checkedChannel(g) != c.channel || inputValue(t, g, "address") != c.address || inputValue(t, g, "delay_minutes") != "15" ||
				inputValue(t, g, "quiet_start") != "22:00" || inputValue(t, g, "quiet_end") != "07:30" ||
				inputValue(t, g, "time_zone") != "Europe/Berlin" || !strings.Contains(g.body, "Notification settings saved.") ||
				!strings.Contains(g.body, `id="on_questions" name="on_questions" value="1" checked`) ||
				strings.Contains(g.body, `id="on_answers" name="on_answers" value="1" checked`) {
				t.Errorf("after saving %s the page shows channel %q, address %q\n%s", c.channel, checkedChannel(g), inputValue(t, g, "address"), g.body)
			}
			st, found := storedNotify(t, store, "acme", "john")
			if !found || st.Channel != c.channel || st.Address != c.address || !st.OnQuestions || st.OnAnswers || st.DelaySeconds != 900 ||
				st.QuietStart != 22*60 || st.QuietEnd != 7*60+30 || st.TimeZone != "Europe/Berlin" {
				t.Errorf("after saving %s the row is %+v", c.channel, st)
			}
			secret := secretShown.FindStringSubmatch(g.body)
			if c.channel == "webhook" {
				if secret == nil || !strings.HasPrefix(secret[1], "whsec_") || secret[1] != st.Secret {
					t.Errorf("the webhook's page shows secret %v, want the stored one", secret)
				}
			} else if secret != nil || strings.Contains(g.body, "whsec_") {
				t.Errorf("channel %s: the page shows a signing secret", c.channel)
			}
		}

		// The generic webhook's secret: shown to its owner, rotated on request.
		john.post(t, settingsPath, settingsForm(tok, "webhook", "https://receiver.example.net/ctalk", true, true, "0", "", "", "UTC"))
		before, _ := storedNotify(t, store, "acme", "john")
		r := john.post(t, settingsPath, url.Values{"csrf_token": {tok}, "action": {"rotate"}})
		if r.status != http.StatusSeeOther || r.location != settingsPath+"?ok=rotated" {
			t.Fatalf("rotate = %d to %q\n%s", r.status, r.location, r.body)
		}
		after, _ := storedNotify(t, store, "acme", "john")
		g := john.get(t, r.location)
		if after.Secret == before.Secret || !strings.HasPrefix(after.Secret, "whsec_") || after.Address != before.Address ||
			after.Channel != "webhook" || !strings.Contains(g.body, after.Secret) || strings.Contains(g.body, before.Secret) ||
			!strings.Contains(g.body, "A new signing secret is made") {
			t.Errorf("rotating: secret changed %v, address kept %v; the page shows the new one %v",
				after.Secret != before.Secret, after.Address == before.Address, strings.Contains(g.body, after.Secret))
		}
		umar := newBrowser(base)
		umar.signIn(t, "acme", "umar", userPassword)
		if p := umar.get(t, settingsPath); strings.Contains(p.body, after.Secret) || checkedChannel(p) != "none" {
			t.Errorf("umar's settings page shows john's secret or settings")
		}

		// Refused: nothing stored, the rules' message next to the form, the entered values kept.
		for _, c := range []struct{ channel, address, want string }{
			{"webhook", "http://127.0.0.1/hook", "the URL must start with https://"},
			{"slack", "http://10.0.0.1/hook", "the URL must start with https://"},
			{"webhook", "https://127.0.0.1/hook", "127.0.0.1 resolves to 127.0.0.1, a private, loopback or reserved address"},
			{"teams", "https://10.0.0.1/hook", "10.0.0.1 resolves to 10.0.0.1, a private, loopback or reserved address"},
			{"webhook", "https://internal.example/hook", "internal.example resolves to 10.20.30.40"},
			{"webhook", "https://[::1]/hook", "a private, loopback or reserved address"},
			{"email", "not-an-email", "is not an email address"},
			{"email", "john@localhost", "is not an email address"},
			{"slack", "", "channel slack needs an address"},
			{"carrier-pigeon", "x", "is not one of none, email, slack, teams, webhook"},
			{"webhook", `https://receiver.example.net/"><script>alert(1)</script>`, ""},
		} {
			form := settingsForm(tok, c.channel, c.address, true, true, "45", "23:00", "06:00", "America/New_York")
			if c.want == "" { // a good URL, but a bad time zone
				form.Set("time_zone", "Mars/Olympus")
				c.want = "is not an IANA time zone"
			}
			r := john.post(t, settingsPath, form)
			alert := regexp.MustCompile(`<p role="alert" id="settings-error">([^<]*)</p>`).FindStringSubmatch(r.body)
			if r.status != http.StatusBadRequest || alert == nil || !strings.Contains(html.UnescapeString(alert[1]), c.want) {
				t.Errorf("save %s %q = %d, alert %v; want 400 with %q", c.channel, c.address, r.status, alert, c.want)
				continue
			}
			if inputValue(t, r, "address") != c.address || inputValue(t, r, "delay_minutes") != "45" || inputValue(t, r, "quiet_start") != "23:00" ||
				checkedChannel(r) != c.channel && c.channel != "carrier-pigeon" {
				t.Errorf("the refused form for %q does not keep the entered values", c.address)
			}
			if strings.Contains(r.body, "<script>alert(1)") {
				t.Errorf("the refused form shows %q as markup", c.address)
			}
			if now, _ := storedNotify(t, store, "acme", "john"); !sameRow(now, after) {
				t.Errorf("refused save %s %q changed the row: %+v, was %+v", c.channel, c.address, now, after)
			}
		}
		if r := john.post(t, settingsPath, settingsForm(tok, "none", "", true, true, "soon", "", "", "UTC")); r.status != http.StatusBadRequest ||
			!strings.Contains(r.body, "whole number of minutes") {
			t.Errorf("a delay of %q = %d; want 400 saying what to write", "soon", r.status)
		}
		if r := john.post(t, settingsPath, settingsForm(tok, "none", "", true, true, "1441", "", "", "UTC")); r.status != http.StatusBadRequest ||
			!strings.Contains(r.body, "delay_minutes must be between 0") {
			t.Errorf("a delay of 1441 minutes = %d; want 400 with the rules' message", r.status)
		}

		// CSRF: missing or another session's token is refused, nothing stored.
		foreign := csrf(t, umar.get(t, settingsPath))
		for _, bad := range []string{"", foreign} {
			f := settingsForm(bad, "slack", "https://hooks.slack.com/services/FORGED", true, true, "0", "", "", "UTC")
			if bad == "" {
				f.Del("csrf_token")
			}
			if r := john.post(t, settingsPath, f); r.status != http.StatusForbidden {
				t.Errorf("a post with csrf %q = %d, want 403", bad, r.status)
			}
			if r := john.post(t, settingsPath, url.Values{"csrf_token": {bad}, "action": {"rotate"}}); r.status != http.StatusForbidden {
				t.Errorf("a rotate with csrf %q = %d, want 403", bad, r.status)
			}
		}
		if now, _ := storedNotify(t, store, "acme", "john"); !sameRow(now, after) {
			t.Errorf("refused CSRF posts changed the row: %+v", now)
		}

		// Email on a server without SMTP: explained, disabled, and refused.
		noMail, _, _ := notifyServer(t, store, false)
		amy := newBrowser(noMail)
		amy.signIn(t, "acme", "umar", userPassword)
		p = amy.get(t, settingsPath)
		if !strings.Contains(p.body, `value="email" disabled`) || !strings.Contains(p.body, "this server cannot send email") {
			t.Errorf("without SMTP the email choice is not disabled and explained\n%s", p.body)
		}
		r = amy.post(t, settingsPath, settingsForm(csrf(t, p), "email", "umar@example.com", true, true, "0", "", "", "UTC"))
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "cannot send email") {
			t.Errorf("email without SMTP = %d; want 400 saying the server cannot send email", r.status)
		}
		if _, found := storedNotify(t, store, "acme", "umar"); found {
			t.Errorf("a refused email setting was stored")
		}

		// Addresses and secrets never reach the log.
		for _, s := range []string{"john@example.com", "hooks.slack.com/services", "receiver.example.net", after.Secret, before.Secret} {
			if strings.Contains(logs.String(), s) {
				t.Errorf("the log holds %q", s)
			}
		}
	})
}

// TestWebNotifyPaused: an endpoint the delivery workers paused is announced
// on its owner's inbox and settings page (nobody else's) until saving the
// settings resumes it.
func TestWebNotifyPaused(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		base, _, _ := notifyServer(t, store, true)
		cs := connectTo(t, base+"/mcp", "", "")
		team(t, cs, "acme")
		john, umar := newBrowser(base), newBrowser(base)
		john.signIn(t, "acme", "john", userPassword)
		umar.signIn(t, "acme", "umar", userPassword)
		tok := csrf(t, john.get(t, settingsPath))
		john.post(t, settingsPath, settingsForm(tok, "webhook", "https://receiver.example.net/ctalk", true, true, "0", "", "", "UTC"))
		umar.post(t, settingsPath, settingsForm(csrf(t, umar.get(t, settingsPath)), "slack", "https://hooks.slack.com/services/U", true, true, "0", "", "", "UTC"))
		if p := john.get(t, "/app"); strings.Contains(p.body, `id="notify-paused"`) {
			t.Fatalf("the inbox announces a pause before any")
		}

		const reason = "5 deliveries in a row failed (last: HTTP 500 from the receiver)"
		if err := store.InTx(t.Context(), func(q db.Queries) error {
			ok, err := q.PauseNotifications(t.Context(), "acme", "john", time.Now(), reason)
			if err == nil && !ok {
				err = fmt.Errorf("PauseNotifications paused nothing")
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		p := john.get(t, "/app")
		if p.status != http.StatusOK || !strings.Contains(p.body, `id="notify-paused"`) ||
			!strings.Contains(p.body, "Notifications are paused: "+html.EscapeString(reason)) ||
			!strings.Contains(p.body, `<a href="/app/settings/notifications">`) {
			t.Errorf("john's inbox while paused = %d, no banner with the reason and a link\n%s", p.status, p.body)
		}
		if p := umar.get(t, "/app"); strings.Contains(p.body, `id="notify-paused"`) {
			t.Errorf("umar's inbox announces john's pause")
		}
		s := john.get(t, settingsPath)
		if !strings.Contains(s.body, "Notifications are paused") || !strings.Contains(s.body, html.EscapeString(reason)) ||
			!strings.Contains(s.body, "Save and resume") {
			t.Errorf("john's settings page while paused shows no pause and no way to resume\n%s", s.body)
		}
		r := john.post(t, settingsPath, settingsForm(tok, "webhook", "https://receiver.example.net/ctalk", true, true, "0", "", "", "UTC"))
		if r.status != http.StatusSeeOther {
			t.Fatalf("saving to resume = %d\n%s", r.status, r.body)
		}
		if st, _ := storedNotify(t, store, "acme", "john"); st.PausedAt != nil || st.PauseReason != "" {
			t.Errorf("after saving the row is still paused: %+v", st)
		}
		if p := john.get(t, "/app"); strings.Contains(p.body, `id="notify-paused"`) {
			t.Errorf("the inbox still announces the pause after saving")
		}
		if s := john.get(t, settingsPath); strings.Contains(s.body, "Notifications are paused") {
			t.Errorf("the settings page still announces the pause after saving")
		}
	})
}

// failAll has the delivery side give up on every due notification with
// lastError, as the workers do after their last attempt; it returns how
// many failed.
func failAll(t *testing.T, store db.Store, lastError func(db.NotificationDelivery) string) int {
	t.Helper()
	n := 0
	err := store.InTx(t.Context(), func(q db.Queries) error {
		now := time.Now().Add(48 * time.Hour) // past every delay and quiet hour
		got, err := q.ClaimNotifications(t.Context(), now, now.Add(time.Minute), 1000)
		if err != nil {
			return err
		}
		for _, d := range got {
			if _, err := q.FinishNotification(t.Context(), d.ID, db.OutcomeFailed, lastError(d), time.Now()); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("failing the due notifications: %v", err)
	}
	return n
}

var failedRow = regexp.MustCompile(`<tr>\s*<td data-label="Failed">`)

func TestWebAdminNotify(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		base, _, _ := notifyServer(t, store, true)
		cs := connectTo(t, base+"/mcp", "", "")
		umarTok, _ := team(t, cs, "acme")
		registerOrg(t, cs, "beta", "Beta")
		registerUser(t, cs, "beta", "eve", "Eve", "")
		registerUser(t, cs, "beta", "fay", "Fay", "")
		eveTok := login(t, cs, "beta", "eve")

		admin, john, fay, eve := newBrowser(base), newBrowser(base), newBrowser(base), newBrowser(base)
		admin.signIn(t, "acme", "umar", userPassword)
		john.signIn(t, "acme", "john", userPassword)
		fay.signIn(t, "beta", "fay", userPassword)
		eve.signIn(t, "beta", "eve", userPassword)
		for _, b := range []*browser{admin, eve} {
			ap := b.get(t, "/app/admin")
			if p := b.post(t, "/app/admin/become", url.Values{"csrf_token": {csrf(t, ap)}, "admin_password": {adminPassword}}); p.status != http.StatusSeeOther {
				t.Fatalf("become admin = %d\n%s", p.status, p.body)
			}
		}
		jt := csrf(t, john.get(t, settingsPath))
		john.post(t, settingsPath, settingsForm(jt, "webhook", "https://receiver.example.net/john", true, true, "0", "", "", "UTC"))
		ft := csrf(t, fay.get(t, settingsPath))
		fay.post(t, settingsPath, settingsForm(ft, "slack", "https://hooks.slack.com/services/FAY", true, true, "0", "", "", "UTC"))

		id := ask(t, cs, umarTok, "john", "acme's question that will fail")
		ask(t, cs, eveTok, "fay", "beta's question that will fail")
		if n := failAll(t, store, func(d db.NotificationDelivery) string {
			if d.OrgID == "beta" {
				return "HTTP 502 from beta-receiver-marker"
			}
			return "HTTP 500 from the receiver"
		}); n != 2 {
			t.Fatalf("%d notifications failed, want 2 (one per organization)", n)
		}

		// The admin's page: acme's failed delivery only.
		p := admin.get(t, "/app/admin/notifications")
		if p.status != http.StatusOK || len(failedRow.FindAllString(p.body, -1)) != 1 || !strings.Contains(p.body, "HTTP 500 from the receiver") ||
			!strings.Contains(p.body, `<a href="/app/admin/people/john">John</a>`) || !strings.Contains(p.body, "a question to them") ||
			!strings.Contains(p.body, `<td data-label="Channel">webhook</td>`) || !strings.Contains(p.body, `<td data-label="Attempts">1</td>`) ||
			!strings.Contains(p.body, fmt.Sprintf(`href="/app/thread/%d"`, id)) ||
			!strings.Contains(p.body, `href="/app/admin/notifications" aria-current="page"`) {
			t.Errorf("acme's admin notifications page = %d, want john's failed delivery\n%s", p.status, p.body)
		}
		for _, foreign := range []string{"beta-receiver-marker", "Fay", "fay", "hooks.slack.com", "receiver.example.net"} {
			if strings.Contains(p.body, foreign) {
				t.Errorf("acme's admin page shows %q (another organization's, or an address)", foreign)
			}
		}
		if e := eve.get(t, "/app/admin/notifications"); len(failedRow.FindAllString(e.body, -1)) != 1 ||
			!strings.Contains(e.body, "beta-receiver-marker") || strings.Contains(e.body, "HTTP 500 from the receiver") ||
			strings.Contains(e.body, "John") {
			t.Errorf("beta's admin page does not show exactly its own failed delivery\n%s", e.body)
		}

		// A non-admin: the console's usual refusal, nothing changed.
		jp := john.get(t, "/app/admin/notifications")
		if jp.status != http.StatusForbidden || !strings.Contains(jp.body, becomeForm) || strings.Contains(jp.body, "HTTP 500") {
			t.Errorf("GET /app/admin/notifications as a non-admin = %d; want 403 with the become-admin form", jp.status)
		}
		if r := john.post(t, "/app/admin/notifications", url.Values{"csrf_token": {jt}, "excerpts": {"on"}}); r.status != http.StatusForbidden ||
			!strings.Contains(r.body, "you are not an admin") {
			t.Errorf("a non-admin's excerpts post = %d; want 403 saying so\n%s", r.status, r.body)
		}

		// The excerpt policy: refused without CSRF or with a bad value, then set.
		at := csrf(t, p)
		for _, f := range []url.Values{{"excerpts": {"on"}}, {"csrf_token": {jt}, "excerpts": {"on"}}} {
			if r := admin.post(t, "/app/admin/notifications", f); r.status != http.StatusForbidden {
				t.Errorf("an excerpts post with csrf %q = %d, want 403", f.Get("csrf_token"), r.status)
			}
		}
		if r := admin.post(t, "/app/admin/notifications", url.Values{"csrf_token": {at}, "excerpts": {"maybe"}}); r.status != http.StatusBadRequest ||
			!strings.Contains(r.body, "Choose on or off") {
			t.Errorf("excerpts=maybe = %d, want 400", r.status)
		}
		if s := john.get(t, settingsPath); !strings.Contains(s.body, "keeps question and answer text out") {
			t.Errorf("a refused excerpts post changed acme's policy")
		}
		r := admin.post(t, "/app/admin/notifications", url.Values{"csrf_token": {at}, "excerpts": {"on"}})
		if r.status != http.StatusSeeOther || r.location != "/app/admin/notifications?ok=excerpts-on" {
			t.Fatalf("excerpts on = %d to %q\n%s", r.status, r.location, r.body)
		}
		if g := admin.get(t, r.location); !strings.Contains(g.body, `id="excerpts-on" name="excerpts" value="on" checked`) ||
			!strings.Contains(g.body, "Notifications now carry a short excerpt") {
			t.Errorf("after turning excerpts on the page does not show it\n%s", g.body)
		}
		if s := john.get(t, settingsPath); !strings.Contains(s.body, "lets notifications carry a short excerpt") {
			t.Errorf("john's settings page does not say acme allows excerpts now")
		}
		if s := fay.get(t, settingsPath); !strings.Contains(s.body, "keeps question and answer text out") {
			t.Errorf("acme's excerpt setting reached beta")
		}
		audit := admin.get(t, "/app/admin/audit")
		if !strings.Contains(audit.body, "changed the notification excerpts") || !strings.Contains(audit.body, "saved the notification settings of") ||
			strings.Contains(audit.body, "receiver.example.net") || strings.Contains(audit.body, "whsec_") {
			t.Errorf("the audit log does not record the notification changes in words, or shows an address or secret\n%s", audit.body)
		}

		// Paging: 100 a page, newest first, then the older ones.
		for i := range 100 {
			ask(t, cs, umarTok, "john", "question "+strconv.Itoa(i))
		}
		if n := failAll(t, store, func(db.NotificationDelivery) string { return "HTTP 503 while paging" }); n != 100 {
			t.Fatalf("%d more failed, want 100", n)
		}
		p = admin.get(t, "/app/admin/notifications")
		older := regexp.MustCompile(`href="/app/admin/notifications\?before=(\d+)"`).FindStringSubmatch(p.body)
		if n := len(failedRow.FindAllString(p.body, -1)); n != 100 || older == nil || strings.Contains(p.body, "HTTP 500 from the receiver") {
			t.Fatalf("the first page has %d rows, older link %v; want the newest 100 and a link", n, older)
		}
		p = admin.get(t, "/app/admin/notifications?before="+older[1])
		if n := len(failedRow.FindAllString(p.body, -1)); n != 1 || !strings.Contains(p.body, "HTTP 500 from the receiver") ||
			strings.Contains(p.body, "?before=") || !strings.Contains(p.body, `href="/app/admin/notifications">Newest failed deliveries`) {
			t.Errorf("the second page has %d rows; want the oldest one and a way back\n%s", n, p.body)
		}
	})
}
