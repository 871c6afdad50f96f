package partitions

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/lodestream/lodestream/wire"
)

// plModel is what the power-loss test wrote to a partition log and what the log promised.
type plModel struct {
	// candidates are the batches that may be stored at a base offset: the acknowledged one, and any
	// whose append failed (a failed append may leave its bytes behind a crash; never acknowledged).
	candidates map[uint64][][]byte
	// acked is the acknowledged batch at each base offset, locs where Append put it.
	acked map[uint64][]byte
	locs  map[uint64]BatchLocation
	// synced: every acknowledged batch starting below it was synced (a Sync returned nil after it).
	synced uint64
	// handedOut: the end of the last acknowledged append (offsets below were handed out).
	handedOut uint64
	// floor: batches below it may be gone (retention, a purge).
	floor uint64
	// refused: offset ranges a reopen set apart (polls over them answer CorruptionError).
	refused [][2]uint64
	// offsets: per consumer, the values a reopen may find (plAbsent: none).
	offsets map[offsetKey]map[uint64]bool
	// offsetUnsettled: a store or delete of the consumer failed since its last durable one, so what
	// the log shows now may not be durable (a failed directory fsync) until a power loss settles it.
	offsetUnsettled map[offsetKey]bool
	// purgeUnsure: a purge was interrupted; the log may be the old one (a suffix) or the new one.
	purgeUnsure bool
	// removalUnsure: a retention deletion failed (its directory fsync, say); the segments it removed
	// may come back until a power loss settles it.
	removalUnsure bool
	// limbo: offsets whose fsync failed. Linux marks such pages clean: they stay readable from the
	// page cache (a process restart serves them) but a later fsync does not write them, so until a
	// power loss settles it they may be missing or damaged however many syncs succeed later. Never
	// acknowledged as persisted (the failed Sync said so).
	limbo [][2]uint64
	// flipped: the base offset of a synced batch the test damaged before this open (plAbsent: none).
	flipped uint64
}

const plAbsent = ^uint64(0)

func newPLModel() *plModel {
	return &plModel{candidates: map[uint64][][]byte{}, acked: map[uint64][]byte{}, locs: map[uint64]BatchLocation{},
		offsets: map[offsetKey]map[uint64]bool{}, offsetUnsettled: map[offsetKey]bool{}, flipped: plAbsent}
}

func (m *plModel) attempt(base uint64, batch []byte) {
	m.candidates[base] = append(m.candidates[base], batch)
}

func (m *plModel) ack(base uint64, batch []byte, count uint32, loc BatchLocation) {
	m.acked[base] = batch
	m.locs[base] = loc
	m.handedOut = base + uint64(count)
}

func (m *plModel) isCandidate(base uint64, batch []byte) bool {
	for _, c := range m.candidates[base] {
		if bytes.Equal(c, batch) {
			return true
		}
	}
	return false
}

func (m *plModel) inLimbo(offset uint64) bool { return inRanges(m.limbo, offset) }

func (m *plModel) wasRefused(offset uint64) bool {
	for _, r := range m.refused {
		if offset >= r[0] && offset < r[1] {
			return true
		}
	}
	return false
}

// offsetMay records that a consumer's stored offset may now be v (plAbsent: deleted).
func (m *plModel) offsetMay(k offsetKey, v uint64) {
	if m.offsets[k] == nil {
		m.offsets[k] = map[uint64]bool{plAbsent: true}
	}
	m.offsets[k][v] = true
}

// offsetIs records that a consumer's stored offset is durably v.
func (m *plModel) offsetIs(k offsetKey, v uint64) {
	m.offsets[k] = map[uint64]bool{v: true}
	delete(m.offsetUnsettled, k)
}

func (m *plModel) purged() {
	*m = plModel{candidates: map[uint64][][]byte{}, acked: map[uint64][]byte{}, locs: map[uint64]BatchLocation{},
		offsets: m.offsets, offsetUnsettled: m.offsetUnsettled, flipped: plAbsent}
	for k := range m.offsets {
		m.offsetIs(k, plAbsent)
	}
}

// flippedAt says whether offset is the batch the test damaged.
func (m *plModel) flippedAt(offset uint64) bool { return m.flipped != plAbsent && offset == m.flipped }

// flippedIn says whether the damaged batch lies in [from, to).
func (m *plModel) flippedIn(from, to uint64) bool {
	return m.flipped != plAbsent && m.flipped >= from && m.flipped < to
}

// dropFrom forgets every acknowledged batch at or above offset (a replica set them aside to refill
// them).
func (m *plModel) dropFrom(offset uint64) {
	for base := range m.acked {
		if base >= offset {
			delete(m.acked, base)
			delete(m.locs, base)
		}
	}
	// The candidates stay: a set-aside that failed half way may leave any of them behind.
	m.synced = min(m.synced, offset)
	m.handedOut = min(m.handedOut, offset)
}

// plScan is what a walk of the reopened log found.
type plScan struct {
	found   map[uint64][]byte // base offset → stored batch
	refused [][2]uint64       // ranges polls refused (CorruptionError)
	end     uint64            // offset after the last batch found
}

// scanLog polls the whole log from its first offset, batch by batch, and checks every served batch
// is one the test wrote at that offset, byte for byte.
func scanLog(l *Log, m *plModel) (plScan, error) {
	st := l.Stats()
	sc := plScan{found: map[uint64][]byte{}}
	off := st.FirstOffset
	for off < st.NextOffset {
		res, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: off}, Count: 1 << 20})
		var ce *CorruptionError
		if errors.As(err, &ce) {
			if ce.EndOffset <= off {
				return sc, fmt.Errorf("poll at %d refused without an end: %v", off, err)
			}
			sc.refused = append(sc.refused, [2]uint64{ce.Offset, ce.EndOffset})
			off = ce.EndOffset
			continue
		}
		if err != nil {
			return sc, fmt.Errorf("poll at %d: %w", off, err)
		}
		if res.MessagesCount == 0 {
			break // a hole up to the next offset (offsets a crash lost, skipped)
		}
		for rec := res.Records; len(rec) > 0; {
			h, err := wire.DecodeBatchHeader(rec)
			if err != nil || h.BatchLength > uint64(len(rec)) {
				return sc, fmt.Errorf("poll at %d: undecodable record: %v", off, err)
			}
			batch := rec[:h.BatchLength]
			if !m.isCandidate(h.BaseOffset, batch) {
				return sc, fmt.Errorf("served a batch at offset %d (%d messages) the test never wrote there", h.BaseOffset, h.MessageCount)
			}
			sc.found[h.BaseOffset] = slices.Clone(batch)
			off = h.BaseOffset + uint64(h.MessageCount)
			sc.end = off
			rec = rec[h.BatchLength:]
		}
	}
	return sc, nil
}
