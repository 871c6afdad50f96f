package transport

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrFrameBudget reports that a large frame could not get its share of the
// server-wide in-flight frame budget in time; the connection is closed.
var ErrFrameBudget = errors.New("in-flight frame budget exhausted")

// frameBudgetWaitMax bounds how long a reader waits for budget before it
// gives up and closes its connection.
const frameBudgetWaitMax = 10 * time.Second

// frameBudget bounds the bytes of large frames being read or handled at
// once across all connections of a server. A frame's whole declared size is
// allocated up front (one allocation, no regrowth copies), so without this
// bound peers declaring 64 MiB frames and trickling their bodies could pin
// connections × 64 MiB.
//
// It is bounded per peer too: a connection holds at most one frame (the
// reader handles one at a time, under the frame read deadline), and all
// connections of one source address together hold at most shareMax, so a
// single peer cannot take the whole budget from everyone else.
type frameBudget struct {
	bytesMax int64
	shareMax int64 // per source address

	mu        sync.Mutex
	bytesUsed int64
	byOwner   map[string]int64
	released  chan struct{} // closed and replaced whenever bytes are returned
}

// inflightShareDivisor: one source address may hold 1/4 of the in-flight
// budget (but always at least one largest frame).
const inflightShareDivisor = 4

func inflightShareBytes(cfg TCPConfig) int64 {
	largest := int64(pooledCapacity(int(cfg.FrameBytesMax)))
	return min(cfg.InflightFrameBytesMax, max(cfg.InflightFrameBytesMax/inflightShareDivisor, largest))
}

func newFrameBudget(bytesMax, shareMax int64) *frameBudget {
	if shareMax <= 0 || shareMax > bytesMax {
		shareMax = bytesMax
	}
	return &frameBudget{bytesMax: bytesMax, shareMax: shareMax, byOwner: make(map[string]int64),
		released: make(chan struct{})}
}

// acquire takes n bytes for owner (a source address), waiting at most
// frameBudgetWaitMax (or until cancel is closed) for other frames to
// release theirs, when either the total or owner's share would be exceeded.
func (b *frameBudget) acquire(n int64, owner string, cancel <-chan struct{}) error {
	if n > b.bytesMax {
		return fmt.Errorf("%w: frame of %d bytes exceeds the budget of %d bytes", ErrFrameBudget, n, b.bytesMax)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if b.bytesUsed+n <= b.bytesMax && (b.byOwner[owner] == 0 || b.byOwner[owner]+n <= b.shareMax) {
			b.bytesUsed += n
			b.byOwner[owner] += n
			b.mu.Unlock()
			return nil
		}
		wake := b.released
		used, owned := b.bytesUsed, b.byOwner[owner]
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(frameBudgetWaitMax)
		}
		select {
		case <-wake:
		case <-cancel:
			return fmt.Errorf("%w: connection closed while waiting for %d bytes", ErrFrameBudget, n)
		case <-timer.C:
			return fmt.Errorf("%w: waited %s for %d bytes (%d of %d in use, %d of this address's %d)",
				ErrFrameBudget, frameBudgetWaitMax, n, used, b.bytesMax, owned, b.shareMax)
		}
	}
}

func (b *frameBudget) release(n int64, owner string) {
	b.mu.Lock()
	b.bytesUsed -= n
	if b.byOwner[owner] -= n; b.byOwner[owner] <= 0 {
		delete(b.byOwner, owner)
	}
	close(b.released)
	b.released = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the number of budget bytes currently held (tests, metrics).
func (b *frameBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytesUsed
}
