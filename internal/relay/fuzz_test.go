package relay

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzText checks the rules every stored text goes through: whatever comes
// in, what is stored is valid UTF-8 with no control or invisible characters
// besides tab, newline and a joiner between emoji, within the limit, and never token-shaped.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "hello", "a\x00b", "x\u202Ey", "line\r\nline", "ctalk_" + strings.Repeat("A", 43),
		"\xff\xfe", "  padded  ", "emoji 👩‍👩‍👧", "\u200b", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := text("field", in, false, 100)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("text(%q) error %T %v, want *Error", in, err, err)
			}
			return
		}
		if !utf8.ValidString(out) {
			t.Fatalf("text(%q) = %q, not valid UTF-8", in, out)
		}
		var prev rune
		for i, r := range out {
			joiner := r == zeroWidthJoiner && emojiJoin(prev, out[i+len(string(r)):]) // the one invisible kept
			if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (invisible(r) && !joiner) {
				t.Fatalf("text(%q) = %q, keeps U+%04X", in, out, r)
			}
			prev = r
		}
		if utf8.RuneCountInString(out) > 100 || looksLikeToken(out) {
			t.Fatalf("text(%q) = %q, over the limit or token-shaped", in, out)
		}
	})
}
