package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// stdioPeer plays Claude Code on the bridge's stdin and stdout.
type stdioPeer struct {
	in   io.WriteCloser
	out  *bufio.Scanner
	next int
}

// call sends a request and returns the result of its response, skipping
// the notifications before it.
func (p *stdioPeer) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	p.next++
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.next, "method": method, "params": params})
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	for p.out.Scan() {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(p.out.Bytes(), &msg) == nil && msg.ID == p.next {
			return msg.Result
		}
	}
	t.Fatalf("%s: the bridge closed stdout without answering: %v", method, p.out.Err())
	return nil
}

// callTool returns a tool call's text and isError.
func (p *stdioPeer) callTool(t *testing.T, name string, args map[string]any) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(p.call(t, "tools/call", map[string]any{"name": name, "arguments": args}), &res); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, "\n"), res.IsError
}

// TestBridgeNeverStrands runs the bridge in process: login and logout are
// not offered and calling them says what to run in a terminal; once the
// token is revoked, every call says so too.
func TestBridgeNeverStrands(t *testing.T) {
	t.Parallel()
	team := testkit.Pair
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := serveRelay(t, s)
		team.Seed(t, endpoint)
		br := startBridge(t, endpoint, team, "john")
		p := &stdioPeer{in: br.in, out: bufio.NewScanner(br.out)}
		p.out.Buffer(nil, 1<<20)
		p.call(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "test", "version": "0"}})

		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(p.call(t, "tools/list", map[string]any{}), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		if slices.Contains(names, "login") || slices.Contains(names, "logout") || !slices.Contains(names, "whoami") {
			t.Errorf("bridge tools = %v, want whoami and the rest but not login or logout", names)
		}

		fix := fmt.Sprintf("`ctalk login --relay %s --org acme --user john` in a terminal", endpoint)
		for _, tool := range []string{"login", "logout"} {
			if text, isErr := p.callTool(t, tool, map[string]any{}); !isErr || !strings.Contains(text, fix) {
				t.Errorf("%s through the bridge = %q (isError %v), want a refusal naming %s", tool, text, isErr, fix)
			}
		}
		if text, isErr := p.callTool(t, "whoami", map[string]any{}); isErr || !strings.Contains(text, "john") {
			t.Errorf("whoami through the bridge = %q (isError %v), want john", text, isErr)
		}

		if err := team.Connect(t, endpoint, br.token).Call(t.Context(), "logout", nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"whoami", "check_inbox"} {
			if text, isErr := p.callTool(t, tool, map[string]any{}); !isErr || !strings.Contains(text, "revoked") || !strings.Contains(text, fix) {
				t.Errorf("%s with a revoked token = %q (isError %v), want the relay's error and %s", tool, text, isErr, fix)
			}
		}

		br.stop(t)
	})
}

// serveRelay serves a real relay over s until the test ends; its MCP URL.
func serveRelay(t *testing.T, s db.Store) string {
	t.Helper()
	return testkit.ServeMCP(t, server.Handler(server.Config{Store: s, MCP: mcp.NewServer(s, mcp.Options{HashConcurrency: 4})}))
}

// seededRelay serves a real relay with team registered; umar's client.
func seededRelay(t *testing.T, s db.Store, team testkit.Team) (string, *relayclient.Client) {
	t.Helper()
	endpoint := serveRelay(t, s)
	return endpoint, team.Seed(t, endpoint)["umar"]
}

// bridgeRun is a bridge running in process, logged in as one user.
type bridgeRun struct {
	in     *io.PipeWriter // the bridge's stdin
	out    *io.PipeReader // its stdout
	stderr testkit.SyncBuffer
	done   chan error
	token  string
	cursor credentials.Cursor // where the channel stores its position
	once   sync.Once          // shutdown
}

// startBridge logs user in as `ctalk login` would and starts a bridge for
// them; the test plays its client on in and out.
func startBridge(t *testing.T, endpoint string, team testkit.Team, user string) *bridgeRun {
	t.Helper()
	login, err := team.Connect(t, endpoint, "").Login(t.Context(), "acme", user, team.UserPassword)
	if err != nil {
		t.Fatal(err)
	}
	_, env := testkit.Home(t)
	dir, _ := credentials.Dir(testkit.Getenv(env))
	cred := credentials.Credentials{Relay: endpoint, Token: login.AuthToken, Org: "acme", User: user, ExpiresAt: login.ExpiresAt}
	if err := credentials.Save(dir, cred); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	br := &bridgeRun{in: inW, out: outR, done: make(chan error, 1), token: login.AuthToken,
		cursor: credentials.NewCursor(dir, "channel", cred)}
	oneBridge.Lock()
	t.Cleanup(func() { br.shutdown() })
	go func() {
		br.done <- Run(ctx, Config{Endpoint: endpoint, Version: "test", Getenv: testkit.Getenv(env), Stdin: inR, Stdout: outW,
			Stderr: &br.stderr, Logger: slog.New(slog.NewTextHandler(&br.stderr, nil))})
		outW.Close()
	}()
	return br
}

// oneBridge lets one bridge run at a time in this test process: mcp-go's
// stdio session is one per process (as `ctalk stdio` is), so two bridges
// at once would share their clients' capabilities and dialogs.
var oneBridge sync.Mutex

// shutdown closes the bridge's stdin, waits for it to end and lets the
// next bridge run; it returns Run's error, the first time only.
func (br *bridgeRun) shutdown() (err error) {
	br.once.Do(func() {
		go io.Copy(io.Discard, br.out) //nolint:errcheck // a channel event still on its way must not block the bridge's exit
		br.in.Close()
		err = <-br.done
		oneBridge.Unlock()
	})
	return err
}

// stop shuts the bridge down: it must end cleanly, without having logged
// the token.
func (br *bridgeRun) stop(t *testing.T) {
	t.Helper()
	if err := br.shutdown(); err != nil {
		t.Errorf("Run after stdin closed = %v, want nil", err)
	}
	if strings.Contains(br.stderr.String(), br.token) {
		t.Errorf("the bridge logged the token")
	}
}
