package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Webhooks: a Slack incoming webhook gets {"text": ...}; a Microsoft Teams
// incoming webhook (or a Teams workflow) an Adaptive Card message; the
// generic webhook a JSON event signed with the endpoint's secret (sign.go).

// Event is the generic webhook's body.
type Event struct {
	// ID names the notification, the same on every retry (also the
	// Ctalk-Webhook-Id header): receivers drop repeats by it.
	ID        string      `json:"id"`
	Type      string      `json:"type"` // "question.asked" or "answer.received"
	OrgID     string      `json:"org_id"`
	MessageID int64       `json:"message_id"`
	ThreadID  int64       `json:"thread_id"`
	From      EventPerson `json:"from"`
	// Excerpt is null unless the organization allows excerpts.
	Excerpt   *string   `json:"excerpt"`
	URL       *string   `json:"url"`
	CreatedAt time.Time `json:"created_at"`
}

// EventPerson is who asked (question.asked) or answered (answer.received).
type EventPerson struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

// EventID is the id of notification id, as webhooks carry it.
func EventID(id int64) string { return "ntf_" + strconv.FormatInt(id, 10) }

// body renders the webhook body of a channel.
func (c content) body(channel string) ([]byte, error) {
	switch channel {
	case db.ChannelSlack:
		text := slackEscape(c.title) + "."
		if c.excerpt != "" {
			text += "\n>" + slackEscape(c.excerpt)
		}
		if c.link != "" {
			text += "\n<" + c.link + "|Open the conversation>"
		}
		return json.Marshal(map[string]string{"text": text})
	case db.ChannelTeams:
		blocks := []map[string]any{{"type": "TextBlock", "text": c.title, "weight": "Bolder", "wrap": true}}
		if c.excerpt != "" {
			blocks = append(blocks, map[string]any{"type": "TextBlock", "text": c.excerpt, "wrap": true, "isSubtle": true})
		}
		card := map[string]any{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
			"version": "1.4", "body": blocks}
		if c.link != "" {
			card["actions"] = []map[string]any{{"type": "Action.OpenUrl", "title": "Open the conversation", "url": c.link}}
		}
		return json.Marshal(map[string]any{"type": "message", "attachments": []map[string]any{
			{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}}})
	}
	e := Event{ID: EventID(c.id), Type: c.event, OrgID: c.d.OrgID, MessageID: c.d.MessageID, ThreadID: c.d.ThreadID,
		From: EventPerson{UserID: c.otherID, Name: c.otherName}, CreatedAt: c.d.CreatedAt.UTC()}
	if c.excerpt != "" {
		e.Excerpt = &c.excerpt
	}
	if c.link != "" {
		e.URL = &c.link
	}
	return json.Marshal(e)
}

// slackEscape escapes the three characters Slack's text format reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// post delivers a webhook: any 2xx is delivered. Errors name the host and
// the status or failure, never the URL's path or query (a Slack or Teams
// URL is itself a secret) or the body.
func post(ctx context.Context, client *http.Client, rawURL, channel, secret string, c content, now time.Time) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("the webhook URL is not valid")
	}
	body, err := c.body(channel)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the webhook URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ctalk-notifications")
	req.Header.Set(IDHeader, EventID(c.id))
	if channel == db.ChannelWebhook {
		req.Header.Set(SignatureHeader, Sign([]byte(secret), now, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST to %s failed: %s", u.Host, transportError(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d from %s", resp.StatusCode, u.Host)
	}
	return nil
}

// transportError describes a failed request without its URL (url.Error
// quotes the whole URL, path and query included).
func transportError(err error) string {
	var ue *url.Error
	for {
		e, ok := err.(*url.Error)
		if !ok {
			break
		}
		ue, err = e, e.Err
	}
	if ue != nil && ue.Timeout() {
		return "timed out"
	}
	return err.Error()
}
