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
type frameBudget struct {
	bytesMax int64

	mu        sync.Mutex
	bytesUsed int64
	released  chan struct{} // closed and replaced whenever bytes are returned
}

func newFrameBudget(bytesMax int64) *frameBudget {
	return &frameBudget{bytesMax: bytesMax, released: make(chan struct{})}
}

// acquire takes n bytes, waiting at most frameBudgetWaitMax (or until
// cancel is closed) for other frames to release theirs.
func (b *frameBudget) acquire(n int64, cancel <-chan struct{}) error {
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
		if b.bytesUsed+n <= b.bytesMax {
			b.bytesUsed += n
			b.mu.Unlock()
			return nil
		}
		wake := b.released
		used := b.bytesUsed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(frameBudgetWaitMax)
		}
		select {
		case <-wake:
		case <-cancel:
			return fmt.Errorf("%w: connection closed while waiting for %d bytes", ErrFrameBudget, n)
		case <-timer.C:
			return fmt.Errorf("%w: waited %s for %d bytes (%d of %d in use)", ErrFrameBudget, frameBudgetWaitMax, n, used, b.bytesMax)
		}
	}
}

func (b *frameBudget) release(n int64) {
	b.mu.Lock()
	b.bytesUsed -= n
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
