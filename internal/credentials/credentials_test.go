package credentials

import (
	"strings"
	"testing"
)

func TestRelayURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{"https://ctalk.example.com/mcp", "https://ctalk.example.com/mcp", ""},
		{"https://ctalk.example.com", "https://ctalk.example.com/mcp", ""},
		{"https://ctalk.example.com/", "https://ctalk.example.com/mcp", ""},
		{"http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp", ""},
		{"http://localhost:8000", "http://localhost:8000/mcp", ""},
		{"http://ctalk.example.com/mcp", "", "use https"},
		{"ctalk.example.com", "", "is not a URL"},
		{"", "", "--relay is required"},
	} {
		got, err := RelayURL(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("RelayURL(%q) = %q, %v; want %q, error containing %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
