package bench

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Config is what one bench run does.
type Config struct {
	Endpoint    string // the relay's /mcp URL
	Orgs, Users int
	Concurrency int
	Duration    time.Duration
	Progress    io.Writer // a line a second; nil for none
	Version     string    // ctalk's, sent as the client version
}

// Exit codes of ctalk bench beyond 0 (no errors, no leaks) and 2 (usage).
const (
	ExitErrors = 1 // setup failed or calls failed
	ExitLeak   = 3 // a call saw another organization's data
)

// Check reports what is wrong with cfg, if anything.
func (cfg Config) Check() error {
	switch {
	case cfg.Orgs < 1 || cfg.Users < 2 || cfg.Orgs*cfg.Users > 10000:
		return errors.New("--orgs must be at least 1 and --users at least 2 (someone to ask), at most 10000 users in all")
	case cfg.Concurrency < 1 || cfg.Duration <= 0:
		return errors.New("--concurrency and --duration must be positive")
	}
	return nil
}

// ExitCode is the exit status of a run with this report.
func (r *Report) ExitCode() int {
	switch {
	case r.Leaks > 0:
		return ExitLeak
	case r.errors() > 0:
		return ExitErrors
	}
	return 0
}

// URL accepts the relay's base URL or its /mcp URL.
func URL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if raw == "" || err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--url %q is not a relay URL: use e.g. http://127.0.0.1:8000 or https://ctalk.example.com/mcp", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}
