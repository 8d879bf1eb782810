package notify_test

// Benchmarks of notifications, on both backends:
//
//	CTALK_TEST_DATABASE_URL=postgres://... go test -run '^$' -bench Deliver -benchtime 1x ./internal/notify
//
// BenchmarkDeliver10k: one worker (one replica's) drains 10,000 queued
// notifications to a local webhook receiver; notifications/s is its rate.
// BenchmarkAskPersonNotify: ask_person's latency with notifications on
// and off.

import (
	"context"
	"fmt"
	"slices"
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

// BenchmarkAskPersonNotify is ask_person's latency to a recipient with
// notifications off (no settings: the trigger's one index probe) and on (a
// webhook: the trigger also writes the outbox row), alternating the two in
// one run so that load on the machine hits both alike; "rules" calls the
// rules directly, "mcp" goes as a client does (JSON-RPC over HTTP to /mcp
// of the real server):
//
//	CTALK_TEST_DATABASE_URL=postgres://... go test -run '^$' -bench AskPersonNotify -benchtime 2000x ./internal/notify
//
// It reports the median and p90 of each, and on/off of the medians.
func BenchmarkAskPersonNotify(b *testing.B) {
	for _, backend := range dbtest.Backends {
		for _, via := range []string{"rules", "mcp"} {
			b.Run(backend+"/"+via, func(b *testing.B) {
				s := dbtest.Open(b, dbtest.NewConfig(b, backend))
				rules := relay.New(s, relay.Options{HashConcurrency: 2})
				endpoint := testkit.ServeMCP(b, server.Handler(server.Config{Store: s, Relay: rules,
					MCP: mcp.NewServer(nil, mcp.Options{Relay: rules})}))
				clients := testkit.Team{AdminPassword: "bench-admin-password-0123", UserPassword: "bench-user-password-0123",
					Users: []string{"amy", "off", "on"}}.Seed(b, endpoint)
				settings(b, s, db.NotificationSettings{OrgID: "acme", UserID: "on", Channel: db.ChannelWebhook,
					Address: "https://hooks.example.com/x", Secret: "whsec_x", OnQuestions: true, OnAnswers: true})
				login, err := rules.Login(context.Background(), "acme", "amy", "bench-user-password-0123")
				if err != nil {
					b.Fatal(err)
				}
				ask := func(to string, i int) {
					q := fmt.Sprint("How do retries work? ", i)
					if via == "mcp" {
						testkit.Ask(b, clients["amy"], to, q)
					} else if _, err := rules.Ask(context.Background(), relay.Credentials{Token: login.AuthToken}, to, q); err != nil {
						b.Fatal(err)
					}
				}
				onOff(b, ask)
			})
		}
	}
}

// onOff times ask to "off" and to "on" b.N times each, alternating which
// goes first, after a warm-up, and reports the medians, p90s and the
// ratio of the medians.
func onOff(b *testing.B, ask func(to string, i int)) {
	var off, on []time.Duration
	timed := func(to string, i int) {
		start := time.Now()
		ask(to, i)
		if to == "on" {
			on = append(on, time.Since(start))
		} else {
			off = append(off, time.Since(start))
		}
	}
	for i := range 50 {
		timed("off", i)
		timed("on", i)
	}
	off, on = off[:0], on[:0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			timed("off", i)
			timed("on", i)
		} else {
			timed("on", i)
			timed("off", i)
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	offP50, onP50 := pct(off, 0.5), pct(on, 0.5)
	b.ReportMetric(offP50, "off-p50-µs")
	b.ReportMetric(pct(off, 0.9), "off-p90-µs")
	b.ReportMetric(onP50, "on-p50-µs")
	b.ReportMetric(pct(on, 0.9), "on-p90-µs")
	b.ReportMetric(onP50/offP50, "on/off-p50")
}
