package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// wantInputError checks that err is an *Error (its text reaches the
// model) containing want, or is nil when want is "".
func wantInputError(t *testing.T, call string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s = error %q, want nil", call, err)
		}
		return
	}
	var in *Error
	switch {
	case err == nil:
		t.Errorf("%s = nil error, want one containing %q", call, want)
	case !errors.As(err, &in):
		t.Errorf("%s = %T %q, want an *Error", call, err, err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s = error %q, want it to contain %q", call, err, want)
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "acme", want: "acme"},
		{in: "ai-company", want: "ai-company"},
		{in: "team_2", want: "team_2"},
		{in: "  ACME  ", want: "acme"},
		{in: "0day", want: "0day"},
		{in: strings.Repeat("a", MaxIDLen), want: strings.Repeat("a", MaxIDLen)},
		{in: strings.Repeat("a", MaxIDLen+1), wantErr: "too long"},
		{in: "", wantErr: "org_id is required"},
		{in: "   ", wantErr: "org_id is required"},
		{in: "-acme", wantErr: "not valid"},
		{in: "_acme", wantErr: "not valid"},
		{in: "ac me", wantErr: "not valid"},
		{in: "acmé", wantErr: "not valid"},
		{in: "a/b", wantErr: "not valid"},
		{in: "a.b", wantErr: "not valid"},
		{in: "acme\x00", wantErr: "not valid"},
		{in: "аcme", wantErr: "not valid"}, // Cyrillic а: looks like acme, is not
	}
	for _, tt := range tests {
		got, err := slug("org_id", tt.in)
		wantInputError(t, fmt.Sprintf("slug(org_id, %q)", tt.in), err, tt.wantErr)
		if got != tt.want {
			t.Errorf("slug(org_id, %q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	token := tokenPrefix + strings.Repeat("A", 43)
	tests := []struct {
		name     string
		in       string
		required bool
		max      int
		want     string
		wantErr  string
	}{
		{name: "plain", in: "hello", max: 10, want: "hello"},
		{name: "trimmed", in: "  hello \n", max: 10, want: "hello"},
		{name: "tab and newline kept", in: "a\tb\nc", max: 10, want: "a\tb\nc"},
		{name: "CRLF normalised", in: "a\r\nb\r\nc", max: 10, want: "a\nb\nc"},
		{name: "lone CR normalised", in: "a\rb", max: 10, want: "a\nb"},
		{name: "CR CR LF", in: "a\r\r\nb", max: 10, want: "a\n\nb"},
		{name: "NUL rejected", in: "a\x00b", max: 10, wantErr: "control character (U+0000)"},
		{name: "escape rejected", in: "\x1b[31mred", max: 10, wantErr: "control character (U+001B)"},
		{name: "bell rejected", in: "ding\a", max: 10, wantErr: "control character"},
		{name: "DEL rejected", in: "a\x7f", max: 10, wantErr: "control character (U+007F)"},
		{name: "C1 NEL rejected", in: "a\u0085b", max: 10, wantErr: "control character (U+0085)"},
		{name: "invalid UTF-8 rejected", in: "a\xffb", max: 10, wantErr: "not valid UTF-8"},
		{name: "RLO stripped", in: "invoice\u202Efdp.exe", max: 20, want: "invoicefdp.exe"},
		{name: "bidi embeddings stripped", in: "\u202Aa\u202Bb\u202Cc\u202Dd", max: 10, want: "abcd"},
		{name: "bidi isolates stripped", in: "\u2066a\u2067b\u2068c\u2069", max: 10, want: "abc"},
		{name: "zero-width space stripped", in: "pay\u200Bpal", max: 10, want: "paypal"},
		{name: "LRM RLM ALM stripped", in: "a\u200Eb\u200Fc\u061Cd", max: 10, want: "abcd"},
		{name: "word joiner and BOM stripped", in: "\uFEFFa\u2060b", max: 10, want: "ab"},
		// Tag characters render as nothing yet models read them: "ASCII
		// smuggling" hides instructions in otherwise harmless text.
		{name: "Unicode tag characters stripped", in: "hi\U000E0001\U000E0049\U000E0047\U000E004E\U000E007F", max: 10, want: "hi"},
		{name: "ZWJ emoji kept", in: "👩\u200D💻", max: 10, want: "👩\u200D💻"},
		{name: "empty optional", in: "", max: 10, want: ""},
		{name: "empty required", in: "", required: true, max: 10, wantErr: "question is required"},
		{name: "blank required", in: " \r\n\t ", required: true, max: 10, wantErr: "question is required"},
		{name: "only hidden required", in: "\u200B\u202E", required: true, max: 10, wantErr: "question is required"},
		{name: "limit in characters not bytes", in: "日本語テキ", max: 5, want: "日本語テキ"},
		{name: "accents count once", in: "héllo", max: 5, want: "héllo"},
		{name: "one over", in: "日本語テキス", max: 5, wantErr: "too long: 6 characters, at most 5"},
		{name: "hidden not counted", in: "ab\u200Bcde", max: 5, want: "abcde"},
		{name: "CRLF counts once", in: "ab\r\ncd", max: 5, want: "ab\ncd"},
		{name: "token refused", in: "use " + token + " please", max: 100, wantErr: "looks like a credential"},
		{name: "bare token refused", in: token, max: 100, wantErr: "looks like a credential"},
		{name: "token split by zero-width refused", in: "ctalk_\u200B" + strings.Repeat("A", 43), max: 100, wantErr: "looks like a credential"},
		{name: "short token-like ok", in: "the ctalk_ prefix", max: 100, want: "the ctalk_ prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := text("question", tt.in, tt.required, tt.max)
			wantInputError(t, "text()", err, tt.wantErr)
			if got != tt.want {
				t.Errorf("text(question, %q, %v, %d) = %q, want %q", tt.in, tt.required, tt.max, got, tt.want)
			}
			if err != nil && tt.in != "" && strings.Contains(err.Error(), tt.in) {
				t.Errorf("text() error %q repeats the input", err)
			}
		})
	}
}

func TestPasswordLength(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		min     int
		wantErr string
	}{
		{in: "", min: MinUserPassLen, wantErr: "too short: use at least 8 characters"},
		{in: "1234567", min: MinUserPassLen, wantErr: "too short"},
		{in: "12345678", min: MinUserPassLen},
		{in: "ééééééé", min: MinUserPassLen, wantErr: "too short"}, // 14 bytes, 7 characters
		{in: "éééééééé", min: MinUserPassLen},
		{in: "12345678901", min: MinAdminPassLen, wantErr: "at least 12"},
		{in: "123456789012", min: MinAdminPassLen},
		{in: strings.Repeat("p", MaxPasswordLen), min: MinUserPassLen},
		{in: strings.Repeat("p", MaxPasswordLen+1), min: MinUserPassLen, wantErr: "too long: at most 256"},
		{in: strings.Repeat("é", MaxPasswordLen), min: MinUserPassLen}, // 512 bytes, 256 characters
	}
	for _, tt := range tests {
		err := password("password", tt.in, tt.min)
		wantInputError(t, fmt.Sprintf("password(password, %d bytes, min %d)", len(tt.in), tt.min), err, tt.wantErr)
		if err != nil && tt.in != "" && strings.Contains(err.Error(), tt.in) {
			t.Errorf("password() error %q contains the password", err)
		}
	}
}
