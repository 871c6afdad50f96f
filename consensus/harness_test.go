package consensus

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// harness wires n replicas in-process with a lossless FIFO network (plus
// drop rules), per-replica durable storage and an applied-op log. It drives
// every Ready the way the contract says (persist, then send, apply, reply,
// Advance) and checks, on every Ready, that nothing sent reveals state the
// same or an earlier Ready did not persist, and that applied logs never
// diverge.
type harness struct {
	cfgs     []Config
	replicas []*Replica
	stores   []*store
	up       []bool
	paused   []bool
	dropped  map[[2]uint8]bool
	// droppedKinds drops only one message kind on a link.
	droppedKinds map[dropKey]bool
	// held replicas get their messages diverted into stash (see "hold").
	held    map[int]bool
	stash   map[int][]Message
	queue   []Message
	replies map[uint64]Reply
	nextTag uint64
	failf   func(format string, args ...any)
	sent    map[MessageKind]int
	boots   []uint64
	// amnesia[i]: the next restart of replica i passes Restored.Amnesia.
	amnesia map[int]bool
}

type store struct {
	superblock *VsrState
	entries    map[uint64]Prepare
	snapshot   *Snapshot
	applied    []uint64 // checksums of applied ops, in op order, from op appliedBase+1
	appliedOps []uint64
}

func newHarness(n int, tweak func(*Config), failf func(string, ...any)) *harness {
	h := &harness{dropped: map[[2]uint8]bool{}, droppedKinds: map[dropKey]bool{}, held: map[int]bool{}, stash: map[int][]Message{}, replies: map[uint64]Reply{}, failf: failf, sent: map[MessageKind]int{}}
	for i := 0; i < n; i++ {
		cfg := DefaultConfig(uint8(i), uint8(n))
		cfg.Seed = 42
		cfg.Incarnation = Uint128{Lo: uint64(i) + 1, Hi: 1}
		if tweak != nil {
			tweak(&cfg)
		}
		r, err := New(cfg)
		if err != nil {
			failf("new replica %d: %v", i, err)
			return h
		}
		h.cfgs = append(h.cfgs, cfg)
		h.replicas = append(h.replicas, r)
		h.stores = append(h.stores, &store{entries: map[uint64]Prepare{}})
		h.up = append(h.up, true)
		h.paused = append(h.paused, false)
		h.boots = append(h.boots, 1)
	}
	return h
}

// drain carries out replica i's Ready batches until it has none.
func (h *harness) drain(i int) {
	r := h.replicas[i]
	for guard := 0; h.up[i] && !h.paused[i] && r.HasReady() && guard < 64; guard++ {
		rd := r.Ready()
		st := h.stores[i]
		// Persist.
		if rd.Truncate != 0 {
			for op := range st.entries {
				if op >= rd.Truncate {
					delete(st.entries, op)
				}
			}
		}
		for _, e := range rd.Entries {
			st.entries[e.Header.Op] = e
		}
		if rd.Snapshot != nil {
			// Durable before the superblock that names it (the driver
			// contract's persist step: entries, snapshot, superblock).
			snap := *rd.Snapshot
			st.snapshot = &snap
		}
		if rd.Superblock != nil {
			sb := *rd.Superblock
			st.superblock = &sb
			h.checkViewLogDurable(i)
		}
		// Check persist-before-send, then send.
		for _, m := range rd.Messages {
			h.checkRevealsOnlyDurable(i, m)
			h.sent[m.Kind]++
			if !h.isDropped(m) {
				h.queue = append(h.queue, cloneMessage(m))
			}
		}
		if rd.Snapshot != nil {
			snap := *rd.Snapshot
			st.snapshot = &snap // installed durably, like the superblock naming it
			st.applied = decodeApplied(rd.Snapshot.Data)
			st.appliedOps = make([]uint64, len(st.applied))
			for k := range st.appliedOps {
				st.appliedOps[k] = uint64(k + 1)
			}
		}
		for _, c := range rd.Committed {
			want := uint64(len(st.applied)) + 1
			if c.Header.Op != want {
				h.failf("replica %d applied op %d, expected op %d", i, c.Header.Op, want)
				return
			}
			st.applied = append(st.applied, c.Header.Checksum)
			st.appliedOps = append(st.appliedOps, c.Header.Op)
			if c.Header.Client.Lo != 0 {
				r.RecordReply(c.Header.Client, c.Header.Request, []byte(fmt.Sprintf("reply-%d", c.Header.Op)))
			}
		}
		for _, rep := range rd.Replies {
			if _, dup := h.replies[rep.Tag]; dup {
				h.failf("replica %d answered tag %d twice", i, rep.Tag)
			}
			h.replies[rep.Tag] = rep
		}
		r.Advance(rd)
	}
	h.checkAppliedAgree()
}

// checkRevealsOnlyDurable: a message may only reveal a view, log_view or
// entry that the sender's storage already holds.
func (h *harness) checkRevealsOnlyDurable(i int, m Message) {
	st := h.stores[i]
	switch m.Kind {
	case MsgStartViewChange, MsgDoViewChange, MsgStartView, MsgPrepareOk, MsgCommit, MsgPrepare:
		if st.superblock == nil && m.View > 0 {
			h.failf("replica %d sent %v for view %d before any superblock was persisted", i, m.Kind, m.View)
			return
		}
		if st.superblock != nil && st.superblock.View < m.View {
			h.failf("replica %d sent %v for view %d, durable view %d", i, m.Kind, m.View, st.superblock.View)
		}
	}
	if m.Kind == MsgDoViewChange && st.superblock != nil && st.superblock.LogView < m.LogView {
		h.failf("replica %d sent DVC with log_view %d, durable log_view %d", i, m.LogView, st.superblock.LogView)
	}
	if m.Kind == MsgDoViewChange && st.superblock != nil && st.superblock.LogView == m.LogView &&
		m.HeadOp < viewHeadersHead(st.superblock.ViewHeaders) {
		h.failf("replica %d sent DVC with log_view %d and head %d below that view's durable head %d",
			i, m.LogView, m.HeadOp, viewHeadersHead(st.superblock.ViewHeaders))
	}
	if (m.Kind == MsgPrepareOk || m.Kind == MsgPrepare) && m.Prepare != nil {
		e, ok := st.entries[m.Prepare.Header.Op]
		if !ok || e.Header.Checksum != m.Prepare.Header.Checksum {
			h.failf("replica %d sent %v for op %d not in its durable journal", i, m.Kind, m.Prepare.Header.Op)
		}
	}
}

// checkViewLogDurable: the primary of log_view persists it only once its
// journal durably holds that view's head (every non-blank view header
// above its snapshot), so its DVCs can always serve the log they claim.
func (h *harness) checkViewLogDurable(i int) {
	st := h.stores[i]
	sb := st.superblock
	if primaryIndex(sb.LogView, uint8(len(h.replicas))) != uint8(i) {
		return
	}
	floor := uint64(0)
	if st.snapshot != nil {
		floor = st.snapshot.Op
	}
	for _, vh := range sb.ViewHeaders {
		if vh.Checksum == 0 || vh.Op <= floor {
			continue
		}
		if e, ok := st.entries[vh.Op]; !ok || e.Header.Checksum != vh.Checksum {
			h.failf("replica %d, primary of log_view %d, persisted it before op %d of its head was durable", i, sb.LogView, vh.Op)
		}
	}
}

// checkAppliedAgree: applied logs are prefixes of one another.
func (h *harness) checkAppliedAgree() {
	var longest []uint64
	for _, st := range h.stores {
		if len(st.applied) > len(longest) {
			longest = st.applied
		}
	}
	for i, st := range h.stores {
		if !slices.Equal(st.applied, longest[:len(st.applied)]) {
			h.failf("replica %d applied log diverges from the longest applied log", i)
		}
	}
}

func cloneMessage(m Message) Message {
	if m.Prepare != nil {
		p := Prepare{Header: m.Prepare.Header, Body: append([]byte(nil), m.Prepare.Body...)}
		m.Prepare = &p
	}
	m.Suffix = append([]PrepareHeader(nil), m.Suffix...)
	m.ChunkData = append([]byte(nil), m.ChunkData...)
	return m
}

func (h *harness) drainAll() {
	for i := range h.replicas {
		h.drain(i)
	}
}

// deliverAll delivers queued messages (and the ones they cause) until the
// network is quiet; bounded.
func (h *harness) deliverAll() int {
	delivered := 0
	for guard := 0; len(h.queue) > 0 && guard < 100000; guard++ {
		m := h.queue[0]
		h.queue = h.queue[1:]
		if !h.up[m.To] || h.isDropped(m) {
			continue
		}
		if h.held[int(m.To)] {
			h.stash[int(m.To)] = append(h.stash[int(m.To)], m)
			continue
		}
		h.replicas[m.To].Step(m)
		h.drain(int(m.To))
		delivered++
	}
	return delivered
}

func (h *harness) tick(i int) {
	if !h.up[i] {
		return
	}
	h.replicas[i].Tick()
	h.drain(i)
}

func (h *harness) propose(i int, req Request) uint64 {
	h.nextTag++
	req.Tag = h.nextTag
	h.replicas[i].Propose(req)
	h.drain(i)
	return req.Tag
}

// crash loses everything not persisted; queued messages to it are lost.
func (h *harness) crash(i int) {
	h.up[i] = false
	kept := h.queue[:0]
	for _, m := range h.queue {
		if int(m.To) != i {
			kept = append(kept, m)
		}
	}
	h.queue = kept
}

func (h *harness) restart(i int) error {
	st := h.stores[i]
	h.boots[i]++
	cfg := h.cfgs[i]
	cfg.Incarnation = Uint128{Lo: uint64(i) + 1, Hi: h.boots[i]}
	restored := Restored{Amnesia: h.amnesia[i]}
	if st.superblock != nil {
		sb := *st.superblock
		restored.Superblock = &sb
	}
	base := uint64(0)
	if st.snapshot != nil {
		s := *st.snapshot
		restored.Snapshot = &s
		base = s.Op
		st.applied = decodeApplied(s.Data)
	} else {
		st.applied = nil
	}
	st.appliedOps = nil
	ops := make([]uint64, 0, len(st.entries))
	for op := range st.entries {
		if op >= base {
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a] < ops[b] })
	for _, op := range ops {
		restored.Entries = append(restored.Entries, st.entries[op])
	}
	r, err := Restart(cfg, restored)
	if err != nil {
		return err
	}
	h.replicas[i] = r
	h.up[i] = true
	h.drain(i)
	return nil
}

// checkpoint snapshots replica i's applied state at its commit_min.
func (h *harness) checkpoint(i int, padBytes int) error {
	st := h.stores[i]
	r := h.replicas[i]
	data := append(encodeApplied(st.applied), make([]byte, padBytes)...)
	s := Snapshot{Op: uint64(len(st.applied)), Checksum: SnapshotChecksum(data), Data: data}
	r.Checkpoint(s)
	if err := r.CheckpointError(); err != nil {
		return err
	}
	st.snapshot = &s
	h.drain(i)
	return nil
}

// encodeApplied is the test state machine's snapshot: a count, the applied
// checksums, then any padding (to exercise chunked transfer).
func encodeApplied(applied []uint64) []byte {
	b := make([]byte, 0, 8+8*len(applied))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(applied)))
	for _, c := range applied {
		b = binary.LittleEndian.AppendUint64(b, c)
	}
	return b
}

func decodeApplied(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	out := make([]uint64, 0, n)
	for k := uint64(0); k < n && len(b) >= 8; k++ {
		out = append(out, binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	return out
}

type dropKey struct {
	from, to uint8
	kind     MessageKind
}

func (h *harness) isDropped(m Message) bool {
	return h.dropped[[2]uint8{m.From, m.To}] || h.droppedKinds[dropKey{m.From, m.To, m.Kind}]
}

// crashMidReady crashes replica i while it persists its next Ready: the
// truncate and only the first keepEntries entries reach storage, no
// superblock, nothing is sent or applied.
func (h *harness) crashMidReady(i int, keepEntries int) {
	r := h.replicas[i]
	if h.up[i] && r.HasReady() {
		rd := r.Ready()
		st := h.stores[i]
		if rd.Truncate != 0 {
			for op := range st.entries {
				if op >= rd.Truncate {
					delete(st.entries, op)
				}
			}
		}
		for k, e := range rd.Entries {
			if k >= keepEntries {
				break
			}
			st.entries[e.Header.Op] = e
		}
	}
	h.crash(i)
}
