package relay

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Reply is an answer to a question the caller asked.
type Reply struct {
	MessageID  int64     `json:"message_id"`
	ThreadID   int64     `json:"thread_id"`
	AnsweredBy Person    `json:"answered_by"`
	Question   string    `json:"question"`
	Answer     string    `json:"answer"`
	AskedAt    time.Time `json:"asked_at"`
	AnsweredAt time.Time `json:"answered_at"`
}

// Replies is a page of answers to the caller's questions.
type Replies struct {
	Replies  []Reply `json:"replies"`
	Cursor   string  `json:"cursor"`
	More     bool    `json:"more"`
	Notice   string  `json:"notice"`
	NextStep string  `json:"next_step"`
}

// DefaultSince is the seed's default for check_replies: every reply.
const DefaultSince = "1970-01-01T00:00:00+00:00"

// CheckReplies lists answers to the caller's questions in the order they
// were sent: those after cursor answered at or after since (an RFC 3339
// time; "" for every reply), and every one not shown to the caller yet.
func (s *Service) CheckReplies(ctx context.Context, cred Credentials, sinceArg, cursor string) (Replies, error) {
	sinceText := strings.TrimSpace(sinceArg)
	if sinceText == "" {
		sinceText = DefaultSince
	}
	since, err := time.Parse(time.RFC3339Nano, sinceText)
	if err != nil {
		return Replies{}, badInput("since must be an RFC 3339 time such as 2026-01-02T15:04:05Z (or omit it for every reply)")
	}
	var after int64
	if c := strings.TrimSpace(cursor); c != "" {
		after, err = strconv.ParseInt(c, 10, 64)
		if err != nil || after < 0 {
			return Replies{}, badInput("cursor must be the cursor value from a previous check_replies result (or omit it)")
		}
	}
	var (
		res   Replies
		c     caller
		seen  int64
		shown int64 // the highest sequence number returned
	)
	err = s.store.View(ctx, func(q db.Queries) (err error) {
		if c, err = s.authenticate(ctx, q, cred); err != nil {
			return err
		}
		// Answers above the user's seen mark committed after their last
		// check: they come back whatever since says (a slow commit, or a
		// replica with a slow clock, can stamp an answer before a poll that
		// could not yet see it).
		seen = c.user.RepliesSeenSeq
		rows, err := q.ListReplies(ctx, c.user.OrgID, c.user.ID, since.UTC(), after, seen, repliesPage+1)
		if err != nil {
			return err
		}
		res = Replies{Notice: UntrustedNotice}
		res.Replies, res.More = onePage(rows, repliesPage, func(r db.Reply) Reply {
			after = *r.AnsweredSeq
			shown = after
			return Reply{
				MessageID: r.ID, ThreadID: r.ThreadID, AnsweredBy: Person{UserID: r.ToUserID, Name: r.RecipientName},
				Question: r.Question, Answer: *r.AnswerText, AskedAt: r.AskedAt, AnsweredAt: *r.AnsweredAt,
			}
		})
		res.Cursor = strconv.FormatInt(after, 10)
		res.NextStep = "To see only newer replies next time, pass this cursor to check_replies; it never skips a reply."
		if res.More {
			res.NextStep = "More replies wait: call check_replies again with this cursor."
		}
		return nil
	})
	if err != nil || shown <= seen {
		return res, err
	}
	// Record what the caller has now been shown. A reply committed since
	// the read above has a higher sequence number, so it stays unseen.
	err = s.store.InTx(ctx, func(q db.Queries) error { return q.MarkRepliesSeen(ctx, c.user.OrgID, c.user.ID, shown) })
	return res, err
}
