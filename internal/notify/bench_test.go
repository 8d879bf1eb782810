package notify_test

// Benchmarks of notifications, on both backends:
//
//	CTALK_TEST_DATABASE_URL=postgres://... go test -run '^$' -bench Deliver -benchtime 1x ./internal/notify
//
// BenchmarkDeliver10k: one worker (one replica's) drains 10,000 queued
// notifications to a local webhook receiver; notifications/s is its rate.
// (ask_person's latency with notifications on and off is
// BenchmarkAskPersonNotify in internal/relay.)

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/internal/testkit"
)

// queue stores n questions to bob in one transaction; the trigger queues
// a notification for each.
func queue(b *testing.B, s db.Store, n int, at time.Time) {
	b.Helper()
	err := s.InTx(context.Background(), func(q db.Queries) error {
		for i := range n {
			id, seq, err := q.AllocateMessage(context.Background(), "acme")
			if err != nil {
				return err
			}
			if err := q.CreateMessage(context.Background(), db.Message{OrgID: "acme", ID: id, FromUserID: "amy", ToUserID: "bob",
				Question: fmt.Sprint("question ", i), AskedAt: at, AskedSeq: seq, ThreadID: id}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkDeliver10k(b *testing.B) {
	const n = 10_000
	for _, backend := range dbtest.Backends {
		b.Run(backend, func(b *testing.B) {
			s := dbtest.Open(b, dbtest.NewConfig(b, backend))
			rcv := testkit.StartReceiver(b, nil)
			team(b, s, "acme", "amy", "bob")
			settings(b, s, db.NotificationSettings{OrgID: "acme", UserID: "bob", Channel: db.ChannelSlack, Address: rcv.URL, OnQuestions: true})
			w := notify.NewWorker(notify.Config{Store: s, Guard: local})
			var took time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				queue(b, s, n, time.Now().UTC().Truncate(time.Microsecond))
				b.StartTimer()
				start := time.Now()
				if _, err := w.Drain(context.Background()); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
			}
			b.StopTimer()
			if got := len(rcv.Delivered()); got != n*b.N {
				b.Fatalf("delivered %d distinct notifications, want %d", got, n*b.N)
			}
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "notifications/s")
		})
	}
}
