package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ProgressInterval is how often the live line is refreshed.
const ProgressInterval = time.Second

// progress prints one status line per interval to w: rewritten in place with \r on a terminal,
// one line each otherwise (logs, CI).
type progress struct {
	w        io.Writer
	terminal bool
	live     *liveCounters
	started  time.Time
	lastAt   time.Time
	last     [2]uint64 // produced and consumed bytes at lastAt
	wroteAny bool
}

// IsTerminal reports whether f is a character device (an interactive terminal).
func IsTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, terminal bool, live *liveCounters, started time.Time) *progress {
	return &progress{w: w, terminal: terminal, live: live, started: started, lastAt: started}
}

// line renders the status at now: interval rate and the average so far for each direction.
func (p *progress) line(now time.Time) string {
	produced, consumed := p.live.producedBytes.Load(), p.live.consumedBytes.Load()
	interval := now.Sub(p.lastAt).Seconds()
	total := now.Sub(p.started).Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "[%6.1fs]", total)
	part := func(label string, bytes, before uint64, messages uint64) {
		if interval <= 0 || total <= 0 {
			return
		}
		fmt.Fprintf(&b, " %s %8.1f MB/s now, %8.1f MB/s avg, %d msgs;", label,
			float64(bytes-before)/bytesPerMB/interval, float64(bytes)/bytesPerMB/total, messages)
	}
	part("produced", produced, p.last[0], p.live.producedMessages.Load())
	part("consumed", consumed, p.last[1], p.live.consumedMessages.Load())
	p.lastAt, p.last = now, [2]uint64{produced, consumed}
	return strings.TrimSuffix(b.String(), ";")
}

// tick writes the current line.
func (p *progress) tick(now time.Time) {
	l := p.line(now)
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s\033[K", l)
	} else {
		fmt.Fprintln(p.w, l)
	}
	p.wroteAny = true
}

// finish ends an in-place line so the summary starts on a fresh one.
func (p *progress) finish() {
	if p.terminal && p.wroteAny {
		fmt.Fprintln(p.w)
	}
}

// run ticks every ProgressInterval until stop closes.
func (p *progress) run(stop <-chan struct{}) {
	t := time.NewTicker(ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.finish()
			return
		case now := <-t.C:
			p.tick(now)
		}
	}
}
