package node

import (
	"os"

	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
)

// partitionBreakage deliberately breaks a partition plane, so that the
// whole-node simulator's tests can show each of its checkers fail on a
// broken build (issue 13 point 2, node/nodesim_broken_test.go). Only those
// tests set it; the zero value is the product, and no configuration,
// flag or environment variable reaches it.
type partitionBreakage struct {
	// quorumOfOne: partition groups commit on their primary's own ack
	// (consensus.Config.TestingReplicationQuorum = 1).
	quorumOfOne bool
	// ignoreRetries: sends are never checked against the retry table, so
	// a retried send is applied again.
	ignoreRetries bool
	// replayOffByOne: a recognised retry is answered one offset off.
	replayOffByOne bool
	// backupsRestamp: a backup applies each batch with a later timestamp
	// than its primary stamped (resealed, so the log accepts it).
	backupsRestamp bool
	// storeLess: an offset store of an even value of at least 5 applies
	// five less.
	storeLess bool
	// storeMore: an offset store applies one more than asked.
	storeMore bool
	// backupsFlipAByte: a backup writes the last byte of every batch whose
	// base offset is a multiple of 5 flipped (after the append, in place).
	backupsFlipAByte bool
	// backupsSkipPurge: a backup answers a purge op without carrying it out.
	backupsSkipPurge bool
	// removeKeepsFiles: a partition metadata removed stops being served,
	// but its files stay (and the sweep of unknown directories is off).
	removeKeepsFiles bool
}

// flipLastByte flips the last byte of the batch at loc in its segment
// file (backupsFlipAByte).
func (b partitionBreakage) flipLastByte(fsys vfs.FS, l partitionStore, loc partitions.BatchLocation) {
	pl, ok := l.(*partitions.Log)
	if !ok || loc.Length == 0 {
		return
	}
	f, err := fsys.OpenFile(pl.SegmentLogPath(loc.SegmentStartOffset), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	at := int64(loc.Position + loc.Length - 1)
	var c [1]byte
	if _, err := f.ReadAt(c[:], at); err == nil {
		c[0] ^= 0xFF
		_, _ = f.WriteAt(c[:], at)
	}
}

// brokenStoredOffset is the offset a store of offset applies under b.
func (b partitionBreakage) brokenStoredOffset(offset uint64) uint64 {
	switch {
	case b.storeLess && offset%2 == 0 && offset >= 5:
		return offset - 5
	case b.storeMore:
		return offset + 1
	}
	return offset
}
