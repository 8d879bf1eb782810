package notify

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/ctalk/ctalk/db"
)

// What a notification says: who asked (or answered), an excerpt only when
// the organization allows one, and a link to the conversation in the web
// app when the server knows its public address. The same content is
// rendered as plain-text email, Slack and Teams messages and the generic
// webhook's JSON.

// ExcerptRunes bounds an excerpt.
const ExcerptRunes = 200

// content is a notification's words, before any channel's format.
type content struct {
	id      int64
	event   string // "question.asked" or "answer.received"
	title   string // "Amy Wong (amy) asked you a question in ctalk"
	excerpt string // "" when the organization allows none
	link    string // "" without CTALK_PUBLIC_URL
	d       db.NotificationDelivery
	// other is who acted: the asker of a question, the answerer of an answer.
	otherID, otherName string
}

// describe gives a claimed notification its words.
func describe(d db.NotificationDelivery, publicURL string) content {
	c := content{id: d.ID, d: d}
	text := d.Question
	if d.Kind == db.NotifyAnswer {
		c.event, c.otherID, c.otherName = "answer.received", d.ToUserID, d.ToName
		c.title = d.ToName + " (" + d.ToUserID + ") answered your question in ctalk"
		if d.AnswerText != nil {
			text = *d.AnswerText
		}
	} else {
		c.event, c.otherID, c.otherName = "question.asked", d.FromUserID, d.FromName
		c.title = d.FromName + " (" + d.FromUserID + ") asked you a question in ctalk"
	}
	if d.Excerpts {
		c.excerpt = Excerpt(text, ExcerptRunes)
	}
	if publicURL != "" {
		c.link = strings.TrimSuffix(publicURL, "/") + "/app/thread/" + strconv.FormatInt(d.MessageID, 10)
	}
	return c
}

// Excerpt shortens text to at most n runes on one line, with an ellipsis
// when it was cut; control characters become spaces.
func Excerpt(text string, n int) string {
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	r := []rune(strings.Join(strings.Fields(text), " "))
	if len(r) <= n {
		return string(r)
	}
	return strings.TrimRightFunc(string(r[:n-1]), unicode.IsSpace) + "…"
}

// plain is the notification as plain text (email bodies).
func (c content) plain() string {
	var b strings.Builder
	b.WriteString(c.title + ".\n\n")
	if c.excerpt != "" {
		b.WriteString("    " + c.excerpt + "\n\n")
	}
	if c.link != "" {
		b.WriteString("Open the conversation: " + c.link + "\n")
	} else if c.d.Kind == db.NotifyQuestion {
		b.WriteString("Answer it from your ctalk inbox (check_inbox in your agent, or the web app).\n")
	} else {
		b.WriteString("Read it with check_replies in your agent, or in the web app.\n")
	}
	b.WriteString("\nYou get this because of your ctalk notification settings (notification_settings, or the web app's settings page).\n")
	return b.String()
}

// subject is the email subject.
func (c content) subject() string {
	if c.d.Kind == db.NotifyAnswer {
		return "ctalk: " + c.otherName + " answered your question"
	}
	return "ctalk: " + c.otherName + " asked you a question"
}
