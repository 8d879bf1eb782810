package relay

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Field limits, in characters. They bound what one call can store and what a
// model has to read back; each error names the limit, and faces declare them
// in their schemas.
const (
	// MaxIDLen bounds org_id and user_id.
	MaxIDLen = 64
	// MaxNameLen bounds display names.
	MaxNameLen = 100
	// MaxOwnershipLen bounds what a person owns.
	MaxOwnershipLen = 500
	// MaxNotesLen bounds notes and profile notes.
	MaxNotesLen = 4000
	// MaxQuestionLen bounds a question.
	MaxQuestionLen = 8000
	// MaxAnswerLen bounds drafts and answers.
	MaxAnswerLen = 16000
	// MinUserPassLen bounds a user's password, from below.
	MinUserPassLen = 8
	// MinAdminPassLen bounds an organization's admin password, from below.
	MinAdminPassLen = 12
	// MaxPasswordLen bounds every password.
	MaxPasswordLen = 256
	// MaxTokenLen bounds an auth token.
	MaxTokenLen = 200
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// slug normalises an id (org_id, user_id) to lower case and checks its shape.
// The shape is checked as ASCII before lowering: strings.ToLower maps the
// Kelvin sign (U+212A) to "k", which would let "\u212Acme" name "kcme".
func slug(field, value string) (string, error) {
	v := strings.TrimSpace(value)
	ascii := isASCII(v)
	v = strings.ToLower(v)
	switch {
	case !ascii && v != "":
		return "", badInput("%s %q is not valid: use letters, digits, '-' and '_', starting with a letter or digit", field, value)
	case v == "":
		return "", badInput("%s is required", field)
	case utf8.RuneCountInString(v) > MaxIDLen:
		return "", badInput("%s is too long: at most %d characters", field, MaxIDLen)
	case !slugPattern.MatchString(v):
		return "", badInput("%s %q is not valid: use letters, digits, '-' and '_', starting with a letter or digit", field, value)
	}
	return v, nil
}

// text checks and cleans free text a person wrote (names, notes, questions,
// answers). It rejects invalid UTF-8 and control characters other than tab
// and newline, strips every invisible character (format characters and
// default-ignorable code points, see invisible.go), refuses anything shaped
// like a ctalk token once stripped (and NFKC-folded, see looksLikeToken),
// and enforces the field's length limit.
func text(field, value string, required bool, max int) (string, error) {
	if !utf8.ValidString(value) {
		return "", badInput("%s is not valid UTF-8 text", field)
	}
	var b strings.Builder
	b.Grow(len(value))
	var prev rune // the last character kept
	for i, r := range value {
		switch {
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r == '\r':
			if !strings.HasPrefix(value[i:], "\r\n") {
				b.WriteRune('\n')
			}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return "", badInput("%s contains a control character (U+%04X) at byte %d: remove it", field, r, i)
		case r == zeroWidthJoiner && emojiJoin(prev, value[i+len(string(zeroWidthJoiner)):]):
			b.WriteRune(r)
		case invisible(r):
			continue // dropped, see invisible.go; prev stays
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	v := strings.TrimSpace(b.String())
	n := utf8.RuneCountInString(v)
	switch {
	case required && v == "":
		return "", badInput("%s is required", field)
	case n > max:
		return "", badInput("%s is too long: %d characters, at most %d", field, n, max)
	case looksLikeToken(v):
		return "", badInput("%s looks like a credential (a ctalk auth token): remove it; never share tokens through ctalk", field)
	}
	return v, nil
}

// password checks a new password's length; the password itself never appears in an error.
func password(field, value string, min int) error {
	n := utf8.RuneCountInString(value)
	switch {
	case n < min:
		return badInput("%s is too short: use at least %d characters", field, min)
	case n > MaxPasswordLen:
		return badInput("%s is too long: at most %d characters", field, MaxPasswordLen)
	}
	return nil
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
