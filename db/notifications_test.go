package db_test

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
)

// setNotify saves a person's notification settings.
func setNotify(t *testing.T, s db.Store, orgID, userID, channel string, questions, answers bool, delay int) {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		return q.SaveNotificationSettings(t.Context(), db.NotificationSettings{OrgID: orgID, UserID: userID, Channel: channel,
			Address: userID + "@example.com", OnQuestions: questions, OnAnswers: answers, DelaySeconds: delay,
			TimeZone: "UTC", UpdatedAt: t0})
	})
}

// claim claims every notification due at now.
func claim(t *testing.T, s db.Store, now time.Time) []db.NotificationDelivery {
	t.Helper()
	var out []db.NotificationDelivery
	mustTx(t, s, func(q db.Queries) (err error) {
		out, err = q.ClaimNotifications(t.Context(), now, now.Add(time.Minute), 100)
		return err
	})
	return out
}

// TestNotificationOutbox: the triggers write a notification in the
// transaction that asks or answers, only for people whose settings want
// it, due after their delay; a claim leases it (a second claim before the
// lease ends gets nothing, after it gets it again) and it is finished once.
func TestNotificationOutbox(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob", "cal", "dan")
		setNotify(t, s, "a", "bob", db.ChannelEmail, true, false, 0)
		setNotify(t, s, "a", "cal", db.ChannelNone, true, true, 0)
		setNotify(t, s, "a", "amy", db.ChannelWebhook, false, true, 0)
		setNotify(t, s, "a", "dan", db.ChannelSlack, true, false, 90)

		m := ask(t, s, "a", "amy", "bob", "Where is the runbook?", t0)
		ask(t, s, "a", "amy", "cal", "Channel none: nothing", t0)
		ask(t, s, "a", "bob", "amy", "amy wants no questions", t0)
		delayed := ask(t, s, "a", "amy", "dan", "Delayed", t0)

		got := claim(t, s, t0)
		if len(got) != 1 || got[0].UserID != "bob" || got[0].Kind != db.NotifyQuestion || got[0].MessageID != m.ID ||
			got[0].FromName != "Name of amy" || got[0].Attempts != 1 || got[0].Channel != db.ChannelEmail ||
			got[0].Question != "Where is the runbook?" || got[0].Excerpts {
			t.Fatalf("claim at t0 = %+v, want bob's question only, excerpts off", got)
		}
		if again := claim(t, s, t0.Add(30*time.Second)); len(again) != 0 {
			t.Fatalf("claim during the lease = %+v, want nothing", again)
		}
		// The delayed question is due 90 s after it was asked (SQLite
		// computes the time in SQL: it must compare as a time).
		if d := claim(t, s, t0.Add(89*time.Second)); len(d) != 1 || d[0].UserID != "bob" {
			t.Fatalf("claim at +89s = %+v, want bob's again (lease over), not dan's", d)
		}
		if d := claim(t, s, t0.Add(3*time.Minute)); len(d) != 2 || d[0].UserID != "bob" || d[1].MessageID != delayed.ID || d[1].Attempts != 1 {
			t.Fatalf("claim at +3m = %+v, want bob's (third attempt) and dan's delayed question", d)
		}
		var first, second bool
		mustTx(t, s, func(q db.Queries) (err error) {
			first, err = q.FinishNotification(ctx, got[0].ID, db.OutcomeSent, "", t0)
			return err
		})
		mustTx(t, s, func(q db.Queries) (err error) {
			second, err = q.FinishNotification(ctx, got[0].ID, db.OutcomeSent, "", t0)
			return err
		})
		if !first || second {
			t.Errorf("FinishNotification twice = %v, %v; want true, false", first, second)
		}

		answer(t, s, m, "In the wiki", t0.Add(time.Hour))
		if d := claim(t, s, t0.Add(2*time.Hour)); len(d) != 2 || d[1].UserID != "amy" || d[1].Kind != db.NotifyAnswer ||
			d[1].AnswerText == nil || *d[1].AnswerText != "In the wiki" {
			t.Fatalf("claim after the answer = %+v, want dan's retry and amy's answer", d)
		}
		var pending int64
		view(t, s, func(q db.Queries) (err error) {
			pending, err = q.CountPendingNotifications(ctx)
			return err
		})
		if pending != 2 {
			t.Errorf("pending = %d, want 2", pending)
		}
	})
}

// TestNotificationFailures: a failure is counted per endpoint, a pause
// happens once, saving the settings clears both, and only failed rows of
// the organization are listed.
func TestNotificationFailures(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"amy", "bob"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		setNotify(t, s, "a", "bob", db.ChannelWebhook, true, false, 0)
		setNotify(t, s, "b", "bob", db.ChannelWebhook, true, false, 0)
		ask(t, s, "a", "amy", "bob", "q", t0)
		ask(t, s, "b", "amy", "bob", "q", t0)
		got := claim(t, s, t0)
		if len(got) != 2 {
			t.Fatalf("claimed %d, want 2", len(got))
		}
		mustTx(t, s, func(q db.Queries) error {
			for _, d := range got {
				if _, err := q.FinishNotification(ctx, d.ID, db.OutcomeFailed, "HTTP 500 from the receiver", t0); err != nil {
					return err
				}
			}
			n, err := q.NotificationFailed(ctx, "a", "bob")
			if err != nil || n != 1 {
				t.Errorf("NotificationFailed = %d, %v", n, err)
			}
			if n, _ = q.NotificationFailed(ctx, "a", "bob"); n != 2 {
				t.Errorf("second NotificationFailed = %d", n)
			}
			if ok, err := q.PauseNotifications(ctx, "a", "bob", t0, "5 failed deliveries"); !ok || err != nil {
				t.Errorf("PauseNotifications = %v, %v", ok, err)
			}
			if ok, _ := q.PauseNotifications(ctx, "a", "bob", t0, "again"); ok {
				t.Error("second PauseNotifications paused again")
			}
			return nil
		})
		var failed []db.FailedNotification
		var st db.NotificationSettings
		view(t, s, func(q db.Queries) (err error) {
			if failed, err = q.ListFailedNotifications(ctx, "a", 1<<62, 10); err != nil {
				return err
			}
			st, err = q.GetNotificationSettings(ctx, "a", "bob")
			return err
		})
		if len(failed) != 1 || failed[0].UserID != "bob" || failed[0].LastError != "HTTP 500 from the receiver" || failed[0].ID != got[0].ID {
			t.Errorf("failed of a = %+v, want its one row", failed)
		}
		if st.PausedAt == nil || st.Failures != 2 || st.PauseReason != "5 failed deliveries" {
			t.Errorf("settings = %+v, want paused with 2 failures", st)
		}
		// A paused endpoint gets no new rows.
		ask(t, s, "a", "amy", "bob", "while paused", t0)
		ask(t, s, "b", "amy", "bob", "b is not paused", t0)
		if d := claim(t, s, t0.Add(time.Hour)); len(d) != 1 || d[0].OrgID != "b" {
			t.Errorf("claim while a/bob is paused = %+v, want only b's", d)
		}
		setNotify(t, s, "a", "bob", db.ChannelWebhook, true, false, 0)
		view(t, s, func(q db.Queries) (err error) {
			st, err = q.GetNotificationSettings(ctx, "a", "bob")
			return err
		})
		if st.PausedAt != nil || st.Failures != 0 {
			t.Errorf("settings after saving = %+v, want the pause and failures cleared", st)
		}
	})
}

// TestNotificationCascade: deleting a conversation or an organization
// deletes its notifications and settings.
func TestNotificationCascade(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob")
		setNotify(t, s, "a", "bob", db.ChannelEmail, true, false, 0)
		mustTx(t, s, func(q db.Queries) error {
			return q.SaveOrgNotificationSettings(ctx, db.OrgNotificationSettings{OrgID: "a", Excerpts: true, UpdatedAt: t0})
		})
		m := ask(t, s, "a", "amy", "bob", "q", t0)
		ask(t, s, "a", "amy", "bob", "q2", t0)
		mustTx(t, s, func(q db.Queries) error {
			_, err := q.DeleteConversation(ctx, db.Conversation{OrgID: "a", ThreadID: m.ThreadID})
			return err
		})
		if d := claim(t, s, t0); len(d) != 1 || d[0].Question != "q2" || !d[0].Excerpts {
			t.Fatalf("claim after deleting a conversation = %+v, want q2's only, excerpts on", d)
		}
		mustTx(t, s, func(q db.Queries) error {
			_, err := q.DeleteOrganization(ctx, "a")
			return err
		})
		view(t, s, func(q db.Queries) error {
			if n, err := q.CountPendingNotifications(ctx); err != nil || n != 0 {
				t.Errorf("pending after deleting the organization = %d, %v", n, err)
			}
			if _, err := q.GetNotificationSettings(ctx, "a", "bob"); err != db.ErrNotFound {
				t.Errorf("settings after deleting the organization: %v, want ErrNotFound", err)
			}
			if _, err := q.GetOrgNotificationSettings(ctx, "a"); err != db.ErrNotFound {
				t.Errorf("org settings after deleting the organization: %v, want ErrNotFound", err)
			}
			return nil
		})
	})
}
