package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
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

// team is umar and john in acme.
var team = testkit.Pair

// startRelay serves a real relay over store until the test ends and
// returns its MCP URL.
func startRelay(t *testing.T, store db.Store) string {
	t.Helper()
	return testkit.ServeMCP(t, server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(store, mcp.Options{HashConcurrency: 4}),
	}))
}

// runInProcess runs a command of this package as ctalk would, with env as
// its whole environment, and returns its exit code and output.
func runInProcess(ctx context.Context, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	c, rest := Find(Commands("test"), args)
	code = c.Run(ctx, &IO{Getenv: testkit.Getenv(env), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}, rest)
	return code, out.String(), errb.String()
}

// TestWait drives `ctalk wait` as a Stop hook would run it, repeatedly: it
// exits 0 when nothing comes, 2 with a one-line summary when a question
// arrives (while it waits, or before it started), and never reports one
// event twice.
func TestWait(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		umar := team.Seed(t, endpoint)["umar"]
		home, env := testkit.Home(t)

		if code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "1s"); code != 1 || !strings.Contains(stderr, "not logged in") {
			t.Errorf("wait before login = %d, %q; want 1 and how to log in", code, stderr)
		}
		loginJohn(t, env, endpoint)
		if code, _, stderr := runInProcess(t.Context(), env, "", "login", "--relay", endpoint, "--org", "acme", "--user", "john"); code != 1 || !strings.Contains(stderr, "no password") {
			t.Errorf("login without a password = %d, %q; want 1", code, stderr)
		}

		// Nothing new: exit 0 when the timeout passes.
		start := time.Now()
		code, stdout, stderr := runInProcess(t.Context(), env, "", "wait", "--relay", endpoint, "--timeout", "2s")
		if code != 0 || stdout != "" || stderr != "" {
			t.Errorf("wait with nothing new = %d, %q, %q; want 0 and no output", code, stdout, stderr)
		}
		if took := time.Since(start); took < 2*time.Second || took > 5*time.Second {
			t.Errorf("a 2 s wait took %v", took)
		}

		// A question while it waits: exit 2 at once, the summary on stderr.
		type result struct {
			code   int
			stderr string
			at     time.Time
		}
		done := make(chan result, 1)
		go func() {
			code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "30s")
			done <- result{code, stderr, time.Now()}
		}()
		time.Sleep(time.Second)
		sent := time.Now()
		testkit.Ask(t, umar, "john", "What is the retry\nlogic?")
		r := <-done
		t.Logf("%s: ctalk wait exited %v after the question was asked", s.Backend(), r.at.Sub(sent).Round(time.Millisecond))
		if r.code != 2 {
			t.Fatalf("wait when a question arrives = %d, stderr %q; want 2", r.code, r.stderr)
		}
		want := `ctalk: Umar (umar) asks the user (message 1) — their words: "What is the retry logic?". Show the user; ` +
			"answer only through propose_response and send_response with the user's approval.\n"
		if r.stderr != want {
			t.Errorf("wait summary =\n%q\nwant\n%q", r.stderr, want)
		}
		if r.at.Sub(sent) > 2*time.Second {
			t.Errorf("wait returned %v after the question, want within 2s", r.at.Sub(sent))
		}

		// Reported once: the next run has nothing.
		if code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "1s"); code != 0 {
			t.Errorf("wait after reporting message 1 = %d, %q; want 0", code, stderr)
		}
		// Events that came while no hook ran are reported at the next run.
		testkit.Ask(t, umar, "john", "second")
		testkit.Ask(t, umar, "john", "third")
		code, _, stderr = runInProcess(t.Context(), env, "", "wait", "--timeout", "10s")
		if code != 2 || !strings.Contains(stderr, "(message 2)") || !strings.Contains(stderr, "And 1 more") {
			t.Errorf("wait with two waiting questions = %d, %q; want 2, message 2 and one more", code, stderr)
		}
		if strings.Count(stderr, "\n") != 1 {
			t.Errorf("summary %q is not one line", stderr)
		}

		// Logging out revokes the token at the relay and forgets it here.
		cred, err := credentials.Load(filepath.Join(home, ".config", "ctalk"), endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runInProcess(t.Context(), env, "", "logout"); code != 0 {
			t.Fatalf("logout = %d, %q", code, stderr)
		}
		if err := team.Connect(t, endpoint, cred.Token).Call(t.Context(), "whoami", nil, nil); err == nil {
			t.Errorf("whoami with the token after logout succeeded, want it revoked")
		}
		if code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "1s"); code != 1 || !strings.Contains(stderr, "not logged in") {
			t.Errorf("wait after logout = %d, %q; want 1 and how to log in", code, stderr)
		}
	})
}

// answer answers message id as c, as an approved reply.
func answer(t *testing.T, c *relayclient.Client, id int64, text string) {
	t.Helper()
	if err := c.Call(t.Context(), "propose_response", map[string]any{"message_id": id, "draft_text": text}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), "send_response", map[string]any{"message_id": id, "final_text": text}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestWaitFirstRun checks what the first `ctalk wait` of a login reports:
// questions to the user still unanswered however old, and answers that
// arrived after the login; not answered questions nor older answers.
func TestWaitFirstRun(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		clients := team.Seed(t, endpoint)
		umar, john := clients["umar"], clients["john"]
		_, env := testkit.Home(t)

		old := testkit.Ask(t, john, "umar", "asked and answered before the login")
		answer(t, umar, old, "an old answer")
		answered := testkit.Ask(t, umar, "john", "a question john answered")
		answer(t, john, answered, "done")
		waiting := testkit.Ask(t, umar, "john", "a question still waiting")
		loginJohn(t, env, endpoint)
		fresh := testkit.Ask(t, john, "umar", "asked after the login")
		answer(t, umar, fresh, "a new answer")

		code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "10s")
		if want := fmt.Sprintf("asks the user (message %d)", waiting); code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "And 1 more") {
			t.Errorf("first wait = %d, %q; want 2, %q and one more (the new answer)", code, stderr, want)
		}
		for _, id := range []int64{old, answered} {
			if strings.Contains(stderr, fmt.Sprintf("(message %d)", id)) {
				t.Errorf("first wait reported message %d, which is history: %q", id, stderr)
			}
		}
		if code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "1s"); code != 0 {
			t.Errorf("second wait = %d, %q; want 0: the first one reported the backlog", code, stderr)
		}
	})
}
