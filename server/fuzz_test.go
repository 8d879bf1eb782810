package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// FuzzMCPRequest posts arbitrary bodies and protocol headers to /mcp on the
// real handler: every answer is a client error or a JSON-RPC reply, never a
// 5xx or a crash, and the server still answers initialize afterwards.
func FuzzMCPRequest(f *testing.F) {
	for _, seed := range []struct{ body, version string }{
		{initializeBody, ""},
		{toolsListBody, "2025-11-25"},
		{`[` + initializeBody + `,` + toolsListBody + `]`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":`, ""},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"login","arguments":{"org_id":1}}}`, "2025-11-25"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"whoami","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2026-07-28"},
		{`{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{}}`, "2026-07-28"},
		{"\x00\xff", "garbage"},
	} {
		f.Add(seed.body, seed.version)
	}
	store, err := db.Open(f.Context(), db.Config{SQLitePath: filepath.Join(f.TempDir(), "fuzz.sqlite3")})
	if err != nil {
		f.Fatalf("db.Open: %v", err)
	}
	f.Cleanup(func() { store.Close() })
	h := newHandler(store, Config{MaxBodyBytes: 64 << 10})
	post := func(body, version string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	f.Fuzz(func(t *testing.T, body, version string) {
		rec := post(body, version)
		if rec.Code >= 500 {
			b, _ := io.ReadAll(rec.Body)
			t.Fatalf("POST /mcp %q (version %q) = %d, want no 5xx\n%s", body, version, rec.Code, b)
		}
		if rec := post(initializeBody, ""); rec.Code != http.StatusOK {
			t.Fatalf("initialize after POST /mcp %q = %d, want 200", body, rec.Code)
		}
	})
}
