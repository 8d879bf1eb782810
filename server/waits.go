package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/mcp"
)

// Every connected agent keeps a wait_for_messages call open, so what one
// open wait holds is what a replica's number of connected people costs.
// Through mcp-go's Streamable HTTP handler a wait holds a per-POST session
// (a 100-entry notification channel), a goroutine forwarding notifications
// the wait never sends, and a connection goroutine whose stack grew through
// the middleware, mcp-go, the tool and SQLite on the way in and stays grown
// while it blocks. heldWaits serves those calls itself: the connection's
// goroutine only blocks, and each run of the call (mcp-go's HandleMessage:
// parsing, the tool's handler, the rules, the rendering, all as for any
// other call) is a job for a few workers. Between runs the wait is left in
// an mcp.Hold. The answer is the one mcp-go would write: the same
// HandleMessage response, encoded the same way, with the same headers.
//
// Only what mcp-go would accept is served here: a single JSON-RPC
// tools/call request for wait_for_messages, JSON content, headers that
// pass mcp-go's checks, and no session id (a session's idle clock lives in
// mcp-go). Everything else, including every request mcp-go would refuse,
// goes on to mcp-go unchanged.
type heldWaits struct {
	mcp      *mcpserver.MCPServer
	versions []string // the transport's protocol versions, as mcp-go puts them in the context
	context  func(context.Context, *http.Request) context.Context
	off      bool // tests: everything goes to mcp-go
	// The runs of held waits are jobs for at most maxWorkers workers. A
	// run's stack grows deep (tens of KiB) and the memory of a burst of
	// them stays with the process: ten thousand agents reconnecting at
	// once must not cost ten thousand deep stacks. Runs never block for
	// long (a look holds one of relay's four database slots for one
	// query), so a few workers keep up.
	jobs    chan func()
	workers chan struct{} // one token per worker running
}

// maxWorkers is how many runs of held waits may be under way at once.
const maxWorkers = 16

// newHeldWaits serves the waits of srv, whose transport is streamable.
// A wait_for_messages declaring parameters carried in headers too
// (x-mcp-header, which mcp-go checks) would go to mcp-go: it has none.
func newHeldWaits(srv *mcpserver.MCPServer, streamable *mcpserver.StreamableHTTPServer,
	callContext func(context.Context, *http.Request) context.Context, off bool) *heldWaits {
	tool := srv.GetTool(waitTool)
	off = off || tool == nil || len(mcpgo.ExtractParamHeaderBindings(&tool.Tool)) > 0
	return &heldWaits{mcp: srv, versions: mcpserver.FilterSupportedVersions(streamable), context: callContext, off: off,
		jobs: make(chan func()), workers: make(chan struct{}, maxWorkers)}
}

// waitTool is the tool served here.
const waitTool = "wait_for_messages"

// maxHeldBody bounds the bodies looked at here; a wait's is a few hundred bytes.
const maxHeldBody = 16 << 10

func (hw *heldWaits) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hw.off || r.Method != http.MethodPost || r.Body == nil || r.ContentLength > maxHeldBody {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxHeldBody+1))
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Other calls go on at once (a name written with escapes too: mcp-go serves it as ever).
		if err != nil || len(body) > maxHeldBody || !bytes.Contains(body, []byte(`"`+waitTool+`"`)) {
			next.ServeHTTP(w, r)
			return
		}
		hw.hold(w, r, body, next)
	})
}

// accepts reports whether r is a wait_for_messages call that mcp-go's
// transport would pass on to HandleMessage, and whether it is of protocol
// 2026-07-28 or later. The checks are mcp-go's (ServeHTTP, handlePost,
// validateModernRequest, HandleMessage's header checks), in its order.
func (hw *heldWaits) accepts(r *http.Request, body []byte) (modern, ok bool) {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
		isLoopbackHost(local.String()) && !isLoopbackHost(r.Host) {
		return false, false // mcp-go refuses it (DNS rebinding)
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return false, false
	}
	if r.Header.Get(mcpserver.HeaderKeySessionID) != "" {
		return false, false
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return false, false // a batch, or not JSON-RPC
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcpgo.JSONRPC_VERSION ||
		msg.Method != string(mcpgo.MethodToolsCall) || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return false, false
	}
	var params struct {
		Name string `json:"name"`
		// As mcpgo.Meta, keyed exactly, without decoding what the other keys hold.
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(msg.Params, &params) != nil || params.Name != waitTool {
		return false, false
	}
	var metaVersion string
	if v, ok := params.Meta[mcpgo.MetaKeyProtocolVersion]; ok && json.Unmarshal(v, &metaVersion) != nil {
		return false, false
	}
	headerVersion := r.Header.Get(mcpgo.HeaderProtocolVersion)
	modern = mcpgo.IsModernProtocol(metaVersion) || mcpgo.IsModernProtocol(headerVersion)
	if !modern {
		return false, headerVersion == "" || mcpgo.IsValidProtocolVersion(headerVersion)
	}
	if r.Header.Get(mcpgo.HeaderLastEventID) != "" || headerVersion == "" || metaVersion != headerVersion ||
		!mcpgo.IsValidProtocolVersion(metaVersion) {
		return true, false
	}
	if mcpgo.ValidateStandardHeaders(r.Header.Get, metaVersion, mcpgo.MethodToolsCall, msg.Params) != nil {
		return true, false
	}
	return true, true
}

// hold serves one wait if it is one mcp-go would accept (else next does):
// it runs the call, blocks between runs, and writes the last run's answer
// as mcp-go's handlePost would. The request is looked at, and the answer
// encoded, on the workers, so that this goroutine stays shallow: it may
// serve the connection's next wait.
func (hw *heldWaits) hold(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	h := mcp.NewHold(r.Context())
	defer h.Close()
	ctx := mcp.WithHold(hw.context(mcpserver.WithSupportedProtocolVersions(r.Context(), hw.versions), r), h)
	modern, ok := false, false
	out := hw.run(func() mcpgo.JSONRPCMessage {
		if modern, ok = hw.accepts(r, body); !ok {
			return nil
		}
		return hw.mcp.HandleMessage(ctx, body)
	}, h, &modern)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	for h.Held() {
		h.Block(r.Context()) // the only frame this goroutine waits in
		out = hw.run(func() mcpgo.JSONRPCMessage { return hw.mcp.HandleMessage(ctx, body) }, h, &modern)
	}
	switch {
	case out.status == http.StatusAccepted:
		w.WriteHeader(http.StatusAccepted)
	case r.Context().Err() != nil: // the client went away: mcp-go writes nothing either
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(out.status)
		w.Write(out.body) //nolint:errcheck // the client went away
	}
}

// answer is a run's JSON-RPC response as mcp-go would write it.
type answer struct {
	status int
	body   []byte
}

// run runs fn on one of the workers, whose stacks grow through mcp-go, the
// tool and the database, so that the caller's stays small, and encodes
// its response there unless the call is held (as of protocol 2026-07-28
// if *modern, which fn may set). A panic is raised again on
// the caller's goroutine, where net/http recovers it as it would mcp-go's.
func (hw *heldWaits) run(fn func() mcpgo.JSONRPCMessage, h *mcp.Hold, modern *bool) answer {
	type ran struct {
		answer
		panic any
	}
	done := make(chan ran, 1)
	job := func() {
		defer func() {
			if p := recover(); p != nil {
				done <- ran{panic: p}
			}
		}()
		resp := fn()
		if resp == nil || h.Held() {
			done <- ran{answer: answer{status: http.StatusAccepted}}
			return
		}
		// As handlePost: protocol 2026-07-28 maps JSON-RPC errors onto HTTP statuses.
		status := http.StatusOK
		if e, ok := resp.(mcpgo.JSONRPCError); ok && *modern {
			status = statusForJSONRPCError(e.Error.Code)
		}
		var b bytes.Buffer
		json.NewEncoder(&b).Encode(resp) //nolint:errcheck // mcp-go's own types
		done <- ran{answer: answer{status: status, body: b.Bytes()}}
	}
	select {
	case hw.jobs <- job: // an idle worker takes it
	case hw.workers <- struct{}{}: // or one more worker starts
		go hw.work(job)
	}
	out := <-done
	if out.panic != nil {
		panic(out.panic)
	}
	return out.answer
}

// workerIdle is how long a worker waits for another job before it ends.
const workerIdle = time.Second

// work runs job and then the jobs it is given, until none comes for workerIdle.
// Workers outlive their jobs so that their grown stacks serve the next
// ones: a goroutine per run would allocate and free a deep stack each
// time, and the holes those leave between the held waits' small stacks
// are memory the process keeps.
func (hw *heldWaits) work(job func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(workerIdle)
		select {
		case job = <-hw.jobs:
		case <-idle.C:
			<-hw.workers
			return
		}
	}
}

// statusForJSONRPCError is the HTTP status protocol 2026-07-28 gives a
// JSON-RPC error (mcp-go's httpStatusForJSONRPCError).
func statusForJSONRPCError(code int) int {
	switch code {
	case mcpgo.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcpgo.HEADER_MISMATCH, mcpgo.MISSING_REQUIRED_CLIENT_CAPABILITY, mcpgo.UNSUPPORTED_PROTOCOL_VERSION,
		mcpgo.INVALID_REQUEST, mcpgo.INVALID_PARAMS, mcpgo.PARSE_ERROR:
		return http.StatusBadRequest
	default:
		return http.StatusOK
	}
}
