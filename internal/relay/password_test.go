package relay

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/argon2"
)

// phcPattern is an argon2id PHC string with ctalk's parameters (m=9 MiB,
// t=4, p=1: OWASP-equivalent to m=19 MiB, t=2), a 16-byte
// salt and a 32-byte key (unpadded standard base64).
var phcPattern = regexp.MustCompile(`^\$argon2id\$v=19\$m=9216,t=4,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

func mustHash(t *testing.T, h *hasher, password string) string {
	t.Helper()
	encoded, err := h.Hash(t.Context(), password)
	if err != nil {
		t.Fatalf("Hash(%q) = %v", password, err)
	}
	return encoded
}

func TestHashVerify(t *testing.T) {
	t.Parallel()
	h := newHasher(2, 0)
	ctx := t.Context()
	const pw = "correct horse battery staple"
	encoded := mustHash(t, h, pw)

	if !phcPattern.MatchString(encoded) {
		t.Errorf("Hash() = %q, want an argon2id PHC string matching %s", encoded, phcPattern)
	}
	p, salt, key, err := decodeArgon2id(encoded)
	if err != nil {
		t.Fatalf("decodeArgon2id(%q) = %v", encoded, err)
	}
	if diff := cmp.Diff(argonParams{memory: 9 * 1024, time: 4, threads: 1}, p, cmp.AllowUnexported(argonParams{})); diff != "" {
		t.Errorf("decodeArgon2id params mismatch (-want +got):\n%s", diff)
	}
	if len(salt) != 16 || len(key) != 32 {
		t.Errorf("decodeArgon2id salt %d bytes, key %d bytes; want 16 and 32", len(salt), len(key))
	}

	if again := mustHash(t, h, pw); again == encoded {
		t.Errorf("two hashes of one password are both %q, want different salts", encoded)
	}

	for _, tt := range []struct {
		password string
		want     bool
	}{
		{pw, true},
		{"correct horse battery stapl", false},
		{"Correct horse battery staple", false},
		{pw + " ", false},
		{"", false},
	} {
		got, err := h.Verify(ctx, encoded, tt.password)
		if err != nil || got != tt.want {
			t.Errorf("Verify(hash, %q) = %v, %v; want %v, nil", tt.password, got, err, tt.want)
		}
	}
}

// TestVerifyOlderParameters: stored hashes carry their parameters, so
// changing the defaults keeps old passwords working: those stored before
// ctalk moved to m=9 MiB, t=4 (m=19 MiB, t=2) and any others.
func TestVerifyOlderParameters(t *testing.T) {
	t.Parallel()
	salt := []byte("0123456789abcdef")
	b64 := base64.RawStdEncoding
	h := newHasher(1, 0)
	for _, p := range []argonParams{{memory: 19 * 1024, time: 2, threads: 1}, {memory: 8 * 1024, time: 1, threads: 1}} {
		key := argon2.IDKey([]byte("old password"), salt, p.time, p.memory, p.threads, 32)
		old := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", p.memory, p.time, p.threads, b64.EncodeToString(salt), b64.EncodeToString(key))
		if ok, err := h.Verify(t.Context(), old, "old password"); !ok || err != nil {
			t.Errorf("Verify(%s, right password) = %v, %v; want true, nil", old, ok, err)
		}
		if ok, err := h.Verify(t.Context(), old, "new password"); ok || err != nil {
			t.Errorf("Verify(%s, wrong password) = %v, %v; want false, nil", old, ok, err)
		}
	}
}

func TestVerifyEmptyHash(t *testing.T) {
	t.Parallel()
	h := newHasher(1, 0)
	// An unknown user has no hash; the dummy it is checked against must not
	// match anything, including its own plaintext.
	for _, pw := range []string{"", "anything-at-all", "not a real password", "\x00not a real password"} {
		ok, err := h.Verify(t.Context(), "", pw)
		if ok || err != nil {
			t.Errorf("Verify(\"\", %q) = %v, %v; want false, nil", pw, ok, err)
		}
	}
}

func TestVerifyMalformedHash(t *testing.T) {
	t.Parallel()
	h := newHasher(1, 0)
	good := dummyHash()
	for _, encoded := range []string{
		"plaintext",
		"$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5",
		"$argon2id$v=16$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5",
		"$argon2id$v=19$m=x,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5",
		"$argon2id$v=19$m=19456,t=2,p=1$!!!$a2V5",
		"$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$",
		good + "$extra",
	} {
		ok, err := h.Verify(t.Context(), encoded, "password")
		if ok || err == nil {
			t.Errorf("Verify(%q) = %v, %v; want false and an error", encoded, ok, err)
		}
	}
}

func TestNewHasherClampsConcurrency(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 1} {
		if got := cap(newHasher(n, 0).slots); got != 1 {
			t.Errorf("newHasher(%d) allows %d concurrent hashes, want 1", n, got)
		}
	}
}

// TestHasherBoundsConcurrency holds the only slot of newHasher(1, 0), as a hash in
// progress would, and counts how many other hashes complete meanwhile: none
// may. synctest.Wait returns once every goroutine is blocked, so "none
// finished" is a fact about the program, not about how long the test waited.
func TestHasherBoundsConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHasher(1, 0)
		ctx := context.Background()
		if err := h.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		var started, finished atomic.Int32
		var wg sync.WaitGroup
		wg.Go(func() {
			started.Add(1)
			if _, err := h.Hash(ctx, "first password"); err != nil {
				t.Errorf("Hash() = %v", err)
			}
			finished.Add(1)
		})
		wg.Go(func() {
			started.Add(1)
			if _, err := h.Verify(ctx, dummyHash(), "second password"); err != nil {
				t.Errorf("Verify() = %v", err)
			}
			finished.Add(1)
		})
		synctest.Wait()
		if s, f := started.Load(), finished.Load(); s != 2 || f != 0 {
			t.Fatalf("while the only slot was held: %d hashes started, %d finished; want 2 and 0", s, f)
		}
		h.release()
		wg.Wait()
		if f := finished.Load(); f != 2 {
			t.Errorf("after release: %d hashes finished, want 2", f)
		}
		if n := len(h.slots); n != 0 {
			t.Errorf("after every hash returned, %d slots are still held, want 0", n)
		}
	})
}

// TestHasherCancelWhileWaiting: a caller that gives up while waiting for a
// slot gets its context's error and leaves no slot behind.
func TestHasherCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	h := newHasher(1, 0)
	if err := h.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.Hash(ctx, "password"); err != context.Canceled {
		t.Errorf("Hash(cancelled ctx) with no free slot = %v, want context.Canceled", err)
	}
	if _, err := h.Verify(ctx, dummyHash(), "password"); err != context.Canceled {
		t.Errorf("Verify(cancelled ctx) with no free slot = %v, want context.Canceled", err)
	}
	h.release()
	if n := len(h.slots); n != 0 {
		t.Errorf("%d slots held after cancelled calls, want 0", n)
	}
	mustHash(t, h, "password")
}
