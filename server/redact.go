package server

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// redactHandler keeps header values out of the log. mcp-go logs the
// Mcp-Session-Id header as an attribute of some lines and inside the text
// of some errors; a session id is a bearer of the session's elicitation
// answers, so it is as private as a token. Attributes whose key names a
// session, header or credential are dropped; every other text (message,
// strings, errors, panics) has session ids and bearer credentials masked.
type redactHandler struct{ next slog.Handler }

// RedactLogger wraps log so that nothing it writes carries a header value
// (session ids, bearer credentials). Handler applies it to Config.Logger;
// wrapping the process's root logger once covers every other package too.
func RedactLogger(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(redactHandler); ok {
		return log
	}
	return slog.New(redactHandler{log.Handler()})
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// clientFaults are lines mcp-go logs at ERROR about what a client sent
// wrong (a response that answers no request of ours: any stranger can post
// one). The client gets its error; the log keeps them at DEBUG, so a flood
// of them cannot bury, or page anyone about, real errors.
var clientFaults = map[string]bool{"Failed to handle sampling response": true}

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	level := r.Level
	if level >= slog.LevelError && clientFaults[r.Message] {
		if level = slog.LevelDebug; !h.next.Enabled(ctx, level) {
			return nil
		}
	}
	out := slog.NewRecord(r.Time, level, scrub(r.Message), r.PC)
	if id := RequestID(ctx); id != "" {
		out.AddAttrs(slog.String("request_id", id))
	}
	r.Attrs(func(a slog.Attr) bool {
		if a, ok := redactAttr(a); ok {
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	kept := make([]slog.Attr, 0, len(attrs))
	for _, a := range attrs {
		if a, ok := redactAttr(a); ok {
			kept = append(kept, a)
		}
	}
	return redactHandler{h.next.WithAttrs(kept)}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.next.WithGroup(name)}
}

// secretKey matches attribute keys that name what may carry a header value.
var secretKey = regexp.MustCompile(`(?i)session|header|auth|token|cookie|bearer`)

// redactAttr drops a secret-named attribute and masks the text of the rest.
func redactAttr(a slog.Attr) (slog.Attr, bool) {
	if secretKey.MatchString(a.Key) {
		return slog.Attr{}, false
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, scrub(v.String())), true
	case slog.KindAny:
		return slog.String(a.Key, scrub(fmt.Sprint(v.Any()))), true
	case slog.KindGroup:
		var kept []any
		for _, g := range v.Group() {
			if g, ok := redactAttr(g); ok {
				kept = append(kept, g)
			}
		}
		return slog.Group(a.Key, kept...), true
	default: // numbers, times, durations, booleans
		return slog.Attr{Key: a.Key, Value: v}, true
	}
}

// secretText matches session ids (mcp-go's and ctalk's format) and bearer
// credentials inside free text.
var secretText = regexp.MustCompile(`(?i)mcp-session-[^\s"',;]*|bearer\s+[^\s"',;]+`)

func scrub(s string) string {
	if !strings.Contains(strings.ToLower(s), "session") && !strings.Contains(strings.ToLower(s), "bearer") {
		return s
	}
	return secretText.ReplaceAllString(s, "[redacted]")
}
