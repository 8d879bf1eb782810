package relay

import (
	"unicode"
	"unicode/utf8"
)

// Invisible characters. Free text drops every character that is a format
// character (general category Cf) or Default_Ignorable_Code_Point: they
// render as nothing, yet they survive copy and paste, split a token so the
// "looks like a credential" check misses it, reorder what a reader sees
// (bidi controls) or carry a hidden message a model reads (tag characters).
//
// What this costs, on purpose:
//   - ZERO WIDTH JOINER stays only between two emoji (a symbol, or a skin
//     tone, then a symbol: 👩‍💻, 👨‍👩‍👧), where it joins pictures and
//     cannot split a token or a word; anywhere else it goes.
//   - Variation selectors go, so an emoji may show in text style (❤ for ❤️).
//   - The Arabic and Kaithi number signs and the Egyptian hieroglyph format
//     controls (Cf, though visible in some fonts) go: ctalk carries team
//     chat, and the rule "no Cf at all" is one a reader can check.

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point property, from
// DerivedCoreProperties.txt (unchanged from Unicode 9.0 to 16.0). The
// standard library has no table for it and golang.org/x/text does not
// export one. Ranges that are also Cf are listed anyway, so this table
// alone is the property and can be tested against the standard's list.
var defaultIgnorable = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00ad, Hi: 0x00ad, Stride: 1}, // SOFT HYPHEN
		{Lo: 0x034f, Hi: 0x034f, Stride: 1}, // COMBINING GRAPHEME JOINER
		{Lo: 0x061c, Hi: 0x061c, Stride: 1}, // ARABIC LETTER MARK
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // HANGUL CHOSEONG and JUNGSEONG FILLER
		{Lo: 0x17b4, Hi: 0x17b5, Stride: 1}, // KHMER VOWEL INHERENT AQ, AA
		{Lo: 0x180b, Hi: 0x180f, Stride: 1}, // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
		{Lo: 0x200b, Hi: 0x200f, Stride: 1}, // ZERO WIDTH SPACE, NON-JOINER, JOINER, LRM, RLM
		{Lo: 0x202a, Hi: 0x202e, Stride: 1}, // bidi embeddings and overrides
		{Lo: 0x2060, Hi: 0x206f, Stride: 1}, // WORD JOINER, invisible operators, bidi isolates, deprecated format
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // HANGUL FILLER
		{Lo: 0xfe00, Hi: 0xfe0f, Stride: 1}, // VARIATION SELECTOR-1..16
		{Lo: 0xfeff, Hi: 0xfeff, Stride: 1}, // ZERO WIDTH NO-BREAK SPACE (BOM)
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // HALFWIDTH HANGUL FILLER
		{Lo: 0xfff0, Hi: 0xfff8, Stride: 1}, // reserved
	},
	R32: []unicode.Range32{
		{Lo: 0x1bca0, Hi: 0x1bca3, Stride: 1}, // SHORTHAND FORMAT controls
		{Lo: 0x1d173, Hi: 0x1d17a, Stride: 1}, // MUSICAL SYMBOL BEGIN BEAM..END PHRASE
		{Lo: 0xe0000, Hi: 0xe0fff, Stride: 1}, // tags, VARIATION SELECTOR-17..256, reserved
	},
	LatinOffset: 1,
}

// invisible reports a character free text drops: Cf or default-ignorable.
func invisible(r rune) bool {
	if r < 0xad {
		return false // the common case: nothing below SOFT HYPHEN qualifies
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(defaultIgnorable, r)
}

const zeroWidthJoiner = '\u200d'

// emojiJoin reports whether a ZERO WIDTH JOINER after prev and before rest
// joins two emoji: prev is a symbol (So) or a skin-tone modifier, and rest
// starts with a symbol. Letters, digits and punctuation are never joined.
func emojiJoin(prev rune, rest string) bool {
	next, _ := utf8.DecodeRuneInString(rest)
	isModifier := prev >= 0x1f3fb && prev <= 0x1f3ff
	return (isModifier || unicode.Is(unicode.So, prev)) && unicode.Is(unicode.So, next)
}
