package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/internal/testkit"
)

func TestBinary(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "v1.2.3-test")

	t.Run("version", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), bin, "version").Output()
		// The version from -ldflags, then the revision the build info recorded.
		want := regexp.MustCompile(`^ctalk v1\.2\.3-test( \(rev [0-9a-f]{7}(, [0-9TZ:-]+)?(, modified)?\))?\n$`)
		if got := string(out); err != nil || !want.MatchString(got) {
			t.Errorf("ctalk version = %q, %v; want a match of %s", got, err, want)
		}
	})

	t.Run("SIGTERM drains and exits 0", func(t *testing.T) {
		const drain = 5 * time.Second
		port := testkit.FreePort(t)
		dbPath := filepath.Join(t.TempDir(), "relay.sqlite3")
		cmd := exec.Command(bin, "serve")
		// The whole environment, so no DATABASE_URL leaks in from the test's.
		cmd.Env = []string{"PORT=" + strconv.Itoa(port), "RELAY_DB_PATH=" + dbPath, "CTALK_SHUTDOWN_TIMEOUT=" + drain.String()}
		var stderr testkit.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start ctalk serve: %v", err)
		}
		exited := make(chan int, 1)
		go func() { cmd.Wait(); exited <- cmd.ProcessState.ExitCode() }() //nolint:errcheck // the exit code says it
		t.Cleanup(func() { cmd.Process.Kill() })

		waitHealthy(t, "http://127.0.0.1:"+strconv.Itoa(port), exited)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("ctalk serve after SIGTERM = exit %d, want 0; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(drain + 2*time.Second):
			t.Fatalf("ctalk serve still running %v after SIGTERM (drain %v); stderr:\n%s", drain+2*time.Second, drain, stderr.String())
		}
		if !strings.Contains(stderr.String(), "ctalk stopped") {
			t.Errorf("ctalk serve log lacks the clean-stop line:\n%s", stderr.String())
		}
		if _, err := os.Stat(dbPath); err != nil {
			t.Errorf("ctalk serve did not create its database at RELAY_DB_PATH: %v", err)
		}
	})
}
