package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// clientEvents is a slog handler for one leader-aware client: it records
// the client's own re-sends inside one call (57 replays on the same
// connection, 58 resends on the endpoint walk, broken connections), which
// the caller cannot see, so that the checker can tell a duplicate the
// client made from one the server made.
type clientEvents struct {
	mu     sync.Mutex
	start  time.Time
	trace  []string
	replay int // 57 replays of the same bytes
	walk   int // resends after 58
}

func newClientEvents() *clientEvents { return &clientEvents{start: time.Now()} }

func (e *clientEvents) Enabled(context.Context, slog.Level) bool { return true }

func (e *clientEvents) Handle(_ context.Context, r slog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r.Message {
	case "replaying transient rejection":
		e.replay++
	case "resending after TransientNotAccepted":
		e.walk++
	}
	if len(e.trace) < 64 {
		line := fmt.Sprintf("+%.3fs %s", time.Since(e.start).Seconds(), r.Message)
		r.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		e.trace = append(e.trace, line)
	}
	return nil
}

func (e *clientEvents) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *clientEvents) WithGroup(string) slog.Handler      { return e }

// take returns and resets what happened since the last take.
func (e *clientEvents) take() (replay, walk int, trace []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	replay, walk, trace = e.replay, e.walk, e.trace
	e.replay, e.walk, e.trace = 0, 0, nil
	e.start = time.Now()
	return
}
