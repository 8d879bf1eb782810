package bridge

import (
	"bufio"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// modernMeta is the _meta of a 2026-07-28 request from client name.
func modernMeta(name string, caps map[string]any) map[string]any {
	return map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": name, "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
}

// discoverVersions asks the bridge's server/discover which versions it offers.
func discoverVersions(t *testing.T, p *stdioPeer, name string, caps map[string]any) []string {
	t.Helper()
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(p.call(t, "server/discover", modernMeta(name, caps)), &res); err != nil {
		t.Fatal(err)
	}
	return res.SupportedVersions
}

// TestBridgeChannel: Claude Code, which takes channel events only on a
// connection older than 2026-07-28, is offered the older versions alone;
// once it has initialized the bridge long-polls the relay and writes each
// question as a channel event, even if notifications/initialized never
// comes. A client that does not take channels keeps 2026-07-28.
func TestBridgeChannel(t *testing.T) {
	t.Parallel()
	team := testkit.Pair
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint, umar := seededRelay(t, s, team)

		other := startBridge(t, endpoint, team, "john")
		p := &stdioPeer{in: other.in, out: bufio.NewScanner(other.out)}
		if v := discoverVersions(t, p, "some-host", map[string]any{}); !slices.Contains(v, "2026-07-28") {
			t.Errorf("versions offered to a client without channels = %v, want 2026-07-28 among them", v)
		}
		if v := discoverVersions(t, p, "some-host", map[string]any{"experimental": map[string]any{"claude/channel": map[string]any{}}}); slices.Contains(v, "2026-07-28") || !slices.Contains(v, "2025-11-25") {
			t.Errorf("versions offered to a client declaring claude/channel = %v, want 2025-11-25 and not 2026-07-28", v)
		}
		other.stop(t)

		br := startBridge(t, endpoint, team, "john")
		p = &stdioPeer{in: br.in, out: bufio.NewScanner(br.out)}
		p.out.Buffer(nil, 1<<20)
		if v := discoverVersions(t, p, "claude-code", map[string]any{"elicitation": map[string]any{}}); slices.Contains(v, "2026-07-28") || !slices.Contains(v, "2025-11-25") {
			t.Errorf("versions offered to Claude Code = %v, want 2025-11-25 and not 2026-07-28", v)
		}
		p.call(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "claude-code", "version": "0"}})
		// No notifications/initialized: the first request after initialize starts the channel.
		p.call(t, "tools/list", map[string]any{})
		waitForChannel(t, endpoint, team, br)

		if err := umar.Call(t.Context(), "ask_person", map[string]any{"to_user_id": "john", "question": "Who owns billing?"}, nil); err != nil {
			t.Fatal(err)
		}
		got := false
		for !got && p.out.Scan() {
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Content string            `json:"content"`
					Meta    map[string]string `json:"meta"`
				} `json:"params"`
			}
			if json.Unmarshal(p.out.Bytes(), &msg) != nil || msg.Method != channelMethod {
				continue
			}
			if !strings.Contains(msg.Params.Content, "Who owns billing?") || msg.Params.Meta["kind"] != "question" || msg.Params.Meta["from"] != "umar" {
				t.Errorf("channel event = %+v, want umar's question", msg.Params)
			}
			got = true
		}
		if !got {
			t.Errorf("the bridge closed stdout without writing the channel event: %v", p.out.Err())
		}
		br.stop(t)
	})
}

// waitForChannel returns once the bridge's channel has stored its
// position at the relay (its first call waits 0 seconds to do so), so that
// a question asked from now on is one it must deliver.
func waitForChannel(t *testing.T, endpoint string, team testkit.Team, br *bridgeRun) {
	t.Helper()
	for br.cursor.Load() == "" {
		if t.Context().Err() != nil {
			t.Fatal("the bridge never started its channel")
		}
		team.Connect(t, endpoint, br.token) // a round trip to the relay as the pause: no clock in tests
	}
}
