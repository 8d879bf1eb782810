package cli

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestWaitUnattended: in a session no person attends (claude -p), the Stop
// hook's `ctalk wait` exits 0 at once, without consuming what waits, so the
// scripted run is not held open; --unattended and attended sessions report.
func TestWaitUnattended(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		umar := team.Seed(t, endpoint)["umar"]
		_, env := testkit.Home(t)
		loginJohn(t, env, endpoint)
		testkit.Ask(t, umar, "john", "Who owns billing?")

		unattended := append(env, attendedEnv+"=0")
		if code, stdout, stderr := runInProcess(t.Context(), unattended, "", "wait", "--timeout", "10m"); code != 0 || stdout != "" || stderr != "" {
			t.Errorf("wait in an unattended session with a question waiting = %d, %q, %q; want 0 at once and no output", code, stdout, stderr)
		}
		if code, _, stderr := runInProcess(t.Context(), unattended, "", "wait", "--unattended", "--timeout", "10m"); code != 2 || !strings.Contains(stderr, "Who owns billing?") {
			t.Errorf("wait --unattended = %d, %q; want 2 and the question", code, stderr)
		}
		testkit.Ask(t, umar, "john", "And payments?")
		attended := append(env, attendedEnv+"=1")
		if code, _, stderr := runInProcess(t.Context(), attended, "", "wait", "--timeout", "10m"); code != 2 || !strings.Contains(stderr, "And payments?") {
			t.Errorf("wait in an attended session = %d, %q; want 2 and the question", code, stderr)
		}
	})
}

// loginJohn runs `ctalk login` as john, the password on stdin.
func loginJohn(t *testing.T, env []string, endpoint string) {
	t.Helper()
	if code, _, stderr := runInProcess(t.Context(), env, team.UserPassword+"\n", "login", "--relay", endpoint, "--org", "acme", "--user", "john"); code != 0 {
		t.Fatalf("login = %d: %s", code, stderr)
	}
}
