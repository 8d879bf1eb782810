package relay

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/ctalk/ctalk/internal/metrics"
)

// argon2id parameters: m=9 MiB, t=4, p=1, one of the five configurations
// OWASP's Password Storage Cheat Sheet lists as giving an equal level of
// defence (the others: 46 MiB/t=1, 19 MiB/t=2, 12 MiB/t=3, 7 MiB/t=5). It
// trades memory for passes: a hash takes about as long as with 19 MiB and
// t=2, and half the memory, which is what bounds a small instance (two
// hashes at once, or a check and a new hash in one call, must fit beside
// everything else in 64 MiB). Stored hashes carry their own parameters, so
// those made with 19 MiB and t=2 before still verify, and changing these
// later keeps every old hash verifiable.
const (
	argonMemoryKiB = 9 * 1024
	argonTime      = 4
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// The hash queue is bounded in time and shared fairly. A password check
// waits at most hashWait for one of the slots, then answers "busy" without
// hashing. Each client address has one place in the queue: a check from an
// address waits (again at most hashWait) while another check from that
// address is in progress, so a flood from one address holds one slot, not
// all of them, and its requests come back no faster than one per check
// (refusing them at once instead let a flood spin the CPU with refusals).
// Waiting longer than hashWait would only turn a flood into latency for
// everyone else.
const (
	hashWait = 2 * time.Second
	// waitersPerSlot bounds how many checks may wait per slot: more could
	// not be served within hashWait (a hash takes ~45 ms), so they are
	// refused at once instead of holding a goroutine and memory for 2 s.
	waitersPerSlot = 16
)

// hasher hashes and verifies passwords with argon2id, bounding how many
// hashes run at once so a burst of logins cannot exhaust memory or CPU.
type hasher struct {
	slots   chan struct{}
	wait    time.Duration
	waiting atomic.Int64
	// runs counts argon2id computations, so tests can prove a path does none.
	runs atomic.Int64

	mu    sync.Mutex
	turns map[string]*addrTurn // client address keys with a password check in progress or waiting

	metrics *metrics.Metrics // records the time each hash waited for a slot; nil: none
}

// addrTurn is one address's place in the password queue.
type addrTurn struct {
	held  chan struct{} // one token: the check in progress
	users int           // the check in progress and those waiting, to forget the entry
}

func newHasher(concurrency int, wait time.Duration) *hasher {
	if concurrency < 1 {
		concurrency = 1
	}
	if wait <= 0 {
		wait = hashWait
	}
	return &hasher{slots: make(chan struct{}, concurrency), wait: wait, turns: map[string]*addrTurn{}}
}

// errBusy refuses a password check that found no slot: nothing was hashed
// or counted, so retrying costs the caller nothing.
func errBusy(retry time.Duration) error {
	return errorf(KindThrottled, "ctalk is busy checking other passwords: retry in %d s", int64(math.Ceil(retry.Seconds())))
}

// claim takes key's one place in the password queue, waiting at most h.wait
// for a check in progress from the same key; release gives it back. An
// empty key (no client address: stdio, tests) is not limited.
func (h *hasher) claim(ctx context.Context, key string) (release func(), err error) {
	if key == "" {
		return func() {}, nil
	}
	h.mu.Lock()
	t := h.turns[key]
	if t == nil {
		t = &addrTurn{held: make(chan struct{}, 1)}
		h.turns[key] = t
	}
	t.users++
	h.mu.Unlock()
	leave := func() {
		h.mu.Lock()
		if t.users--; t.users == 0 {
			delete(h.turns, key)
		}
		h.mu.Unlock()
	}
	release = func() {
		<-t.held
		leave()
	}
	select {
	case t.held <- struct{}{}:
		return release, nil
	default:
	}
	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case t.held <- struct{}{}:
		return release, nil
	case <-timer.C:
		leave()
		return nil, errBusy(h.wait)
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

type turnKey struct{}

// passwordTurn takes the caller's address's place in the password queue for
// the rest of a call's password work (a check, then maybe a new hash). A
// call that already holds it (ctx says so) keeps it.
func (s *Service) passwordTurn(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(turnKey{}) != nil {
		return ctx, func() {}, nil
	}
	release, err := s.hash.claim(ctx, addrKey(ctx))
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, turnKey{}, true), release, nil
}

// dummyHash is verified against when there is no real hash. It is made on
// first use: computing it at start-up kept argon2id's memory in an
// idle server.
var dummyHash = sync.OnceValue(func() string {
	return encodeArgon2id(make([]byte, argonSaltLen), "not a real password")
})

func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		h.runs.Add(1)
		h.metrics.HashWaited(0)
		return nil
	default:
	}
	if h.waiting.Add(1) > int64(waitersPerSlot*cap(h.slots)) {
		h.waiting.Add(-1)
		return errBusy(h.wait)
	}
	defer h.waiting.Add(-1)
	if h.metrics != nil {
		start := time.Now()
		defer func() { h.metrics.HashWaited(time.Since(start)) }()
	}
	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case h.slots <- struct{}{}:
		h.runs.Add(1)
		return nil
	case <-timer.C:
		return errBusy(h.wait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.slots }

// Hash returns the PHC-format argon2id hash of password.
func (h *hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return encodeArgon2id(salt, password), nil
}

// Verify reports whether password matches encoded. An empty encoded hash is
// checked against a dummy hash so the call costs the same.
func (h *hasher) Verify(ctx context.Context, encoded, password string) (bool, error) {
	if encoded == "" {
		// The organization or user does not exist: verify against a dummy
		// hash, so a failed login takes the same time whatever was wrong.
		encoded = dummyHash()
		password = "\x00" + password // never matches the dummy
	}
	p, salt, key, err := decodeArgon2id(encoded)
	if err != nil {
		return false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	got := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

type argonParams struct {
	memory  uint32
	time    uint32
	threads uint8
}

func encodeArgon2id(salt []byte, password string) string {
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("stored password hash is not in argon2id PHC format")

func decodeArgon2id(encoded string) (argonParams, []byte, []byte, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return argonParams{}, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return argonParams{}, nil, nil, errBadHash
	}
	var p argonParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil {
		return argonParams{}, nil, nil, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 {
		return argonParams{}, nil, nil, errBadHash
	}
	return p, salt, key, nil
}
