package server_test

// Helpers for the end-to-end tests: a real server.Handler over a fresh store,
// reached through the official MCP Go SDK client (which shares no code with
// mcp-go), and mirrors of the tools' JSON results as a client reads them.

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the schema back
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/ncruces/go-sqlite3/driver" // database/sql driver "sqlite3", to read the file back

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// The seed's passwords and texts, and the protocol versions the official SDK speaks to ctalk.
const (
	adminPassword     = "choose-a-long-admin-password"
	userPassword      = "choose-a-user-password"
	protocolSession   = "2025-11-25" // initialize + session
	protocolStateless = "2026-07-28" // the SDK's default: server/discover, stateless
	seedQuestion      = "What is the retry logic in alpha-repo?"
	seedAnswer        = "The retry logic uses three attempts with exponential backoff."
	johnNotes         = "Ask me about retries before noon."
	johnProfile       = "Tech lead for payments; on call this week."
)

// env is one running ctalk: the real HTTP handler over a store, with its log captured.
type env struct {
	url    string
	logs   *testkit.SyncBuffer
	logger *slog.Logger
}

// newEnv serves ctalk over store on a local port until the test ends.
func newEnv(t *testing.T, store db.Store) *env {
	t.Helper()
	e := &env{logs: &testkit.SyncBuffer{}}
	e.logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.url = serve(t, store, mcp.Options{Version: "e2e", Logger: e.logger, HashConcurrency: 4}, e.logger)
	return e
}

// serve starts server.Handler with its own mcp.Server over store and returns the /mcp URL.
func serve(t *testing.T, store db.Store, opts mcp.Options, logger *slog.Logger) string {
	t.Helper()
	// The tests' clients stand behind a proxy on loopback that adds their
	// X-Forwarded-For (see forwardedFor), as configured with CTALK_TRUSTED_PROXIES.
	loopback, err := server.ParseTrustedProxies("127.0.0.1, ::1")
	if err != nil {
		t.Fatalf("ParseTrustedProxies: %v", err)
	}
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(store, opts), Logger: logger, Version: "e2e", TrustedProxies: loopback,
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// headerTransport adds fixed headers (Authorization) to every request.
type headerTransport struct {
	base http.RoundTripper
	hdr  http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.hdr {
		r.Header[k] = vs
	}
	return h.base.RoundTrip(r)
}

// connectTo opens an official-SDK client session to url, sending bearer (if
// any) as an Authorization header, at protocol ("" is the SDK's default).
func connectTo(t *testing.T, url, bearer, protocol string) *sdk.ClientSession {
	t.Helper()
	hdr := http.Header{}
	if bearer != "" {
		hdr.Set("Authorization", "Bearer "+bearer)
	}
	return openSession(t, url, protocol, hdr, nil)
}

// openSession opens an official-SDK session to url at protocol, sending hdr
// with every request, built with opts; it closes when the test ends.
func openSession(t *testing.T, url, protocol string, hdr http.Header, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	transport := &sdk.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport, hdr}, Timeout: time.Minute},
		MaxRetries: -1,
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "ctalk-e2e", Version: "1.0.0"}, opts)
	cs, err := client.Connect(t.Context(), transport, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("Connect(%s, protocol %q): %v", url, protocol, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *env) connect(t *testing.T, bearer string) *sdk.ClientSession {
	t.Helper()
	return connectTo(t, e.url, bearer, "")
}

// args is a tool call's arguments.
type args = map[string]any

// call runs a tool and fails the test on a protocol-level error.
func call(t *testing.T, cs *sdk.ClientSession, tool string, a args) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		t.Fatalf("%s: protocol error %v, want a tool result", tool, err)
	}
	return res
}

// tryCall runs a tool from a helper goroutine, where the test may not stop:
// a protocol error comes back as an isError result that says so.
func tryCall(ctx context.Context, cs *sdk.ClientSession, tool string, a args) *sdk.CallToolResult {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "protocol error: " + err.Error()}}}
	}
	return res
}

// What refused send_response calls are named by outcome.
const (
	refusedAnswered     = "refused: already answered"
	refusedProposeFirst = "refused: not the saved draft"
)

// outcome names a send_response result: its status, or the gist of its refusal.
func outcome(res *sdk.CallToolResult) string {
	var out sentOut
	switch msg := resultText(res); {
	case !res.IsError:
		decode(res.StructuredContent, &out)
		return out.Status
	case strings.Contains(msg, "already answered"):
		return refusedAnswered
	case strings.Contains(msg, "only sends text the user has seen"):
		return refusedProposeFirst
	default:
		return "refused: " + msg
	}
}

// resultText joins a result's text content.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callOK runs a tool that must succeed, checks that it has a text rendering,
// and decodes its structured content.
func callOK[T any](t *testing.T, cs *sdk.ClientSession, tool string, a args) T {
	t.Helper()
	res := call(t, cs, tool, a)
	text := resultText(res)
	if res.IsError {
		t.Fatalf("%s: isError %q, want success", tool, text)
	}
	if strings.TrimSpace(text) == "" {
		t.Errorf("%s: result has no text content, want a text rendering for clients without structuredContent", tool)
	}
	var out T
	if err := decode(res.StructuredContent, &out); err != nil {
		t.Fatalf("%s: structuredContent %v: %v", tool, res.StructuredContent, err)
	}
	return out
}

// callErr runs a tool that must fail as a tool result (isError) and returns its text.
func callErr(t *testing.T, cs *sdk.ClientSession, tool string, a args) string {
	t.Helper()
	res := call(t, cs, tool, a)
	text := resultText(res)
	if !res.IsError {
		t.Fatalf("%s: success %q, want isError", tool, text)
	}
	if text == "" {
		t.Errorf("%s: isError result has no text, want a message saying what to do", tool)
	}
	return text
}

func decode(v any, out any) error {
	if v == nil {
		return fmt.Errorf("no structuredContent")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Mirrors of the tools' structured results, as a client sees them.
type (
	userOut struct {
		OrgID          string     `json:"org_id"`
		UserID         string     `json:"user_id"`
		Name           string     `json:"name"`
		Ownership      string     `json:"ownership"`
		Notes          string     `json:"notes"`
		ProfileNotes   string     `json:"profile_notes"`
		OrgName        string     `json:"org_name"`
		TokenExpiresAt *time.Time `json:"token_expires_at"`
	}
	usersOut struct {
		OrgID string    `json:"org_id"`
		Users []userOut `json:"users"`
	}
	eventOut struct {
		MessageID  int64  `json:"message_id"`
		FromUserID string `json:"from_user_id"`
		ToUserID   string `json:"to_user_id"`
	}
	profileOut struct {
		User         userOut `json:"user"`
		Interactions struct {
			YouAsked  int64     `json:"questions_you_asked_them"`
			TheyAsked int64     `json:"questions_they_asked_you"`
			LastQ     *eventOut `json:"last_question"`
			LastA     *eventOut `json:"last_answer"`
		} `json:"interactions_with_you"`
	}
	askOut struct {
		MessageID int64  `json:"message_id"`
		ToUserID  string `json:"to_user_id"`
		ToName    string `json:"to_name"`
		Status    string `json:"status"`
	}
	personOut struct {
		UserID    string `json:"user_id"`
		Name      string `json:"name"`
		Ownership string `json:"ownership"`
		Notes     string `json:"notes"`
	}
	inboxItemOut struct {
		MessageID int64     `json:"message_id"`
		From      personOut `json:"from"`
		Question  string    `json:"question"`
		DraftText *string   `json:"draft_text"`
	}
	inboxOut struct {
		Questions []inboxItemOut `json:"questions"`
		More      bool           `json:"more"`
		Notice    string         `json:"notice"`
	}
	draftOut struct {
		MessageID int64  `json:"message_id"`
		DraftText string `json:"draft_text"`
		Status    string `json:"status"`
	}
	sentOut struct {
		MessageID int64  `json:"message_id"`
		Status    string `json:"status"`
		FinalText string `json:"final_text"`
		ToUserID  string `json:"delivered_to_user_id"`
	}
	replyOut struct {
		MessageID  int64     `json:"message_id"`
		AnsweredBy personOut `json:"answered_by"`
		Question   string    `json:"question"`
		Answer     string    `json:"answer"`
	}
	repliesOut struct {
		Replies []replyOut `json:"replies"`
		Cursor  string     `json:"cursor"`
		More    bool       `json:"more"`
	}
)

// walkthrough plays the seed's story word for word through tool calls and
// checks what each person sees. It returns the secrets it used (passwords and
// tokens) and the message texts.
func walkthrough(t *testing.T, cs *sdk.ClientSession) (secrets, texts []string) {
	t.Helper()
	registerOrg(t, cs, "ai-company", "The AI Company")
	regArgs := func(id, name, ownership string) args {
		return args{"org_id": "ai-company", "admin_password": adminPassword, "user_id": id,
			"name": name, "password": userPassword, "ownership": ownership}
	}
	umarUser := userOut{OrgID: "ai-company", UserID: "umar", Name: "Umar", Ownership: "platform tooling"}
	johnUser := userOut{OrgID: "ai-company", UserID: "john", Name: "John", Ownership: "alpha-repo and payments-service"}
	for _, want := range []userOut{umarUser, johnUser} {
		got := callOK[userOut](t, cs, "register_user", regArgs(want.UserID, want.Name, want.Ownership))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("register_user(%s) mismatch (-want +got):\n%s", want.UserID, diff)
		}
	}
	umar, john := login(t, cs, "ai-company", "umar"), login(t, cs, "ai-company", "john")
	if umar == john {
		t.Fatalf("login gave umar and john the same token")
	}

	who := callOK[userOut](t, cs, "whoami", args{"auth_token": umar})
	if who.TokenExpiresAt == nil || !who.TokenExpiresAt.After(time.Now()) {
		t.Errorf("whoami: token_expires_at = %v, want a time in the future", who.TokenExpiresAt)
	}
	wantWho := umarUser
	wantWho.OrgName = "The AI Company"
	if diff := cmp.Diff(wantWho, who, cmpopts.IgnoreFields(userOut{}, "TokenExpiresAt")); diff != "" {
		t.Errorf("whoami(umar) mismatch (-want +got):\n%s", diff)
	}
	users := callOK[usersOut](t, cs, "list_users", args{"auth_token": john})
	slices.SortFunc(users.Users, func(a, b userOut) int { return strings.Compare(a.UserID, b.UserID) })
	if diff := cmp.Diff(usersOut{OrgID: "ai-company", Users: []userOut{johnUser, umarUser}}, users); diff != "" {
		t.Errorf("list_users mismatch (-want +got):\n%s", diff)
	}

	// ctalk ask john: What is the retry logic in alpha-repo?
	asked := callOK[askOut](t, cs, "ask_person", args{"auth_token": umar, "to_user_id": "john", "question": seedQuestion})
	if diff := cmp.Diff(askOut{MessageID: 1, ToUserID: "john", ToName: "John", Status: "pending"}, asked); diff != "" {
		t.Errorf("ask_person mismatch (-want +got):\n%s", diff)
	}
	// ctalk check my inbox.
	inbox := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john})
	wantItem := inboxItemOut{MessageID: 1, Question: seedQuestion,
		From: personOut{UserID: "umar", Name: "Umar", Ownership: "platform tooling"}}
	if diff := cmp.Diff([]inboxItemOut{wantItem}, inbox.Questions); diff != "" {
		t.Errorf("check_inbox(john) mismatch (-want +got):\n%s", diff)
	}
	if inbox.Notice == "" {
		t.Errorf("check_inbox(john): no notice marking the question as the sender's words")
	}
	if got := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": umar}); len(got.Questions) != 0 {
		t.Errorf("check_inbox(umar) = %+v, want no questions: umar asked, john was asked", got.Questions)
	}
	// ctalk propose a response to message 1: …
	draft := callOK[draftOut](t, cs, "propose_response", args{"auth_token": john, "message_id": 1, "draft_text": seedAnswer})
	if draft.MessageID != 1 || draft.DraftText != seedAnswer || !strings.Contains(draft.Status, "NOT sent") {
		t.Errorf("propose_response = %+v, want message 1, the draft, status saying it was not sent", draft)
	}
	inbox = callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john})
	wantItem.DraftText = ptr(seedAnswer)
	if diff := cmp.Diff([]inboxItemOut{wantItem}, inbox.Questions); diff != "" {
		t.Errorf("check_inbox(john) after propose_response mismatch (-want +got):\n%s", diff)
	}
	if got := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar}); len(got.Replies) != 0 {
		t.Errorf("check_replies(umar) after a draft = %+v, want none: a draft is never delivered", got.Replies)
	}
	// After John explicitly approves: ctalk send the approved response to message 1: …
	sent := callOK[sentOut](t, cs, "send_response", args{"auth_token": john, "message_id": 1, "final_text": seedAnswer})
	if diff := cmp.Diff(sentOut{MessageID: 1, Status: "sent", FinalText: seedAnswer, ToUserID: "umar"}, sent); diff != "" {
		t.Errorf("send_response mismatch (-want +got):\n%s", diff)
	}
	// ctalk check my replies.
	replies := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar})
	wantReply := replyOut{MessageID: 1, AnsweredBy: personOut{UserID: "john", Name: "John"}, Question: seedQuestion, Answer: seedAnswer}
	if diff := cmp.Diff([]replyOut{wantReply}, replies.Replies); diff != "" {
		t.Errorf("check_replies(umar) mismatch (-want +got):\n%s", diff)
	}
	if got := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john}); len(got.Questions) != 0 {
		t.Errorf("check_inbox(john) after sending = %+v, want empty", got.Questions)
	}

	// Profiles count the interaction from each side.
	p := callOK[profileOut](t, cs, "get_user_profile", args{"auth_token": umar, "user_id": "john"})
	ev := &eventOut{MessageID: 1, FromUserID: "umar", ToUserID: "john"}
	if p.User.UserID != "john" || p.Interactions.YouAsked != 1 || p.Interactions.TheyAsked != 0 ||
		!cmp.Equal(p.Interactions.LastQ, ev) || !cmp.Equal(p.Interactions.LastA, ev) {
		t.Errorf("get_user_profile(umar→john) = %+v, want john, 1 asked, 0 received, last question and answer message 1", p)
	}
	p = callOK[profileOut](t, cs, "get_user_profile", args{"auth_token": john, "user_id": "umar"})
	if p.Interactions.YouAsked != 0 || p.Interactions.TheyAsked != 1 {
		t.Errorf("get_user_profile(john→umar) counts = %+v, want 0 asked, 1 received", p.Interactions)
	}
	if got := callOK[userOut](t, cs, "update_my_notes", args{"auth_token": john, "notes": johnNotes}); got.Notes != johnNotes {
		t.Errorf("update_my_notes: notes = %q, want %q", got.Notes, johnNotes)
	}
	got := callOK[userOut](t, cs, "update_user_profile_notes", args{"org_id": "ai-company",
		"admin_password": adminPassword, "user_id": "john", "profile_notes": johnProfile})
	if got.ProfileNotes != johnProfile {
		t.Errorf("update_user_profile_notes: profile_notes = %q, want %q", got.ProfileNotes, johnProfile)
	}
	p = callOK[profileOut](t, cs, "get_user_profile", args{"auth_token": umar, "user_id": "john"})
	if p.User.Notes != johnNotes || p.User.ProfileNotes != johnProfile {
		t.Errorf("get_user_profile(john) notes = %q, %q; want %q, %q", p.User.Notes, p.User.ProfileNotes, johnNotes, johnProfile)
	}
	return []string{adminPassword, userPassword, umar, john}, []string{seedQuestion, seedAnswer, johnNotes, johnProfile}
}

func ptr[T any](v T) *T { return &v }

// registerOrg creates an organization with the seed's admin password.
func registerOrg(t *testing.T, cs *sdk.ClientSession, orgID, name string) {
	t.Helper()
	got := callOK[userOut](t, cs, "register_organization", args{"org_id": orgID, "name": name, "admin_password": adminPassword})
	if got.OrgID != orgID || got.Name != name {
		t.Fatalf("register_organization(%s) = %+v, want org_id %s, name %q", orgID, got, orgID, name)
	}
}

// registerUser creates a user with the seed's user password.
func registerUser(t *testing.T, cs *sdk.ClientSession, orgID, userID, name, ownership string) {
	t.Helper()
	callOK[userOut](t, cs, "register_user", args{
		"org_id": orgID, "admin_password": adminPassword, "user_id": userID,
		"name": name, "password": userPassword, "ownership": ownership,
	})
}

// login returns a fresh auth token.
func login(t *testing.T, cs *sdk.ClientSession, orgID, userID string) string {
	t.Helper()
	got := callOK[struct {
		AuthToken string `json:"auth_token"`
	}](t, cs, "login", args{"org_id": orgID, "user_id": userID, "password": userPassword})
	if got.AuthToken == "" {
		t.Fatalf("login(%s/%s) returned no auth_token", orgID, userID)
	}
	return got.AuthToken
}

// team registers an organization with umar and john (as in the seed) and
// returns their tokens.
func team(t *testing.T, cs *sdk.ClientSession, orgID string) (umar, john string) {
	t.Helper()
	registerOrg(t, cs, orgID, "Org "+orgID)
	registerUser(t, cs, orgID, "umar", "Umar", "platform tooling")
	registerUser(t, cs, orgID, "john", "John", "alpha-repo and payments-service")
	return login(t, cs, orgID, "umar"), login(t, cs, orgID, "john")
}

// ask has from ask to a question and returns its message id.
func ask(t *testing.T, cs *sdk.ClientSession, fromToken, to, question string) int64 {
	t.Helper()
	return callOK[askOut](t, cs, "ask_person", args{"auth_token": fromToken, "to_user_id": to, "question": question}).MessageID
}

// answer is the seed's approval flow: save text as the draft (shown to the
// person), then send exactly that text.
func answer(t *testing.T, cs *sdk.ClientSession, token string, id int64, text string) sentOut {
	t.Helper()
	callOK[draftOut](t, cs, "propose_response", args{"auth_token": token, "message_id": id, "draft_text": text})
	return callOK[sentOut](t, cs, "send_response", args{"auth_token": token, "message_id": id, "final_text": text})
}

// dbText returns every value stored in the database, one string per cell
// prefixed with table.column (bytes both raw and hex-encoded), and on SQLite
// the raw files too: a secret must never be written, not even to a free page.
func dbText(t *testing.T, cfg db.Config) []string {
	t.Helper()
	driver, dsn, list := "sqlite3", "file:"+cfg.SQLitePath+"?mode=ro", `SELECT name FROM sqlite_master WHERE type = 'table'`
	if cfg.DatabaseURL != "" {
		driver, dsn, list = "pgx", cfg.DatabaseURL, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	sdb, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open the %s database: %v", driver, err)
	}
	defer sdb.Close()
	var tables, cells []string
	rows, err := sdb.QueryContext(t.Context(), list)
	for err == nil && rows.Next() {
		var name string
		err = rows.Scan(&name)
		tables = append(tables, name)
	}
	if err != nil || len(tables) == 0 {
		t.Fatalf("list tables = %v, %v; want the schema's tables", tables, err)
	}
	for _, table := range tables {
		rows, err := sdb.QueryContext(t.Context(), `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatalf("read table %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan table %s: %v", table, err)
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b) + " " + hex.EncodeToString(b)
				}
				cells = append(cells, fmt.Sprintf("%s.%s=%v", table, cols[i], v))
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatalf("read table %s: %v", table, err)
		}
	}
	for _, suffix := range []string{"", "-wal"} {
		if b, err := os.ReadFile(cfg.SQLitePath + suffix); cfg.DatabaseURL == "" && err == nil {
			cells = append(cells, filepath.Base(cfg.SQLitePath)+suffix+"(raw)="+string(b))
		}
	}
	return cells
}

// waitAll runs fn(i) for i in [0, n) at once and waits for every call.
func waitAll(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}
