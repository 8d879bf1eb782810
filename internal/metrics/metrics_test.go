package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// seriesName matches the names of ctalk's series in the docs and the dashboard.
var seriesName = regexp.MustCompile(`\bctalk_[a-z_]+`)

// TestSeriesDocumented: every ctalk_ series is in the operator's table, and
// the table and the Grafana dashboard name no series that does not exist.
func TestSeriesDocumented(t *testing.T) {
	m := New("test")
	m.DeclareTools("ask_person")
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var exported []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "ctalk_") {
			exported = append(exported, f.GetName())
		}
	}
	if len(exported) < 12 {
		t.Fatalf("exported ctalk series = %v, want at least 12", exported)
	}
	for _, doc := range []string{"../../docs/operations.md", "../../docs/grafana-dashboard.json"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatalf("read %s: %v", doc, err)
		}
		named := map[string]bool{}
		for _, n := range seriesName.FindAllString(string(b), -1) {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base := strings.TrimSuffix(n, suffix); base != n && slices.Contains(exported, base) {
					n = base
				}
			}
			named[strings.TrimSuffix(n, "_")] = true
		}
		for n := range named {
			if !slices.Contains(exported, n) && !strings.HasSuffix(n, "_") {
				t.Errorf("%s names %s, which ctalk does not export", doc, n)
			}
		}
		if strings.HasSuffix(doc, ".md") {
			for _, n := range exported {
				if !named[n] {
					t.Errorf("%s does not describe %s", doc, n)
				}
			}
		}
	}
}

// TestNilRecordsNothing: every recording method of a nil *Metrics is a no-op,
// so the packages that record need no checks.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.DeclareTools("whoami")
	m.ToolCall("whoami", OK, time.Millisecond)
	m.WaitWoken(time.Millisecond)
	m.EventDelivered(time.Millisecond)
	m.HashWaited(time.Millisecond)
	m.Locked(LockAccount)
	m.Refused(RefusedAddress)
	m.WatchRelay(nil, nil, nil)
	m.WatchStore(nil)
	m.NotificationAttempt("email", "sent")
	m.WatchNotifications(nil)
}

// BenchmarkToolCall is what every tool call pays to be counted.
func BenchmarkToolCall(b *testing.B) {
	m := New("bench")
	m.DeclareTools("ask_person")
	for b.Loop() {
		m.ToolCall("ask_person", OK, 3*time.Millisecond)
	}
}
