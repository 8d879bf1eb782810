package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
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
// goroutine at most blocks, and each run of the call (mcp-go's HandleMessage:
// parsing, the tool's handler, the rules, the rendering, all as for any
// other call) is a job for a few workers. Between runs the wait is left in
// an mcp.Hold. The answer is the one mcp-go would write: the same
// HandleMessage response, encoded the same way, with the same headers.
//
// On an HTTP/1 connection a wait left held is taken over from net/http
// (heldConn): the handler returns, and until the wait has something to do
// nothing runs for it, not even a goroutine. Its answer then closes the
// connection.
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
	log      *slog.Logger

	// The runs of held waits are jobs for at most maxWorkers workers. A
	// run's stack grows deep (tens of KiB) and the memory of a burst of
	// them stays with the process: ten thousand agents reconnecting at
	// once must not cost ten thousand deep stacks, nor ten thousand
	// connection goroutines waiting for a worker (see hold). Runs never
	// block for long (a look holds one of relay's four database slots for
	// one query), so a few workers keep up.
	qmu     sync.Mutex
	queue   []func() // jobs no worker has taken yet
	running int      // workers
	idle    int      // workers waiting for a job
	kick    chan struct{}

	// The connections of the waits taken over (heldConn), for the drain.
	watch connWatch
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	taken sync.WaitGroup
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
		log: slog.New(slog.DiscardHandler), kick: make(chan struct{}, maxWorkers),
		conns: map[net.Conn]struct{}{}, watch: newConnWatch()}
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
		var body []byte
		if b, ok := r.Body.(*readBytes); ok { // read by gate.readBody: no copy
			body = b.b
		} else {
			var err error
			body, err = io.ReadAll(io.LimitReader(r.Body, maxHeldBody+1))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err != nil {
				next.ServeHTTP(w, r)
				return
			}
		}
		// Other calls go on at once (a name written with escapes too: mcp-go serves it as ever).
		if len(body) > maxHeldBody || !bytes.Contains(body, []byte(`"`+waitTool+`"`)) {
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
// it runs the call, waits between runs, and writes the last run's answer
// as mcp-go's handlePost would. The runs are jobs for the workers, whose
// stacks grow through mcp-go, the tool and the database.
//
// A wait left held by its first run is then, on an HTTP/1 connection,
// taken over (heldConn): the handler returns, and with it the connection's
// goroutine and its stack, grown through the middlewares. When no worker
// is free for the first run (a burst of reconnecting agents), the
// connection is taken over before it, so that the wait queues as a job,
// not as a connection goroutine with its buffers.
func (hw *heldWaits) hold(w http.ResponseWriter, r *http.Request, body []byte, next http.Handler) {
	modern, ok := hw.accepts(r, body)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	// The wait's own context: it ends with the request's while the handler
	// serves it, and with the connection once the wait is taken over (net/http
	// cancels the request's context when the handler returns).
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(r.Context(), cancel)
	h := mcp.NewHold(ctx)
	c := &heldConn{hw: hw, h: h, ctx: ctx, cancel: cancel, body: body, modern: modern,
		call: mcp.WithHold(hw.context(mcpserver.WithSupportedProtocolVersions(ctx, hw.versions), r), h)}
	if !hw.workerFree() && hw.takeOver(w, r, c, stop) {
		hw.submit(c.resume)
		return
	}
	out := hw.run(c)
	if h.Held() && hw.takeOver(w, r, c, stop) {
		h.Notify(c.wake)
		return
	}
	defer h.Close()
	defer cancel()
	defer stop()
	for h.Held() {
		h.Block(ctx)
		out = hw.run(c)
	}
	switch {
	case out.status == http.StatusAccepted:
		w.WriteHeader(http.StatusAccepted)
	case ctx.Err() != nil: // the client went away: mcp-go writes nothing either
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(out.status)
		w.Write(out.body) //nolint:errcheck // the client went away
	}
}

// A heldConn is a wait whose connection was taken from net/http
// (Hijack). While it waits nothing runs for it: it is the connection, the
// wait's state in the relay and a watch on the connection (connWatch).
// A wake-up, its timeout, the drain or the client's going calls its wake
// (mcp.Hold.Notify), which queues a run of the call for the workers; the
// last run's answer is written on the connection, which is then closed
// (Connection: close), since net/http cannot be given it back. A client
// opens a new connection for its next call, as after any closed
// keep-alive connection.
type heldConn struct {
	hw     *heldWaits
	h      *mcp.Hold
	ctx    context.Context // the wait's; cancelled when the client goes
	cancel context.CancelFunc
	call   context.Context // the runs' context
	body   []byte
	modern bool // protocol 2026-07-28 or later

	conn    net.Conn
	header  http.Header // the middlewares' response headers (X-Request-Id)
	done    func(status int)
	unwatch func()
}

// takeOver detaches the request of r and takes its connection for c, if
// it can be taken (HTTP/1, under withDetach). stop ends the watch of r's
// context, which ends when the handler returns.
func (hw *heldWaits) takeOver(w http.ResponseWriter, r *http.Request, c *heldConn, stop func() bool) bool {
	if r.ProtoMajor != 1 || !canDetach(r.Context()) {
		return false
	}
	// Counted before the connection leaves net/http's count: Serve's drain
	// waits for net/http's connections, then for these.
	hw.taken.Add(1)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		hw.taken.Done()
		return false
	}
	// Bytes the client sent after its request (a pipelined one) are dropped
	// with the buffers: the answer closes the connection, so the client
	// sends that request again on a new one.
	stop()
	c.conn, c.header, c.done = conn, w.Header(), detach(r.Context())
	hw.mu.Lock()
	hw.conns[conn] = struct{}{}
	hw.mu.Unlock()
	c.unwatch = hw.watch.watch(conn, c.cancel)
	return true
}

// wake is the hold's Notify function: it must not block.
func (c *heldConn) wake() { c.hw.submit(c.resume) }

// resume runs the call, on a worker: it is left held again, or answered.
func (c *heldConn) resume() {
	defer func() {
		if p := recover(); p != nil { // net/http would log it and close the connection
			c.hw.log.Error("panic serving a held wait", "panic", fmt.Sprint(p))
			c.finish(answer{status: http.StatusInternalServerError}, false)
		}
	}()
	a, held := c.once()
	if held {
		c.h.Notify(c.wake)
		return
	}
	c.finish(a, c.ctx.Err() == nil)
}

// once runs the call once: its encoded answer, or held when the call is
// left held (no answer yet).
func (c *heldConn) once() (a answer, held bool) {
	resp := c.hw.mcp.HandleMessage(c.call, c.body)
	if c.h.Held() {
		return answer{}, true
	}
	return encode(resp, c.modern), false
}

// finish writes the call's answer if write (the client is still there),
// closes the connection and releases what the wait held. The answer is a
// few hundred bytes: the socket's buffer takes it at once.
func (c *heldConn) finish(out answer, write bool) {
	hw := c.hw
	c.unwatch()
	if write {
		var b bytes.Buffer
		fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", out.status, http.StatusText(out.status))
		if out.status != http.StatusAccepted {
			c.header.Set("Content-Type", "application/json")
		}
		c.header.Set("Content-Length", strconv.Itoa(len(out.body)))
		c.header.Set("Connection", "close")
		c.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		c.header.Write(&b) //nolint:errcheck // a bytes.Buffer
		b.WriteString("\r\n")
		b.Write(out.body)
		c.conn.SetWriteDeadline(time.Now().Add(answerWriteTimeout)) //nolint:errcheck // then the write fails
		c.conn.Write(b.Bytes())                                     //nolint:errcheck // the client went away
	}
	c.conn.Close()
	c.cancel()
	c.h.Close()
	hw.mu.Lock()
	delete(hw.conns, c.conn)
	hw.mu.Unlock()
	c.done(out.status)
	hw.taken.Done()
}

// answerWriteTimeout bounds the write of a taken-over wait's answer.
const answerWriteTimeout = 10 * time.Second

// drain waits until the taken-over waits are answered (Serve closes the
// relay's draining channel first, which ends them), or closes their
// connections when ctx ends first.
func (hw *heldWaits) drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		hw.taken.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		hw.mu.Lock()
		for conn := range hw.conns {
			conn.Close()
		}
		hw.mu.Unlock()
		return ctx.Err()
	}
}

// answer is a run's JSON-RPC response as mcp-go would write it.
type answer struct {
	status int
	body   []byte
}

// encode is resp as mcp-go's handlePost writes it; nil (no response) is 202.
func encode(resp mcpgo.JSONRPCMessage, modern bool) answer {
	if resp == nil {
		return answer{status: http.StatusAccepted}
	}
	// Protocol 2026-07-28 maps JSON-RPC errors onto HTTP statuses.
	status := http.StatusOK
	if e, ok := resp.(mcpgo.JSONRPCError); ok && modern {
		status = statusForJSONRPCError(e.Error.Code)
	}
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(resp) //nolint:errcheck // mcp-go's own types
	return answer{status: status, body: b.Bytes()}
}

// run runs c's call once on a worker and waits for it, so that the
// caller's stack stays small, and encodes its response there unless the
// call is left held. A panic is raised again on the caller's goroutine,
// where net/http recovers it as it would mcp-go's.
func (hw *heldWaits) run(c *heldConn) answer {
	type ran struct {
		answer
		panic any
	}
	done := make(chan ran, 1)
	hw.submit(func() {
		defer func() {
			if p := recover(); p != nil {
				done <- ran{panic: p}
			}
		}()
		a, held := c.once()
		if held {
			a = answer{status: http.StatusAccepted}
		}
		done <- ran{answer: a}
	})
	out := <-done
	if out.panic != nil {
		panic(out.panic)
	}
	return out.answer
}

// workerFree reports whether a job submitted now would start at once.
func (hw *heldWaits) workerFree() bool {
	hw.qmu.Lock()
	defer hw.qmu.Unlock()
	return len(hw.queue) < hw.idle || hw.running < maxWorkers
}

// submit queues job for the workers, starting one if none is idle and
// fewer than maxWorkers run. It never blocks: wake-ups call it.
func (hw *heldWaits) submit(job func()) {
	hw.qmu.Lock()
	hw.queue = append(hw.queue, job)
	start := len(hw.queue) > hw.idle && hw.running < maxWorkers
	if start {
		hw.running++
	}
	hw.qmu.Unlock()
	if start {
		go hw.work()
		return
	}
	select {
	case hw.kick <- struct{}{}:
	default: // enough kicks are on their way
	}
}

// workerIdle is how long a worker waits for another job before it ends.
const workerIdle = time.Second

// work runs queued jobs until none comes for workerIdle. Workers outlive
// their jobs so that their grown stacks serve the next ones: a goroutine
// per run would allocate and free a deep stack each time, and the holes
// those leave are memory the process keeps.
func (hw *heldWaits) work() {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		hw.qmu.Lock()
		if len(hw.queue) > 0 {
			job := hw.queue[0]
			hw.queue[0] = nil
			hw.queue = hw.queue[1:]
			hw.qmu.Unlock()
			job()
			continue
		}
		hw.idle++
		hw.qmu.Unlock()
		idle.Reset(workerIdle)
		timedOut := false
		select {
		case <-hw.kick:
		case <-idle.C:
			timedOut = true
		}
		hw.qmu.Lock()
		hw.idle--
		if timedOut && len(hw.queue) == 0 {
			hw.running--
			hw.qmu.Unlock()
			return
		}
		hw.qmu.Unlock()
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
