package node

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                         { return c.t }
func (c *fakeClock) advance(d time.Duration)                { c.t = c.t.Add(d) }
func limiterAt(c *fakeClock, l *loginLimiter) *loginLimiter { l.now = c.now; return l }

// Issue 15 point 4: failures are limited per source address, and refilled
// one token per interval.
func TestLoginLimiterPerAddress(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	l := limiterAt(clock, newLoginLimiter(3, 100, time.Second, 16))
	for i := range 3 {
		if !l.allow("127.0.0.2", fmt.Sprintf("user%d", i)) {
			t.Fatalf("attempt %d refused before the limit", i+1)
		}
		l.failed("127.0.0.2", fmt.Sprintf("user%d", i))
	}
	if l.allow("127.0.0.2", "anyone") {
		t.Fatal("fourth attempt from the address allowed after 3 failures")
	}
	if !l.allow("127.0.0.3", "anyone") {
		t.Fatal("another address refused")
	}
	clock.advance(999 * time.Millisecond)
	if l.allow("127.0.0.2", "anyone") {
		t.Fatal("allowed before a token returned")
	}
	clock.advance(time.Millisecond)
	if !l.allow("127.0.0.2", "anyone") {
		t.Fatal("refused after a token returned")
	}
	if !l.allow("127.0.0.2", "") {
		t.Fatal("token login refused with a token available")
	}
}

// Issue 15 point 4: failures are limited per username across addresses.
func TestLoginLimiterPerUser(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	l := limiterAt(clock, newLoginLimiter(100, 2, time.Minute, 16))
	l.failed("127.0.0.2", "alice")
	l.failed("127.0.0.3", "alice")
	if l.allow("127.0.0.4", "alice") {
		t.Fatal("alice allowed from a fresh address after 2 failures")
	}
	if !l.allow("127.0.0.4", "bob") {
		t.Fatal("bob refused")
	}
	if !l.allow("127.0.0.4", "") {
		t.Fatal("token login refused: tokens are limited by address only")
	}
}

// Issue 15 point 4: the limiter's memory is bounded: a flood of distinct
// addresses and usernames never grows a table past its cap, and the buckets
// closest to refusal survive.
func TestLoginLimiterMemoryBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	l := limiterAt(clock, newLoginLimiter(3, 3, time.Hour, 64))
	for range 3 {
		l.failed("10.0.0.1", "victim")
	}
	for i := range 10000 {
		l.failed(fmt.Sprintf("10.1.%d.%d", i/256, i%256), fmt.Sprintf("spray%d", i))
		clock.advance(time.Millisecond)
	}
	if a, u := l.sizes(); a > 64 || u > 64 {
		t.Fatalf("tables hold %d addresses and %d users, cap 64", a, u)
	}
	if l.allow("10.0.0.1", "x") || l.allow("10.9.9.9", "victim") {
		t.Fatal("the exhausted address or user was forgotten while others had tokens left")
	}
}

// Issue 15 point 4: password hashing is bounded server-wide by a semaphore
// sized to the cores, and a waiter gives up when its connection closes.
func TestCredentialSlotsSizedToCoresAndCancellable(t *testing.T) {
	slots := newCredentialSlots()
	if want := max(1, runtime.GOMAXPROCS(0)/2); cap(slots) != want {
		t.Fatalf("%d slots, want %d", cap(slots), want)
	}
	release := make(chan struct{})
	held := make(chan struct{}, cap(slots))
	for range cap(slots) {
		go slots.run(nil, func() { held <- struct{}{}; <-release })
	}
	for range cap(slots) {
		<-held
	}
	cancel := make(chan struct{})
	ran := make(chan bool, 1)
	go func() { ran <- slots.run(cancel, func() { t.Error("ran beyond the bound") }) }()
	select {
	case <-ran:
		t.Fatal("run returned while every slot was held")
	case <-time.After(50 * time.Millisecond):
	}
	close(cancel)
	if <-ran {
		t.Fatal("cancelled waiter reported running")
	}
	close(release)
}
