package node

import (
	"time"

	"github.com/lodestream/lodestream/wire"
)

// A partition group whose storage failed is fenced (issue 9 point 6), as
// the metadata group is (storage_fence.go):
//
//   - A Ready that could not be carried out (its prepare WAL or superblock
//     write failed, or, on a cluster replica, a committed batch or offset
//     could not be applied: skipping it would leave this replica's files
//     different from its peers') stays un-advanced and is tried again every
//     storageRetryInterval; the fence lifts when it goes through (a full
//     disk that has room again).
//   - A failed fsync is never retried on the same files as if nothing had
//     happened (the kernel may have dropped the dirty pages and report the
//     next fsync clean): the writes of that Ready are answered 57 (outcome
//     unknown: they may still be visible, a retry with the same request id
//     is recognised), and the group stays fenced (sticky) until it is
//     opened again from fresh files, in the background or at a restart
//     (partition_fsync_failed.go).
//   - While fenced, new writes are answered 58 (retryable, nothing entered
//     a pipeline), writes waiting on the group are answered 57, reads are
//     served from the log, and a cluster replica that stops carrying out
//     Readys falls silent in that group, so its peers change view around
//     it. A fenced group never rests.
//   - A fence older than [cluster] superblock_wedged_fatal_timeout (unless
//     0/disabled) stops the process with ExitStorageWedged (4).
type partitionFence struct {
	since   time.Time // zero: not fenced
	retryAt time.Time
	lastErr error
	sticky  bool // a failed fsync: lifted only by a restart
}

func (f *partitionFence) fenced() bool { return !f.since.IsZero() }

// mayCarryOut: the group's Ready may be tried now.
func (f *partitionFence) mayCarryOut(now time.Time) bool {
	return !f.fenced() || (!f.sticky && !now.Before(f.retryAt))
}

// fenceGroup records a storage failure of e's group and answers what
// waits on it.
func (s *partitionShard) fenceGroup(e *partitionEntry, err error, sticky bool) {
	now := time.UnixMicro(int64(s.clock.NowMicros()))
	f := &e.fence
	if !f.fenced() {
		f.since = now
		s.log.Error("partition storage failed: writes are fenced (retryable errors), reads are served", "dir", e.dir,
			"err", err, "fsync_failed", sticky, "wedged_fatal_timeout", s.wedgedTimeout)
	}
	f.lastErr, f.retryAt = err, now.Add(storageRetryInterval)
	f.sticky = f.sticky || sticky
	e.filesReshaped++ // its files may be rewritten (partition_presync.go)
	e.stampValid = false
	for tag, p := range s.waiting {
		if p.entry == e {
			delete(s.waiting, tag)
			e.inflight--
			p.reply(partitionOutcome{code: wire.ErrTransientNotCommitted})
		}
	}
	for _, p := range e.backlog {
		p.reply(partitionOutcome{code: wire.ErrTransientNotAccepted, bodyReleased: true})
	}
	e.backlog = nil
	e.noteInflightEnded()
}

// liftFence: the group's Ready went through again.
func (s *partitionShard) liftFence(e *partitionEntry) {
	if !e.fence.fenced() || e.fence.sticky {
		return
	}
	now := time.UnixMicro(int64(s.clock.NowMicros()))
	s.log.Info("partition storage writes again: fence lifted", "dir", e.dir, "fenced_for", now.Sub(e.fence.since))
	e.fence = partitionFence{}
}

// checkWedged (each tick, for an awake fenced group) stops the process
// once the fence outlived the timeout.
func (s *partitionShard) checkWedged(e *partitionEntry, now time.Time) {
	f := &e.fence
	if !f.fenced() || s.wedgedTimeout <= 0 || now.Sub(f.since) < s.wedgedTimeout {
		return
	}
	select {
	case s.fatal <- &wedgedError{scope: "partition storage (" + e.dir + ")", since: now.Sub(f.since), lastErr: f.lastErr}:
	default: // one is enough
	}
}
