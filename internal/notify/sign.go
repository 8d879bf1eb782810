package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Webhook signatures, in the scheme Stripe and others use: the receiver
// recomputes an HMAC-SHA256 of the timestamp and the exact body with the
// endpoint's secret, compares it in constant time, and refuses a timestamp
// too far from its clock (a replayed delivery). The id header names the
// notification, the same on every retry, so a receiver can drop repeats.
//
//	Ctalk-Webhook-Id: 01J…            (the notification; the same on retries)
//	Ctalk-Signature: t=1767225600,v1=5257a869e7…
//
// v1 is hex(HMAC-SHA256(secret, "<t>.<body>")). A header may carry several
// v1 values while a secret is being replaced; one match is enough.

// Header names of a signed delivery.
const (
	SignatureHeader = "Ctalk-Signature"
	IDHeader        = "Ctalk-Webhook-Id"
)

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Sign returns the Ctalk-Signature header value for body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook signature does not match")
	ErrStale        = errors.New("webhook signature timestamp is too old or too far in the future")
)

// Verify checks a Ctalk-Signature header against body, as a receiver
// should: the HMAC with secret, compared in constant time, and the
// timestamp within tolerance of now.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var (
		ts   string
		sigs []string
	)
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: the header must be t=<unix seconds>,v1=<hex>", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := []byte(mac(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrBadSignature
}
