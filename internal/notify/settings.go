package notify

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // quiet hours use IANA time zones; the binary may run without a zoneinfo
)

// SecretPrefix starts every generic webhook's signing secret.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: SecretPrefix and 32 random bytes,
// base64url. The HMAC key is the whole string's bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseClock reads a time of day "HH:MM" (24-hour) as minutes after midnight.
func ParseClock(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) < 1 || len(h) > 2 || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("%q is not a time of day: write it as HH:MM on a 24-hour clock, such as 22:00 or 07:30", s)
	}
	return hh*60 + mm, nil
}

// FormatClock writes minutes after midnight as "HH:MM".
func FormatClock(min int) string { return fmt.Sprintf("%02d:%02d", min/60, min%60) }

// QuietUntil returns the end of the quiet hours [start, end) (minutes after
// midnight in loc, wrapping past midnight when end < start) that now falls
// in, or false when now is outside them (or start == end: none).
func QuietUntil(now time.Time, start, end int, loc *time.Location) (time.Time, bool) {
	if start == end {
		return time.Time{}, false
	}
	local := now.In(loc)
	min := local.Hour()*60 + local.Minute()
	in := (start < end && min >= start && min < end) || (start > end && (min >= start || min < end))
	if !in {
		return time.Time{}, false
	}
	day := local
	if start > end && min >= start { // before midnight: it ends tomorrow
		day = local.AddDate(0, 0, 1)
	}
	until := time.Date(day.Year(), day.Month(), day.Day(), end/60, end%60, 0, 0, loc)
	if !until.After(now) { // a clock change skipped the end: try again in an hour
		until = now.Add(time.Hour)
	}
	return until, true
}
