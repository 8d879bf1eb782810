package server_test

// Issue 16 through the official MCP Go SDK client, on both backends and both
// protocol generations: a person turns on webhook notifications with
// notification_settings and reads them back; a private address is refused
// with nothing stored; a question asked through the SDK reaches the receiver
// once, signed with the secret the tool showed its owner, without its text
// (the organization has not turned excerpts on); and the asker, who has no
// notifications, gets none.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
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

// notifySettingsOut mirrors notification_settings' result.
type notifySettingsOut struct {
	Channel     string `json:"channel"`
	Address     string `json:"address"`
	OnQuestions bool   `json:"on_questions"`
	Secret      string `json:"webhook_secret"`
	Saved       bool   `json:"saved"`
}

// serveNotify serves ctalk over store with webhook destinations checked by guard.
func serveNotify(t *testing.T, store db.Store, guard notify.Guard) string {
	t.Helper()
	rules := relay.New(store, relay.Options{HashConcurrency: 4, Notify: relay.NotifyOptions{Guard: guard}})
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(store, mcp.Options{Version: "e2e", Relay: rules}), Relay: rules,
		Logger: slog.New(slog.DiscardHandler), Version: "e2e",
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestNotificationsThroughGoSDK(t *testing.T) {
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		for _, proto := range []string{protocolSession, protocolStateless} {
			t.Run(proto, func(t *testing.T) {
				org := "notify-" + strings.ReplaceAll(proto, "-", "")
				// The default guard, as production runs: private addresses refused.
				strict := connectTo(t, serveNotify(t, store, notify.Guard{}), "", proto)
				umar, john := team(t, strict, org)
				for addr, want := range map[string]string{
					"http://127.0.0.1:9/hook": "must start with https://",
					"https://127.0.0.1/hook":  "only to public addresses",
					"https://10.0.0.1/hook":   "only to public addresses",
				} {
					msg := callErr(t, strict, "notification_settings",
						args{"auth_token": john, "channel": "webhook", "address": addr, "on_questions": true})
					if !strings.Contains(msg, want) {
						t.Errorf("webhook to %s: %q; want it refused (%q)", addr, msg, want)
					}
				}
				if got := callOK[notifySettingsOut](t, strict, "notification_settings", args{"auth_token": john}); got.Saved || got.Channel != "none" {
					t.Fatalf("after the refusals john's settings are %+v; want nothing stored (channel none, not saved)", got)
				}

				// A server whose operator allows private receivers (the local one here).
				rcv := testkit.StartReceiver(t, nil)
				cs := connectTo(t, serveNotify(t, store, notify.Guard{AllowPrivate: true}), "", proto)
				set := callOK[notifySettingsOut](t, cs, "notification_settings",
					args{"auth_token": john, "channel": "webhook", "address": rcv.URL, "on_questions": true})
				if set.Channel != "webhook" || set.Address != rcv.URL || !set.OnQuestions || !strings.HasPrefix(set.Secret, "whsec_") {
					t.Fatalf("notification_settings = %+v; want the webhook on for questions, with a whsec_ secret", set)
				}
				if got := callOK[notifySettingsOut](t, cs, "notification_settings", args{"auth_token": john}); got != set {
					t.Errorf("read back: %+v, want %+v", got, set)
				}
				if got := callOK[notifySettingsOut](t, cs, "notification_settings", args{"auth_token": umar}); got.Secret != "" || got.Address != "" {
					t.Errorf("umar's settings show %+v; want none of john's", got)
				}

				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				w := notify.NewWorker(notify.Config{Store: store, Guard: notify.Guard{AllowPrivate: true}})
				wg.Go(func() { w.Run(ctx) })
				defer func() { cancel(); wg.Wait() }()

				const question = "Where is the refund retry configured?"
				id := ask(t, cs, umar, "john", question)
				deadline := time.Now().Add(30 * time.Second)
				for len(rcv.Hits()) == 0 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(300 * time.Millisecond) // a second delivery would come now
				hits := rcv.Hits()
				if len(hits) != 1 {
					t.Fatalf("the receiver got %d requests for one question, want 1", len(hits))
				}
				h := hits[0]
				if err := notify.Verify([]byte(set.Secret), h.Signature, h.Body, time.Now(), 5*time.Minute); err != nil {
					t.Errorf("signature %q does not verify with the secret the tool showed: %v", h.Signature, err)
				}
				var body struct {
					ID        string  `json:"id"`
					Type      string  `json:"type"`
					OrgID     string  `json:"org_id"`
					MessageID int64   `json:"message_id"`
					Excerpt   *string `json:"excerpt"`
					From      struct {
						UserID string `json:"user_id"`
					} `json:"from"`
				}
				if err := json.Unmarshal(h.Body, &body); err != nil {
					t.Fatalf("webhook body %s: %v", h.Body, err)
				}
				if body.ID != h.ID || body.Type != "question.asked" || body.OrgID != org || body.MessageID != id || body.From.UserID != "umar" {
					t.Errorf("webhook body %s (Ctalk-Webhook-Id %q); want question.asked of message %d from umar in %s, its id in the header", h.Body, h.ID, id, org)
				}
				if body.Excerpt != nil || strings.Contains(string(h.Body), "refund retry") {
					t.Errorf("webhook body %s carries the question's text; the organization did not turn excerpts on", h.Body)
				}

				// John answers: umar, with no notifications, is not told.
				answer(t, cs, john, id, "In config/retry.yaml.")
				time.Sleep(300 * time.Millisecond)
				if n := len(rcv.Hits()); n != 1 {
					t.Errorf("after the answer the receiver has %d requests, want still 1 (umar has no notifications)", n)
				}
			})
		}
	})
}
