package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Little-endian binary primitives shared by the command and snapshot
// encodings. The reader is strict: every read is bounds-checked, bools
// must be 0 or 1, and the first error sticks.

type writer struct {
	buf      []byte
	overflow bool // a string did not fit its u16 length prefix
}

func (w *writer) u8(v uint8)   { w.buf = append(w.buf, v) }
func (w *writer) u16(v uint16) { w.buf = binary.LittleEndian.AppendUint16(w.buf, v) }
func (w *writer) u32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }
func (w *writer) u64(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }
func (w *writer) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

// str16 writes a u16 length prefix; a longer string marks the writer as
// overflowed (EncodeCommand then emits an invalid encoding).
func (w *writer) str16(s string) {
	if len(s) > 0xFFFF {
		w.overflow = true
		return
	}
	w.u16(uint16(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) ident(id Ident) {
	if id.IsName {
		w.u8(2)
		w.str16(id.Name)
		return
	}
	w.u8(1)
	w.u32(id.ID)
}

func (w *writer) client(c ClientID) {
	w.u64(c.Lo)
	w.u64(c.Hi)
}

func (w *writer) permissions(p *Permissions) {
	if p == nil {
		w.u8(0)
		return
	}
	w.u8(1)
	g := p.Global
	for _, b := range []bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams,
		g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages} {
		w.boolean(b)
	}
	w.u32(uint32(len(p.Streams)))
	for _, sid := range sortedKeys(p.Streams) {
		sp := p.Streams[sid]
		w.u32(sid)
		for _, b := range []bool{sp.ManageStream, sp.ReadStream, sp.ManageTopics, sp.ReadTopics, sp.PollMessages, sp.SendMessages} {
			w.boolean(b)
		}
		w.u32(uint32(len(sp.Topics)))
		tids := make([]uint32, 0, len(sp.Topics))
		for tid := range sp.Topics {
			tids = append(tids, tid)
		}
		sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
		for _, tid := range tids {
			tp := sp.Topics[tid]
			w.u32(tid)
			for _, b := range []bool{tp.ManageTopic, tp.ReadTopic, tp.PollMessages, tp.SendMessages} {
				w.boolean(b)
			}
		}
	}
}

var errShort = errors.New("unexpected end of data")

type reader struct {
	buf []byte
	off int
	err error
	// version is the snapshot format being read (Restore sets it).
	version uint16
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %w", r.off, err)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.buf)-r.off < n {
		r.fail(errShort)
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) remaining() int { return len(r.buf) - r.off }

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) boolean() bool {
	switch v := r.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(fmt.Errorf("bool byte %d is not 0 or 1", v))
		return false
	}
}

// str16 reads a u16-length string of at most max bytes.
func (r *reader) str16(max int) string {
	n := int(r.u16())
	if r.err == nil && n > max {
		r.fail(fmt.Errorf("string length %d exceeds %d", n, max))
		return ""
	}
	return string(r.take(n))
}

func (r *reader) ident() Ident {
	switch kind := r.u8(); kind {
	case 1:
		return Ident{ID: r.u32()}
	case 2:
		name := r.str16(NameBytesMax)
		if r.err == nil && name == "" {
			r.fail(errors.New("empty name identifier"))
		}
		return Ident{Name: name, IsName: true}
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("identifier kind %d is not 1 or 2", kind))
		}
		return Ident{}
	}
}

func (r *reader) client() ClientID {
	lo := r.u64()
	return ClientID{Lo: lo, Hi: r.u64()}
}

// count reads a u32 element count, bounded by max and by the bytes left
// (each element needs at least minBytes), so a forged count cannot force
// a huge allocation.
func (r *reader) count(max, minBytes int) int {
	n := int(r.u32())
	if r.err != nil {
		return 0
	}
	if n > max || n*minBytes > r.remaining() {
		r.fail(fmt.Errorf("count %d exceeds bound %d or remaining %d bytes", n, max, r.remaining()))
		return 0
	}
	return n
}

func (r *reader) permissions() *Permissions {
	switch present := r.u8(); present {
	case 0:
		return nil
	case 1:
	default:
		r.fail(fmt.Errorf("permissions presence byte %d", present))
		return nil
	}
	p := &Permissions{}
	g := &p.Global
	for _, b := range []*bool{&g.ManageServers, &g.ReadServers, &g.ManageUsers, &g.ReadUsers, &g.ManageStreams,
		&g.ReadStreams, &g.ManageTopics, &g.ReadTopics, &g.PollMessages, &g.SendMessages} {
		*b = r.boolean()
	}
	n := r.count(StreamsMax, 14)
	if n > 0 {
		p.Streams = make(map[uint32]StreamPermissions, n)
	}
	prev := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		sid := r.u32()
		if int64(sid) <= prev {
			r.fail(fmt.Errorf("stream permission ids not strictly ascending at %d", sid))
		}
		prev = int64(sid)
		var sp StreamPermissions
		for _, b := range []*bool{&sp.ManageStream, &sp.ReadStream, &sp.ManageTopics, &sp.ReadTopics, &sp.PollMessages, &sp.SendMessages} {
			*b = r.boolean()
		}
		tn := r.count(TopicsPerStreamMax, 8)
		if tn > 0 {
			sp.Topics = make(map[uint32]TopicPermissions, tn)
		}
		tprev := int64(-1)
		for j := 0; j < tn && r.err == nil; j++ {
			tid := r.u32()
			if int64(tid) <= tprev {
				r.fail(fmt.Errorf("topic permission ids not strictly ascending at %d", tid))
			}
			tprev = int64(tid)
			var tp TopicPermissions
			for _, b := range []*bool{&tp.ManageTopic, &tp.ReadTopic, &tp.PollMessages, &tp.SendMessages} {
				*b = r.boolean()
			}
			sp.Topics[tid] = tp
		}
		p.Streams[sid] = sp
	}
	return p
}

func (r *reader) end() error {
	if r.err == nil && r.remaining() != 0 {
		r.fail(fmt.Errorf("%d trailing bytes", r.remaining()))
	}
	return r.err
}
