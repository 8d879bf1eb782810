package relay

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var tokenFormat = regexp.MustCompile(`^ctalk_[A-Za-z0-9_-]{43}$`)

func TestNewToken(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		token, hash := newToken()
		if !tokenFormat.MatchString(token) {
			t.Fatalf("newToken() = %q, want ctalk_ and 43 base64url characters", token)
		}
		if got, want := hex.EncodeToString(hash), hex.EncodeToString(hashToken(token)); got != want {
			t.Errorf("newToken() hash = %s, want hashToken(token) = %s", got, want)
		}
		if !looksLikeToken(token) {
			t.Errorf("looksLikeToken(%q) = false for a real token", token)
		}
		if seen[token] {
			t.Fatalf("newToken() returned %q twice", token)
		}
		seen[token] = true
	}
}

// TestHashTokenStable pins the stored form: changing it would log every user out.
func TestHashTokenStable(t *testing.T) {
	t.Parallel()
	token := tokenPrefix + strings.Repeat("A", 43)
	const want = "e9440065df588d76a7191cb9ff88b24129e825e52645c8e62a202e87598633ea"
	got := hex.EncodeToString(hashToken(token))
	if len(got) != 64 {
		t.Fatalf("hashToken(%q) is %d hex digits, want 64 (SHA-256)", token, len(got))
	}
	if got != want {
		t.Errorf("hashToken(%q) = %s, want %s", token, got, want)
	}
	if again := hex.EncodeToString(hashToken(token)); again != got {
		t.Errorf("hashToken(%q) = %s then %s, want the same", token, got, again)
	}
	if other := hex.EncodeToString(hashToken(token + "B")); other == got {
		t.Errorf("hashToken of two tokens are both %s", got)
	}
}

func TestLooksLikeToken(t *testing.T) {
	t.Parallel()
	body := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ-_01234" // 43 characters
	tests := []struct {
		in   string
		want bool
	}{
		{"ctalk_" + body, true},
		{"my token is ctalk_" + body + ", keep it", true},
		{"line one\nctalk_" + body + "\n", true},
		{"ctalk_" + body + "xyz", true}, // longer runs still contain a token
		{"ctalk_" + body[:42], false},
		{"ctalk-" + body, false},
		{"ctalk_" + body[:20] + " " + body[20:], false},
		{"ctalk_ is the prefix of ctalk tokens", false},
		{"", false},
		{"retry logic uses three attempts with exponential backoff", false},
	}
	for _, tt := range tests {
		if got := looksLikeToken(tt.in); got != tt.want {
			t.Errorf("looksLikeToken(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
