package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestInvisibleClasses: every class of invisible character the issue names
// is dropped from free text, one table row per class, and visible text
// around it is kept.
func TestInvisibleClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		class string
		runes []rune
	}{
		{"zero-width non-joiner and joiner", []rune{0x200c, 0x200d}},
		{"zero-width space, LRM, RLM", []rune{0x200b, 0x200e, 0x200f}},
		{"soft hyphen", []rune{0x00ad}},
		{"word joiner and invisible operators", []rune{0x2060, 0x2061, 0x2062, 0x2063, 0x2064}},
		{"variation selectors", []rune{0xfe00, 0xfe0e, 0xfe0f, 0xe0100, 0xe01ef}},
		{"Mongolian vowel separator and free variation selectors", []rune{0x180b, 0x180e, 0x180f}},
		{"tags", []rune{0xe0001, 0xe0020, 0xe0041, 0xe007f}},
		{"bidi embeddings, overrides, isolates, ALM", []rune{0x202a, 0x202e, 0x2066, 0x2069, 0x061c}},
		{"byte order mark", []rune{0xfeff}},
		{"combining grapheme joiner", []rune{0x034f}},
		{"Hangul fillers", []rune{0x115f, 0x1160, 0x3164, 0xffa0}},
		{"other format characters", []rune{0x0600, 0x06dd, 0xfff9, 0x110bd, 0x13430, 0x1bca0, 0x1d173}},
	} {
		for _, r := range tt.runes {
			in := "ab" + string(r) + "cd"
			if got, err := text("question", in, true, 100); err != nil || got != "abcd" {
				t.Errorf("%s: text(%q) = %q, %v; want \"abcd\"", tt.class, in, got, err)
			}
		}
	}
	// Tab and newline stay; visible characters next to invisible ones stay.
	if got, err := text("question", "a\tb\nc\u00e9", true, 100); err != nil || got != "a\tb\nc\u00e9" {
		t.Errorf("text(tab, newline, é) = %q, %v; want them kept", got, err)
	}
}

// TestInvisibleIsTheProperty: the table is sorted (unicode.Is needs it), and
// every code point that is Cf or in the table is dropped from text, except
// a joiner between two emoji.
func TestInvisibleIsTheProperty(t *testing.T) {
	t.Parallel()
	var last rune = -1
	for _, r := range defaultIgnorable.R16 {
		if rune(r.Lo) <= last || r.Hi < r.Lo {
			t.Fatalf("defaultIgnorable.R16 is not sorted at %04X", r.Lo)
		}
		last = rune(r.Hi)
	}
	for _, r := range defaultIgnorable.R32 {
		if rune(r.Lo) <= last || r.Hi < r.Lo {
			t.Fatalf("defaultIgnorable.R32 is not sorted at %04X", r.Lo)
		}
		last = rune(r.Hi)
	}
	n := 0
	for r := rune(0xa0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff || !(unicode.Is(unicode.Cf, r) || unicode.Is(defaultIgnorable, r)) {
			continue
		}
		n++
		if !invisible(r) {
			t.Errorf("invisible(U+%04X) = false, want true", r)
		}
	}
	if n < 4000 { // DI alone has 4,174 code points
		t.Errorf("only %d invisible code points, want the whole property", n)
	}
	emoji := []string{"👩\u200d💻", "👨\u200d👩\u200d👧", "👩🏽\u200d💻"}
	for _, e := range emoji {
		if got, _ := text("question", e, true, 10); got != e {
			t.Errorf("text(%q) = %q, want the emoji sequence kept", e, got)
		}
	}
	for _, in := range []string{"a\u200db", "👩\u200da", "a\u200d👩", "_\u200d1"} {
		if got, _ := text("question", in, true, 10); strings.ContainsRune(got, zeroWidthJoiner) {
			t.Errorf("text(%q) = %q, keeps a joiner outside an emoji sequence", in, got)
		}
	}
}

// TestTokenNormalised: a token with an invisible character inside, in
// fullwidth forms or with an upper-case prefix is still refused.
func TestTokenNormalised(t *testing.T) {
	t.Parallel()
	tok, _ := newToken()
	body := strings.TrimPrefix(tok, tokenPrefix)
	fullwidth := strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r - '!' + '！'
		}
		return r
	}, tok)
	for name, in := range map[string]string{
		"joiner after prefix":  "ctalk_\u200d" + body,
		"non-joiner in body":   tokenPrefix + body[:10] + "\u200c" + body[10:],
		"soft hyphen in body":  tokenPrefix + body[:20] + "\u00ad" + body[20:],
		"variation selector":   tokenPrefix + body[:5] + "\ufe0f" + body[5:],
		"tag character":        "ctalk\U000E005F_" + body,
		"invisible times":      tokenPrefix + body[:30] + "\u2062" + body[30:],
		"fullwidth":            fullwidth,
		"upper-case prefix":    "CTALK_" + body,
		"Kelvin sign":          "ctal\u212a_" + body,
		"mixed, mid-sentence":  "here: ｃｔａｌｋ＿" + body + " ok?",
		"joiner between each":  strings.Join(strings.Split(tok, ""), "\u200d"),
		"word joiner per char": strings.Join(strings.Split(tok, ""), "\u2060"),
	} {
		if _, err := text("question", in, true, MaxQuestionLen); err == nil || !strings.Contains(err.Error(), "looks like a credential") {
			t.Errorf("%s: text(%q) = %v, want refused as a credential", name, in, err)
		}
	}
}

// TestTokensRefusedEverywhere: a token with a joiner inserted is refused by
// every call that relays text — ask_person, propose and send_response, and
// notes — on both backends, and is stored nowhere.
func TestTokensRefusedEverywhere(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := umarAndJohn(t, s)
		ctx := t.Context()
		hidden := "use ctalk_\u200d" + strings.TrimPrefix(umar.Token, tokenPrefix) + " for my account"
		acme := Admin{OrgID: "acme", Password: testAdminPassword}

		q, err := f.s.Ask(ctx, umar, "john", "How do retries work?")
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]func() error{
			"ask_person": func() error { _, err := f.s.Ask(ctx, umar, "john", hidden); return err },
			"propose_response": func() error {
				_, err := f.s.Propose(ctx, john, q.MessageID, hidden)
				return err
			},
			"send_response": func() error {
				_, err := f.s.Send(ctx, john, q.MessageID, hidden, Approval{CanAsk: true, Accepted: true})
				return err
			},
			"register_user notes": func() error {
				_, err := f.s.RegisterUser(ctx, acme, NewUser{UserID: "eve", Name: "Eve", Password: testUserPassword, Notes: hidden})
				return err
			},
			"update_user_profile_notes": func() error {
				_, err := f.s.UpdateUserProfileNotes(ctx, acme, "john", hidden)
				return err
			},
		}
		for name, call := range calls {
			var re *Error
			if err := call(); !errors.As(err, &re) || re.Kind != KindBadInput || !strings.Contains(err.Error(), "looks like a credential") {
				t.Errorf("%s with a joiner-split token = %v, want refused as a credential", name, err)
			}
		}
		in, err := f.s.Inbox(ctx, john, 0)
		if err != nil || len(in.Questions) != 1 || in.Questions[0].YourDraft != nil {
			t.Errorf("john's inbox = %+v, %v; want the one clean question, no draft", in, err)
		}
	})
}

// TestKelvinIDsRefused: ids are checked as ASCII before lowering, so the
// Kelvin sign (which strings.ToLower maps to "k") is refused with the usual
// message, and names no existing organization or user.
func TestKelvinIDsRefused(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"\u212acme", "acme\u212a", "\u212a"} {
		if got, err := slug("org_id", in); err == nil || !strings.Contains(err.Error(), "is not valid: use letters, digits") {
			t.Errorf("slug(%q) = %q, %v; want the usual not-valid message", in, got, err)
		}
	}
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "kim")
		ctx := t.Context()
		_, err := f.s.RegisterOrganization(ctx, NewOrganization{OrgID: "\u212aorp", Name: "K", AdminPassword: testAdminPassword})
		wantInputError(t, "RegisterOrganization(Kelvin org_id)", err, fmt.Sprintf("org_id %q is not valid", "\u212aorp"))
		_, err = f.s.RegisterUser(ctx, Admin{OrgID: "acme", Password: testAdminPassword},
			NewUser{UserID: "\u212aate", Name: "Kate", Password: testUserPassword})
		wantInputError(t, "RegisterUser(Kelvin user_id)", err, fmt.Sprintf("user_id %q is not valid", "\u212aate"))
		if _, err := f.s.Login(ctx, "acme", "\u212aim", testUserPassword); !errors.Is(err, errBadLogin) {
			t.Errorf("Login as \\u212Aim (kim with a Kelvin sign) = %v, want %v", err, errBadLogin)
		}
	})
}
