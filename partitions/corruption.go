package partitions

import (
	"sync"
	"sync/atomic"
)

// corruptionReportsMax bounds the damaged places a log remembers having reported at error level; past
// it every detection is logged again (memory stays bounded, the log gets louder, never quieter).
const corruptionReportsMax = 256

// corruptionReports remembers which damaged places were already logged, so a consumer polling the
// same damaged offset in a loop logs it once, not once per poll.
type corruptionReports struct {
	mu       sync.Mutex
	seen     map[corruptionPlace]struct{}
	detected atomic.Uint64
}

type corruptionPlace struct {
	segmentStart uint64
	position     uint64
}

// firstReport records a detection and says whether this place was not reported before.
func (c *corruptionReports) firstReport(p corruptionPlace) bool {
	c.detected.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[p]; ok {
		return false
	}
	if c.seen == nil {
		c.seen = make(map[corruptionPlace]struct{})
	}
	if len(c.seen) < corruptionReportsMax {
		c.seen[p] = struct{}{}
	}
	return true
}

// forget drops a place from the reported ones (it was repaired: damage found there again is new).
func (c *corruptionReports) forget(p corruptionPlace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seen, p)
}

// corruptAt builds the error for damaged bytes found at pos of segment s by a read, and logs it (once
// per place): file, byte position and offset.
func (l *Log) corruptAt(s *segment, pos, offset uint64, reason string) *CorruptionError {
	e, _ := l.reportCorruption(s, pos, offset, reason)
	return e
}

// reportCorruption is corruptAt that also says whether this place was reported for the first time.
func (l *Log) reportCorruption(s *segment, pos, offset uint64, reason string) (*CorruptionError, bool) {
	e := &CorruptionError{Dir: l.dir, File: segmentBaseName(s.startOffset) + logSuffix, Position: pos, Offset: offset,
		Reason: reason}
	first := l.corruption.firstReport(corruptionPlace{s.startOffset, pos})
	if first {
		l.logger.Error("corrupt batch in partition log: refusing to serve it", "dir", l.dir, "file", e.File,
			"position", pos, "offset", offset, "reason", reason)
	}
	return e, first
}

// CorruptionsDetected counts the reads (polls, record reads, scrubs) that found damaged bytes.
func (l *Log) CorruptionsDetected() uint64 { return l.corruption.detected.Load() }

// offsetNear is the best known offset at or before byte pos of the segment (from the sparse index),
// for reporting damage whose batch header cannot be read.
func (s *segment) offsetNear(pos uint64) uint64 {
	off := s.startOffset
	for _, e := range s.index {
		if e.position > pos {
			break
		}
		off = e.offset
	}
	return off
}
