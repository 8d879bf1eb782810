package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// logRecords splits captured JSON log output into records.
func logRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// wantNoSecrets fails if the log output contains any of the secrets.
func wantNoSecrets(t *testing.T, logs string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("log output contains %q (an argument value):\n%s", s, logs)
		}
	}
}

// TestUnexpectedErrorIsInternal: a failure the tools do not expect (here a
// closed database) is shown as "internal error" and logged once per call,
// with the tool's name and without any argument.
func TestUnexpectedErrorIsInternal(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		h := newHarness(t, s, Options{})
		umar, _ := h.team()
		const question = "Is the launch code still swordfish-7731?"
		calls := []struct {
			name string
			args map[string]any
		}{
			{"login", map[string]any{"org_id": "acme", "user_id": "umar", "password": testUserPassword}},
			{"register_user", map[string]any{"org_id": "acme", "admin_password": testAdminPassword, "user_id": "zed",
				"name": "Zed", "password": testUserPassword, "ownership": "x"}},
			{"ask_person", map[string]any{"auth_token": umar, "to_user_id": "john", "question": question}},
			{"check_replies", map[string]any{"auth_token": umar}},
		}
		before := len(logRecords(t, h.logs.String()))
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for _, c := range calls {
			if got := h.fail(c.name, c.args); got != errInternal.Error() {
				t.Errorf("%s on a closed store = %q, want %q", c.name, got, errInternal.Error())
			}
		}

		logs := h.logs.String()
		recs := logRecords(t, logs)[before:]
		if len(recs) != len(calls) {
			t.Fatalf("%d calls logged %d records, want one each:\n%s", len(calls), len(recs), logs)
		}
		for i, r := range recs {
			if r["level"] != "ERROR" || r["tool"] != calls[i].name {
				t.Errorf("log record %d = %v, want level ERROR and tool %s", i, r, calls[i].name)
			}
		}
		wantNoSecrets(t, logs, testUserPassword, testAdminPassword, umar, question, "swordfish")
	})
}

// panicStore panics on every transaction, standing in for a bug in a handler.
type panicStore struct{ db.Store }

func (panicStore) InTx(context.Context, func(db.Queries) error) error { panic("store exploded") }
func (panicStore) View(context.Context, func(db.Queries) error) error { panic("store exploded") }

// TestPanicIsInternal: a panic in a tool becomes "internal error" for the
// model, one log record with the stack, and never takes the server down.
func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, panicStore{}, Options{})
	const question = "Please forward my password hunter2-hunter2"
	token := "ctalk_" + strings.Repeat("Z", 43)
	calls := []struct {
		name string
		args map[string]any
	}{
		{"login", map[string]any{"org_id": "acme", "user_id": "umar", "password": testUserPassword}},
		{"ask_person", map[string]any{"auth_token": token, "to_user_id": "john", "question": question}},
	}
	for _, c := range calls {
		if got := h.fail(c.name, c.args); got != errInternal.Error() {
			t.Errorf("%s panicking = %q, want %q", c.name, got, errInternal.Error())
		}
	}
	logs := h.logs.String()
	recs := logRecords(t, logs)
	if len(recs) != len(calls) {
		t.Fatalf("%d panicking calls logged %d records, want one each:\n%s", len(calls), len(recs), logs)
	}
	for i, r := range recs {
		if r["level"] != "ERROR" || r["tool"] != calls[i].name || r["panic"] != "store exploded" || r["stack"] == nil {
			t.Errorf("log record %d = %v, want level ERROR, tool %s, the panic and a stack", i, r, calls[i].name)
		}
	}
	wantNoSecrets(t, logs, testUserPassword, token, question, "hunter2")
}
