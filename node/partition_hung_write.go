package node

import (
	"errors"
	"time"
)

// A write that never returns (issue 9 point 6). A failed write fences
// its group, and a fence older than superblock_wedged_fatal_timeout stops
// the process (checkWedged); a write stuck in the kernel (a disk that
// stopped answering: an fdatasync that never returns) fails nothing and
// fences nothing, and its group would wait for it for ever, its log's
// lock held by a sync and its reads with it. The same timeout covers it:
// once a durable write of the shard has been out that long, the process
// stops with ExitStorageWedged, as for a fence. (A simulator's inline
// shard runs its writes on the caller: none is ever out.)

// errWriteNeverReturned is a hung write's cause in the wedged error.
var errWriteNeverReturned = errors.New("a partition storage write (WAL, segment or fdatasync) has not returned")

// noteWriteStarted (loop) records a batch leaving for the writers.
func (s *partitionShard) noteWriteStarted(b *writeBatch) {
	b.started = time.UnixMicro(int64(s.clock.NowMicros()))
	if s.outstanding == nil {
		s.outstanding = make(map[*writeBatch]struct{})
	}
	s.outstanding[b] = struct{}{}
}

// noteWriteFinished (loop) forgets a batch that came back.
func (s *partitionShard) noteWriteFinished(b *writeBatch) { delete(s.outstanding, b) }

// checkHungWrites (each tick) stops the process once a batch of writes
// has been out for the wedged timeout.
func (s *partitionShard) checkHungWrites(now time.Time) {
	if s.wedgedTimeout <= 0 {
		return
	}
	for b := range s.outstanding {
		since := now.Sub(b.started)
		if since < s.wedgedTimeout {
			continue
		}
		scope := "partition storage"
		if len(b.entries) > 0 {
			scope += " (" + b.entries[0].dir + ")"
		}
		select {
		case s.fatal <- &wedgedError{scope: scope, since: since, lastErr: errWriteNeverReturned}:
		default: // one is enough
		}
		return
	}
}
