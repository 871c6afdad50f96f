package node

import (
	"sync"
	"sync/atomic"
	"time"
)

// loginLimiter limits failed logins per source address and per username
// ([login] in the configuration). Each key has a token bucket of capacity
// tokens; a failed login takes one token from its address's bucket and its
// username's, and one token returns every refill interval. A login whose
// address or username has no whole token left is refused before any
// credential check, so a failing client costs no password hashing.
//
// Memory is bounded: each table holds at most entriesMax keys (usernames
// are at most 255 bytes). A full table first forgets every bucket that has
// refilled completely (it carries no state), then the bucket with the most
// tokens left, so the keys closest to being refused are the last forgotten.
type loginLimiter struct {
	mu        sync.Mutex
	refill    time.Duration
	byAddress bucketTable
	byUser    bucketTable
	now       func() time.Time
}

type bucketTable struct {
	capacity   float64
	entriesMax int
	buckets    map[string]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newLoginLimiter(perAddress, perUser uint64, refill time.Duration, entriesMax int) *loginLimiter {
	return &loginLimiter{
		refill:    refill,
		byAddress: bucketTable{capacity: float64(perAddress), entriesMax: entriesMax, buckets: make(map[string]*tokenBucket)},
		byUser:    bucketTable{capacity: float64(perUser), entriesMax: entriesMax, buckets: make(map[string]*tokenBucket)},
		now:       time.Now,
	}
}

// allow reports whether a login from address for username (empty: a token
// login, limited by address only) may be checked.
func (l *loginLimiter) allow(address, username string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.byAddress.tokens(address, now, l.refill) < 1 {
		return false
	}
	return username == "" || l.byUser.tokens(username, now, l.refill) >= 1
}

// failed records a failed login.
func (l *loginLimiter) failed(address, username string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.byAddress.take(address, now, l.refill)
	if username != "" {
		l.byUser.take(username, now, l.refill)
	}
}

// sizes reports how many keys each table holds (tests).
func (l *loginLimiter) sizes() (addresses, users int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byAddress.buckets), len(l.byUser.buckets)
}

// level brings b up to now and returns its tokens.
func (t *bucketTable) level(b *tokenBucket, now time.Time, refill time.Duration) float64 {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(t.capacity, b.tokens+float64(elapsed)/float64(refill))
		b.at = now
	}
	return b.tokens
}

func (t *bucketTable) tokens(key string, now time.Time, refill time.Duration) float64 {
	b, ok := t.buckets[key]
	if !ok {
		return t.capacity
	}
	return t.level(b, now, refill)
}

func (t *bucketTable) take(key string, now time.Time, refill time.Duration) {
	b, ok := t.buckets[key]
	if !ok {
		if len(t.buckets) >= t.entriesMax {
			t.evict(now, refill)
		}
		b = &tokenBucket{tokens: t.capacity, at: now}
		t.buckets[key] = b
	}
	t.level(b, now, refill)
	b.tokens = max(0, b.tokens-1)
}

// evict makes room for one key (see loginLimiter).
func (t *bucketTable) evict(now time.Time, refill time.Duration) {
	var fullest string
	most := -1.0
	for key, b := range t.buckets {
		tokens := t.level(b, now, refill)
		if tokens >= t.capacity {
			delete(t.buckets, key)
			continue
		}
		if tokens > most {
			fullest, most = key, tokens
		}
	}
	if len(t.buckets) >= t.entriesMax {
		delete(t.buckets, fullest)
	}
}

// logThrottle lets a repetitive log line through at most once a second.
type logThrottle struct{ lastNs atomic.Int64 }

func (l *logThrottle) allow() bool {
	now := time.Now().UnixNano()
	last := l.lastNs.Load()
	return now-last >= int64(time.Second) && l.lastNs.CompareAndSwap(last, now)
}
