package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/relayclient"
)

// resumeCursor returns where the channel resumes: its stored cursor, or
// "latest" the first time. first reports the latter: the first call then
// waits 0 seconds, so the relay's current position is stored at once and no
// event from then on is skipped, even if this process dies before one comes.
func resumeCursor(f credentials.Cursor) (cursor string, first bool) {
	if cur := f.Load(); cur != "" {
		return cur, false
	}
	return "latest", true
}

// pushEvents waits on the relay and writes each event to Claude Code as a
// channel notification, moving the stored cursor past an event only once
// its notification is written. It returns when ctx ends or stdout fails.
func (b *state) pushEvents(ctx context.Context) {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return
	}
	cursors := credentials.NewCursor(b.dir, "channel", b.cred)
	backoff := time.Second
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
		return true
	}
	cursor, first := resumeCursor(cursors)
	warned := false
	for ctx.Err() == nil {
		seconds := relayclient.MaxWaitSeconds
		if first {
			seconds = 0
		}
		res, err := b.relay.WaitForMessages(ctx, cursor, seconds)
		if ctx.Err() != nil {
			return
		}
		var refused *relayclient.ToolError
		if errors.As(err, &refused) {
			// The relay refused the token (expired, revoked): say so once in
			// the session, then wait for a new `ctalk login`.
			b.logger.Warn("relay refused the stored login", "err", refused.Message)
			if !warned {
				warned = true
				b.notify(fmt.Sprintf("ctalk cannot receive messages: the relay at %s refused your stored login (%s). %s",
					b.cred.Relay, refused.Message, b.loginHint()), map[string]string{"kind": "error"})
			}
			if !pause() {
				return
			}
			if b.reload() {
				warned, backoff = false, time.Second
			}
			continue
		} else if err != nil {
			b.logger.Warn("waiting for messages failed; retrying", "err", err, "retry_in", backoff)
			if !pause() {
				return
			}
			continue
		}
		backoff, first = time.Second, false
		for _, e := range res.Events {
			if err := b.notify(channelContent(e), channelMeta(e)); err != nil {
				b.logger.Error("cannot write to Claude Code; stopping the channel", "err", err)
				return
			}
			cursor = e.Cursor
			if err := cursors.Save(cursor); err != nil {
				b.logger.Warn("cannot store the channel cursor", "err", err)
			}
		}
		if len(res.Events) == 0 && res.Cursor != "" && res.Cursor != cursor {
			cursor = res.Cursor // "latest", resolved
			if err := cursors.Save(cursor); err != nil {
				b.logger.Warn("cannot store the channel cursor", "err", err)
			}
		}
	}
}

// notify writes one channel notification to Claude Code.
func (b *state) notify(content string, meta map[string]string) error {
	line, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  channelMethod,
		"params":  map[string]any{"content": content, "meta": meta},
	})
	if err != nil {
		return err
	}
	_, err = b.out.Write(append(line, '\n'))
	return err
}

// channelContent is what Claude reads: who asks or answers what. The
// coworker's text is quoted, never merged into instructions. A turn of a
// conversation (a follow-up, a question asked back, an answer to one) says
// which conversation it continues: get_thread shows its earlier turns.
func channelContent(e relayclient.Event) string {
	who := fmt.Sprintf("%s (%s)", e.From.Name, e.From.UserID)
	continues := ""
	if e.ThreadID != 0 && e.ThreadID != e.MessageID {
		continues = fmt.Sprintf(", continues conversation %d", e.ThreadID)
	}
	switch e.Kind {
	case "answer":
		return fmt.Sprintf("%s answers your question (message %d%s, %q): %s", who, e.MessageID, continues,
			relayclient.Clip(e.Question, 200), e.Answer)
	default:
		s := fmt.Sprintf("%s asks you (message %d%s): %s", who, e.MessageID, continues, e.Question)
		if continues != "" {
			s = fmt.Sprintf("%s asks a follow-up (message %d%s; get_thread %d shows the earlier turns): %s",
				who, e.MessageID, continues, e.MessageID, e.Question)
		}
		if e.AlreadyAnswered {
			s += "\n(You have answered this one already.)"
		}
		return s
	}
}

// channelMeta becomes attributes of the <channel> tag: keys are letters,
// digits and underscores only, values strings.
func channelMeta(e relayclient.Event) map[string]string {
	meta := map[string]string{
		"message_id": fmt.Sprint(e.MessageID),
		"from":       e.From.UserID,
		"kind":       e.Kind,
	}
	if e.ThreadID != 0 { // a relay older than conversations sends none
		meta["thread_id"] = fmt.Sprint(e.ThreadID)
	}
	return meta
}
