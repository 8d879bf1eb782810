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
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/credentials"
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
		endpoint := testkit.ServeMCP(t, server.Handler(server.Config{Store: s, MCP: mcp.NewServer(s, mcp.Options{HashConcurrency: 4})}))
		team.Seed(t, endpoint)
		login, err := team.Connect(t, endpoint, "").Login(t.Context(), "acme", "john", team.UserPassword)
		if err != nil {
			t.Fatal(err)
		}
		_, env := testkit.Home(t)
		dir, _ := credentials.Dir(testkit.Getenv(env))
		if err := credentials.Save(dir, credentials.Credentials{Relay: endpoint, Token: login.AuthToken, Org: "acme", User: "john",
			ExpiresAt: login.ExpiresAt}); err != nil {
			t.Fatal(err)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		var stderr testkit.SyncBuffer
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{Endpoint: endpoint, Version: "test", Getenv: testkit.Getenv(env), Stdin: inR, Stdout: outW,
				Stderr: &stderr, Logger: slog.New(slog.NewTextHandler(&stderr, nil))})
			outW.Close()
		}()
		p := &stdioPeer{in: inW, out: bufio.NewScanner(outR)}
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

		if err := team.Connect(t, endpoint, login.AuthToken).Call(t.Context(), "logout", nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"whoami", "check_inbox"} {
			if text, isErr := p.callTool(t, tool, map[string]any{}); !isErr || !strings.Contains(text, "revoked") || !strings.Contains(text, fix) {
				t.Errorf("%s with a revoked token = %q (isError %v), want the relay's error and %s", tool, text, isErr, fix)
			}
		}

		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("Run after stdin closed = %v, want nil", err)
		}
		if strings.Contains(stderr.String(), login.AuthToken) {
			t.Errorf("the bridge logged the token")
		}
	})
}
