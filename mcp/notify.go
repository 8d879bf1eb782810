package mcp

import (
	"context"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/relay"
)

// notification_settings: one's own email and chat notifications (issue 16).

type notificationSettingsArgs struct {
	AuthToken    string  `json:"auth_token,omitempty"`
	Channel      *string `json:"channel,omitempty"`
	Address      *string `json:"address,omitempty"`
	OnQuestions  *bool   `json:"on_questions,omitempty"`
	OnAnswers    *bool   `json:"on_answers,omitempty"`
	DelayMinutes *int    `json:"delay_minutes,omitempty"`
	QuietStart   *string `json:"quiet_start,omitempty"`
	QuietEnd     *string `json:"quiet_end,omitempty"`
	TimeZone     *string `json:"time_zone,omitempty"`
	RotateSecret bool    `json:"rotate_secret,omitempty"`
}

// changes reports whether the call changes anything (else it only shows).
func (a notificationSettingsArgs) changes() bool {
	return a.Channel != nil || a.Address != nil || a.OnQuestions != nil || a.OnAnswers != nil || a.DelayMinutes != nil ||
		a.QuietStart != nil || a.QuietEnd != nil || a.TimeZone != nil || a.RotateSecret
}

func (t *tools) notificationSettings() tool {
	return declare(t, "notification_settings", func(ctx context.Context, a notificationSettingsArgs) (relay.NotificationSettings, error) {
		cred := credentials(ctx, a.AuthToken)
		if !a.changes() {
			return t.relay.NotificationSettings(ctx, cred)
		}
		return t.relay.UpdateNotificationSettings(ctx, cred, relay.NotificationUpdate{Channel: a.Channel, Address: a.Address,
			OnQuestions: a.OnQuestions, OnAnswers: a.OnAnswers, DelayMinutes: a.DelayMinutes, QuietStart: a.QuietStart,
			QuietEnd: a.QuietEnd, TimeZone: a.TimeZone, RotateSecret: a.RotateSecret})
	},
		mcpgo.WithDescription("Show or change how you are told of new questions and of answers to your questions when your "+
			"agent is not running: by email, a Slack or Microsoft Teams incoming webhook, a signed JSON webhook, or not at all. "+
			"Without other arguments it shows your settings; with some, it changes those and keeps the rest. Saving also "+
			"resumes notifications paused after repeated failures. A webhook's signing secret is shown only to you."),
		argAuthToken,
		mcpgo.WithString("channel", mcpgo.Enum(relay.NotifyChannels...), mcpgo.Description(
			"How to notify you: "+strings.Join(relay.NotifyChannels, ", ")+" (none turns notifications off).")),
		mcpgo.WithString("address", mcpgo.MaxLength(relay.MaxNotifyAddressLen), mcpgo.Description(
			"Your email address (channel email), or the incoming-webhook URL (slack, teams) or https URL to POST signed JSON to (webhook).")),
		mcpgo.WithBoolean("on_questions", mcpgo.Description("Notify you of questions asked of you.")),
		mcpgo.WithBoolean("on_answers", mcpgo.Description("Notify you of answers to questions you asked.")),
		mcpgo.WithInteger("delay_minutes", mcpgo.Min(0), mcpgo.Max(relay.MaxNotifyDelayMinutes), mcpgo.Description(
			"Notify you of a question only if it is still unanswered after this many minutes (0: at once).")),
		mcpgo.WithString("quiet_start", mcpgo.MaxLength(5), mcpgo.Description(
			"Start of your quiet hours, HH:MM in time_zone (notifications wait until quiet_end); empty with quiet_end empty: none.")),
		mcpgo.WithString("quiet_end", mcpgo.MaxLength(5), mcpgo.Description("End of your quiet hours, HH:MM in time_zone.")),
		mcpgo.WithString("time_zone", mcpgo.MaxLength(64), mcpgo.Description("Your IANA time zone for quiet hours, such as Europe/Berlin (default UTC).")),
		mcpgo.WithBoolean("rotate_secret", mcpgo.Description("Replace the signing secret of your webhook (channel webhook).")),
		annotations("Notification settings", false, false, true, true),
	)
}
