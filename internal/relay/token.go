package relay

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"regexp"

	"golang.org/x/text/unicode/norm"
)

// tokenPrefix marks ctalk tokens so people, secret scanners and ctalk itself
// (which refuses to relay anything shaped like one) can recognise them.
const tokenPrefix = "ctalk_"

// tokenPattern matches a ctalk token anywhere in a text: the prefix (in any
// case: a reader fixes that at a glance) and 43 base64url characters (256
// random bits).
var tokenPattern = regexp.MustCompile(`(?i:ctalk)_[A-Za-z0-9_-]{43}`)

// newToken returns a fresh 256-bit random token and the hash stored for it.
func newToken() (token string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand panics rather than return an error
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token)
}

// hashToken is what the database stores and looks tokens up by. A token has
// 256 bits of entropy, so one SHA-256 suffices: no password hashing on the
// hot path of every tool call.
func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// looksLikeToken reports whether text contains something shaped like a ctalk
// token, as is or once NFKC-folded: fullwidth or other compatibility forms
// of the token's characters fold back to a token anyone can paste. Text
// reaches this check with invisible characters already stripped, so a
// joiner inside a token hides nothing.
func looksLikeToken(text string) bool {
	if tokenPattern.MatchString(text) {
		return true
	}
	return !isASCII(text) && tokenPattern.MatchString(norm.NFKC.String(text))
}
