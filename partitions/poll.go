package partitions

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lodestream/lodestream/wire"
)

// pollReadAheadBytes is how much of a segment one read fetches when small batches are scanned.
const pollReadAheadBytes = 256 << 10

// PollQuery selects messages. Strategy kinds follow the wire: Offset (value = first offset), Timestamp
// (value = µs; messages whose batch append time is ≥ value), First, Last (the last Count messages),
// Next (the offset after the consumer's stored offset, or the first stored message).
type PollQuery struct {
	Strategy wire.PollingStrategy
	Count    uint32
	// ConsumerKind and ConsumerID name the consumer whose stored offset PollNext continues from.
	ConsumerKind wire.ConsumerKind
	ConsumerID   uint32
}

// PollResult describes the records a poll produced.
type PollResult struct {
	// Records are whole batch records, wire-ready for the PollMessages reply; batches only partly
	// selected are sliced (re-written count/length, base_offset kept, checksum re-sealed).
	Records []byte
	// Appended is the dst passed to PollInto with the records appended (Records is its tail): a caller
	// that reserved the reply prefix in dst writes it here, since appending may have moved the buffer.
	Appended      []byte
	MessagesCount uint32
	FirstOffset   uint64 // offset of the first returned message (valid when MessagesCount > 0)
	LastOffset    uint64 // offset of the last returned message (valid when MessagesCount > 0)
	// NextOffset is where a consumer continues: LastOffset+1, or the resolved start when nothing was
	// returned.
	NextOffset    uint64
	CurrentOffset uint64 // the partition's current (last appended) offset; 0 when empty
}

// Poll runs q against the log; see PollInto.
func (l *Log) Poll(q PollQuery) (PollResult, error) {
	return l.PollInto(nil, q)
}

// PollInto runs q and appends the selected records to dst (a reply buffer that may already hold the
// reply prefix); PollResult.Records is the appended part. At most q.Count messages are returned and at
// most Options.PollBytesMax record bytes, but never fewer than one message when one matches.
func (l *Log) PollInto(dst []byte, q PollQuery) (PollResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return PollResult{}, ErrClosed
	}
	st := l.statsLocked()
	res := PollResult{CurrentOffset: st.CurrentOffset, NextOffset: st.FirstOffset}
	p := poller{log: l, dst: dst, recordsAt: len(dst), count: q.Count, res: &res, reader: segmentReader{log: l}}
	if q.Count == 0 || st.MessagesCount == 0 {
		res.Records, res.Appended = dst[len(dst):], dst
		return res, nil
	}
	var err error
	if q.Strategy.Kind == wire.PollTimestamp {
		err = p.fromTimestamp(q.Strategy.Value)
	} else {
		start, serr := l.startOffset(q, st)
		if serr != nil {
			return PollResult{}, serr
		}
		res.NextOffset = start
		if start < st.NextOffset {
			err = p.fromOffset(start)
		}
	}
	p.reader.release()
	if err != nil {
		return PollResult{}, fmt.Errorf("poll %s: %w", l.dir, err)
	}
	res.Records, res.Appended = p.dst[p.recordsAt:], p.dst
	return res, nil
}

// startOffset resolves an offset-based strategy to the first offset to return (clamped to the first
// stored offset).
func (l *Log) startOffset(q PollQuery, st Stats) (uint64, error) {
	var start uint64
	switch q.Strategy.Kind {
	case wire.PollOffset:
		start = q.Strategy.Value
	case wire.PollFirst:
		start = st.FirstOffset
	case wire.PollLast:
		stored := st.NextOffset - st.FirstOffset
		start = st.NextOffset - min(uint64(q.Count), stored)
	case wire.PollNext:
		if stored, ok := l.offsets.get(q.ConsumerKind, q.ConsumerID); ok {
			start = stored + 1
		}
	default:
		return 0, fmt.Errorf("poll %s: polling kind %d is not 1..5: %w", l.dir, q.Strategy.Kind, wire.ErrInvalidCommand)
	}
	return max(start, st.FirstOffset), nil
}

// poller accumulates the records of one poll.
type poller struct {
	log       *Log
	dst       []byte
	recordsAt int
	count     uint32
	res       *PollResult
	reader    segmentReader
	// skipBelow: damaged ranges whose offsets all lie below it are passed over, not reported (a poll
	// from an offset after a range set apart at a segment's end must not answer that range).
	skipBelow uint64
}

func (p *poller) full() bool {
	return p.res.MessagesCount >= p.count || uint64(len(p.dst)-p.recordsAt) >= p.log.opts.PollBytesMax
}

func (p *poller) fromOffset(start uint64) error {
	segs := p.log.segments
	si := len(segs) - 1
	for si > 0 && segs[si].startOffset > start {
		si--
	}
	pos := segs[si].positionForOffset(start)
	p.skipBelow = start
	return p.scan(si, pos, func(h wire.BatchHeader) (uint32, bool) {
		if h.LastOffset() < start {
			return 0, false
		}
		if h.BaseOffset >= start {
			return 0, true
		}
		return uint32(start - h.BaseOffset), true
	})
}

func (p *poller) fromTimestamp(ts uint64) error {
	for si, s := range p.log.segments {
		if s.messages == 0 || s.timestampMax < ts {
			continue
		}
		// Every batch's messages share its append time (base_timestamp): a batch matches whole or not.
		return p.scan(si, s.positionForTimestamp(ts), func(h wire.BatchHeader) (uint32, bool) {
			return 0, h.BaseTimestamp >= ts
		})
	}
	return nil
}

// scan walks records from segment si at byte pos onward. selectFrom returns the index of the first
// wanted message of a batch, or false to skip the batch.
func (p *poller) scan(si int, pos uint64, selectFrom func(wire.BatchHeader) (uint32, bool)) error {
	for ; si < len(p.log.segments); si, pos = si+1, 0 {
		s := p.log.segments[si]
		p.reader.reset(s)
		for pos < s.sizeBytes {
			if d := s.damageAt(pos); d != nil && d.to > pos && d.endOffset <= p.skipBelow {
				pos = d.to
				continue
			}
			at := pos
			record, h, err := p.reader.record(pos)
			if err != nil {
				return p.stopAtDamage(err)
			}
			pos += h.BatchLength
			first, ok := selectFrom(h)
			if !ok {
				continue
			}
			// Never serve a batch that does not verify: slicing would re-seal its checksum over the
			// damage. Every frame checksum and the batch checksum are checked (~8 GB/s).
			if _, err := wire.VerifyBatch(record); err != nil {
				return p.stopAtDamage(p.log.corruptAt(s, at, h.BaseOffset, err.Error()))
			}
			if err := p.take(record, h, first); err != nil {
				return err
			}
			if p.full() {
				return nil
			}
		}
		if d := s.damageAt(s.sizeBytes); d != nil && d.endOffset > p.skipBelow {
			// Offsets missing after this segment (set apart at open).
			ce, _ := p.log.damageError(s, d)
			return p.stopAtDamage(ce)
		}
	}
	return nil
}

// stopAtDamage ends a poll at damaged bytes: what was verified before them is served (the consumer's
// next poll starts at the damage and is refused), and a poll that would start there gets the error.
func (p *poller) stopAtDamage(err error) error {
	if p.res.MessagesCount > 0 && errors.Is(err, ErrCorrupt) {
		return nil
	}
	return err
}

// take appends messages [first, ...) of one stored batch, bounded by the count and byte budget.
func (p *poller) take(record []byte, h wire.BatchHeader, first uint32) error {
	want := min(p.count-p.res.MessagesCount, h.MessageCount-first)
	budget := p.log.opts.PollBytesMax - uint64(len(p.dst)-p.recordsAt)
	n := want
	if first != 0 || want != h.MessageCount || h.BatchLength > budget {
		n = fittingMessages(record, first, want, budget)
		if n == 0 {
			if p.res.MessagesCount > 0 {
				p.count = p.res.MessagesCount // budget spent: stop here
				return nil
			}
			n = 1 // one message always fits a reply frame
		}
	}
	var err error
	if p.dst, err = wire.AppendBatchSlice(p.dst, record, first, n); err != nil {
		return fmt.Errorf("slice batch at offset %d: %w", h.BaseOffset, err)
	}
	if p.res.MessagesCount == 0 {
		p.res.FirstOffset = h.BaseOffset + uint64(first)
	}
	p.res.MessagesCount += n
	p.res.LastOffset = h.BaseOffset + uint64(first) + uint64(n) - 1
	p.res.NextOffset = p.res.LastOffset + 1
	if n < want {
		p.count = p.res.MessagesCount // budget spent
	}
	return nil
}

// fittingMessages counts how many of up to want messages from index first fit, as one sliced record,
// in budget bytes.
func fittingMessages(record []byte, first, want uint32, budget uint64) uint32 {
	used := uint64(wire.BatchHeaderSize)
	var n uint32
	it := wire.NewBatchIter(record)
	for it.Next() && n < want {
		if it.Index()-1 < first {
			continue
		}
		used += uint64(len(it.Message().Frame))
		if used > budget {
			break
		}
		n++
	}
	return n
}

// segmentReader serves records of one segment from a read-ahead window.
type segmentReader struct {
	log      *Log
	seg      *segment
	buf      []byte
	bufStart uint64
	// newDamage: the last damaged header record reported was a place not reported before.
	newDamage bool
}

// readBuffers recycles read-ahead windows between polls; windows grown past the read-ahead size for
// one big batch are dropped instead of kept.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, pollReadAheadBytes); return &b }}

func (r *segmentReader) release() {
	if r.buf != nil && cap(r.buf) == pollReadAheadBytes {
		b := r.buf[:0]
		readBuffers.Put(&b)
	}
	r.buf = nil
}

func (r *segmentReader) reset(s *segment) {
	if r.buf == nil {
		r.buf = (*readBuffers.Get().(*[]byte))[:0]
	}
	r.seg = s
	r.buf = r.buf[:0]
}

func (r *segmentReader) covers(pos, n uint64) bool {
	return pos >= r.bufStart && pos+n <= r.bufStart+uint64(len(r.buf))
}

func (r *segmentReader) fill(pos, n uint64) error {
	n = min(max(n, pollReadAheadBytes), r.seg.sizeBytes-pos)
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	r.bufStart = pos
	if _, err := r.seg.logFile.ReadAt(r.buf, int64(pos)); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read segment %d at %d: %w", r.seg.startOffset, pos, err)
	}
	return nil
}

// record returns the batch record stored at pos (aliasing the window, valid until the next call).
func (r *segmentReader) record(pos uint64) ([]byte, wire.BatchHeader, error) {
	if d := r.seg.damageAt(pos); d != nil {
		ce, first := r.log.damageError(r.seg, d)
		r.newDamage = first
		return nil, wire.BatchHeader{}, ce
	}
	if !r.covers(pos, wire.BatchHeaderSize) {
		if err := r.fill(pos, wire.BatchHeaderSize); err != nil {
			return nil, wire.BatchHeader{}, err
		}
	}
	h, err := wire.DecodeBatchHeader(r.buf[pos-r.bufStart:])
	if err != nil || h.BatchLength > r.seg.sizeBytes-pos || h.BatchLength > wire.BatchFrameBytesMax {
		reason := fmt.Sprintf("no valid batch header (batch_length %d)", h.BatchLength)
		if err != nil {
			reason = fmt.Sprintf("no valid batch header: %v", err)
		}
		ce, first := r.log.reportCorruption(r.seg, pos, r.seg.offsetNear(pos), reason)
		r.newDamage = first
		return nil, wire.BatchHeader{}, ce
	}
	if !r.covers(pos, h.BatchLength) {
		if err := r.fill(pos, h.BatchLength); err != nil {
			return nil, wire.BatchHeader{}, err
		}
	}
	at := pos - r.bufStart
	return r.buf[at : at+h.BatchLength], h, nil
}
