package mcp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden tool schemas in testdata/tools")

const goldenToolsDir = "testdata/tools"

// wireTool is the part of a tools/list entry the tests below inspect.
type wireTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	} `json:"inputSchema"`
	Annotations struct {
		ReadOnlyHint    *bool `json:"readOnlyHint"`
		DestructiveHint *bool `json:"destructiveHint"`
	} `json:"annotations"`
}

// listToolsJSON returns each tool exactly as tools/list puts it on the wire,
// keyed by name. The request goes through the server's JSON-RPC entry point,
// so the snapshot is what every client (and so every model) receives.
func listToolsJSON(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	s := NewServer(nil, Options{})
	resp := s.HandleMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatalf("marshal tools/list response: %v", err)
	}
	var msg struct {
		Result struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatalf("decode tools/list response %s: %v", b, err)
	}
	if msg.Error != nil || msg.Result.NextCursor != "" {
		t.Fatalf("tools/list = %s, want every tool on one page", b)
	}
	tools := make(map[string]json.RawMessage, len(msg.Result.Tools))
	for _, raw := range msg.Result.Tools {
		var w wireTool
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatalf("decode tool %s: %v", raw, err)
		}
		if _, dup := tools[w.Name]; dup {
			t.Errorf("tools/list lists %q twice", w.Name)
		}
		tools[w.Name] = raw
	}
	return tools
}

// canonical re-indents JSON with sorted keys so a golden diff is line by line.
func canonical(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.Bytes()
}

// TestToolSchemas compares every tool's name, description, input schema and
// annotations with its golden file: a change to what the model sees must be
// reviewed on purpose. Regenerate with: go test ./mcp -run TestToolSchemas -update
func TestToolSchemas(t *testing.T) {
	tools := listToolsJSON(t)
	if *update {
		if err := os.RemoveAll(goldenToolsDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(goldenToolsDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, raw := range tools {
		path := filepath.Join(goldenToolsDir, name+".json")
		got := canonical(t, raw)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("tool %s has no golden schema (%v): run go test ./mcp -run TestToolSchemas -update and review the new file", name, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("tool %s schema differs from %s (-want +got):\n%s\nIf the change is intended, run go test ./mcp -run TestToolSchemas -update and review the diff.", name, path, diff)
		}
	}

	files, err := filepath.Glob(filepath.Join(goldenToolsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); tools[name] == nil {
			t.Errorf("golden file %s names no tool: a tool was removed or renamed; run with -update if intended", f)
		}
	}
}

// seedTools are the seed's tools and argument names: the contract existing users rely on.
var seedTools = map[string][]string{
	"register_organization":     {"org_id", "name", "admin_password"},
	"register_user":             {"org_id", "admin_password", "user_id", "name", "password", "ownership", "notes"},
	"login":                     {"org_id", "user_id", "password"},
	"whoami":                    {"auth_token"},
	"list_users":                {"auth_token"},
	"get_user_profile":          {"auth_token", "user_id"},
	"update_my_notes":           {"auth_token", "notes"},
	"update_user_profile_notes": {"org_id", "admin_password", "user_id", "profile_notes"},
	"ask_person":                {"auth_token", "to_user_id", "question"},
	"check_inbox":               {"auth_token"},
	"propose_response":          {"auth_token", "message_id", "draft_text"},
	"send_response":             {"auth_token", "message_id", "final_text"},
	"check_replies":             {"auth_token", "since"},
}

// optionalSeedArg reports whether a seed argument may be omitted: the seed
// gave register_user's notes and check_replies' since defaults, auth_token
// may come in the Authorization header instead, and ask_person's to_user_id
// may be replaced by a topic or a conversation to continue (follow_up_to);
// a call that sends it works as the seed says. Every other seed argument is
// required, and arguments added since must be optional, so a call written
// against the seed still works.
func optionalSeedArg(tool, arg string) bool {
	return arg == "auth_token" || tool == "register_user" && arg == "notes" || tool == "check_replies" && arg == "since" ||
		tool == "ask_person" && arg == "to_user_id"
}

func TestSeedToolsKeepTheirArguments(t *testing.T) {
	t.Parallel()
	tools := listToolsJSON(t)
	for name, args := range seedTools {
		raw, ok := tools[name]
		if !ok {
			t.Errorf("seed tool %s is missing from tools/list", name)
			continue
		}
		var w wireTool
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		if w.InputSchema.Type != "object" {
			t.Errorf("%s inputSchema.type = %q, want object", name, w.InputSchema.Type)
		}
		for _, arg := range args {
			if _, ok := w.InputSchema.Properties[arg]; !ok {
				t.Errorf("%s has no argument %q; the seed's callers send it", name, arg)
			}
		}
		var wantRequired []string
		for _, arg := range args {
			if !optionalSeedArg(name, arg) {
				wantRequired = append(wantRequired, arg)
			}
		}
		got := slices.Sorted(slices.Values(w.InputSchema.Required))
		slices.Sort(wantRequired)
		if diff := cmp.Diff(wantRequired, got); diff != "" {
			t.Errorf("%s required arguments mismatch (-want +got):\n%s", name, diff)
		}
	}
}

func TestToolAnnotations(t *testing.T) {
	t.Parallel()
	// check_replies is not read-only: it records which replies the caller
	// has been shown, so that a late-committed one is never skipped.
	readOnly := []string{"whoami", "list_users", "get_user_profile", "check_inbox"}
	destructive := []string{"update_my_notes", "update_user_profile_notes"}
	for name, raw := range listToolsJSON(t) {
		var w wireTool
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		// MCP's defaults are readOnlyHint false and destructiveHint true, and
		// mcp-go sets destructive unless told otherwise: both must be explicit.
		ro, de := w.Annotations.ReadOnlyHint, w.Annotations.DestructiveHint
		if ro == nil || de == nil {
			t.Errorf("%s annotations readOnlyHint=%v destructiveHint=%v, want both set", name, ro, de)
			continue
		}
		if *ro && *de {
			t.Errorf("%s is both readOnlyHint and destructiveHint", name)
		}
		if _, seed := seedTools[name]; !seed {
			continue // tools added since the seed are reviewed through their golden files
		}
		if want := slices.Contains(readOnly, name); *ro != want {
			t.Errorf("%s readOnlyHint = %v, want %v", name, *ro, want)
		}
		if want := slices.Contains(destructive, name); *de != want {
			t.Errorf("%s destructiveHint = %v, want %v", name, *de, want)
		}
	}
}
