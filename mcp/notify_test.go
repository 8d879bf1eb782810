package mcp

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk/internal/relay"
)

// TestNotificationSettingsTool: no arguments show the defaults; arguments
// change only what they name; a private webhook URL and email on a server
// without SMTP are refused with what to do, and change nothing; the
// webhook's secret is shown to its owner.
func TestNotificationSettingsTool(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{}, func(t *testing.T, h *harness, umar, john string) {
		var st relay.NotificationSettings
		h.ok("notification_settings", map[string]any{"auth_token": umar}, &st)
		if st.Channel != "none" || st.Saved || st.EmailAvailable {
			t.Fatalf("defaults = %+v", st)
		}
		h.wantFail("notification_settings", map[string]any{"auth_token": umar, "channel": "webhook", "address": "https://10.0.0.1/hook"},
			"address: webhook destination refused: 10.0.0.1 resolves to 10.0.0.1, a private, loopback or reserved address; "+
				"ctalk sends webhooks only to public addresses unless the operator sets CTALK_WEBHOOK_ALLOW_PRIVATE=1")
		if msg := h.fail("notification_settings", map[string]any{"auth_token": umar, "channel": "email", "address": "umar@example.com"}); !strings.Contains(msg, "CTALK_SMTP_URL") {
			t.Errorf("email without SMTP: %q", msg)
		}
		h.ok("notification_settings", map[string]any{"auth_token": umar}, &st)
		if st.Saved {
			t.Fatalf("a refused change was saved: %+v", st)
		}
		h.ok("notification_settings", map[string]any{"auth_token": umar, "channel": "webhook", "address": "https://93.184.216.34/ctalk",
			"delay_minutes": 15, "on_answers": false}, &st)
		if st.Channel != "webhook" || !strings.HasPrefix(st.Secret, "whsec_") || st.DelayMinutes != 15 || st.OnAnswers || !st.OnQuestions {
			t.Fatalf("after saving = %+v", st)
		}
		var again relay.NotificationSettings
		h.ok("notification_settings", map[string]any{"auth_token": umar, "time_zone": "Europe/Paris"}, &again)
		if again.Secret != st.Secret || again.DelayMinutes != 15 || again.TimeZone != "Europe/Paris" {
			t.Errorf("a partial change = %+v", again)
		}
		var johns relay.NotificationSettings
		h.ok("notification_settings", map[string]any{"auth_token": john}, &johns)
		if johns.Saved || johns.Secret != "" {
			t.Errorf("john sees %+v", johns)
		}
	})
}
