package consensus

import "fmt"

// journal is consensus's in-memory view of the prepares it holds: a ring
// of JournalSlots slots, slot = op mod slots. A slot may be reused only when
// its op is below the latest checkpoint, so un-checkpointed history is
// never overwritten and the checkpoint op itself stays as the hash-chain
// anchor (the driver's durable journal mirrors this ring through
// Ready.Truncate / Ready.Entries).
type journal struct {
	slots []journalSlot
	// floor is the lowest op that may still be held: every op below it was
	// released (checkpoint reuse or state transfer).
	floor uint64
	// headOp is the highest op present (0 when empty).
	headOp uint64
}

type journalSlot struct {
	present bool
	durable bool // persisted: the driver advanced the Ready carrying it
	prepare Prepare
}

func newJournal(slots uint32) journal {
	return journal{slots: make([]journalSlot, slots), floor: 1}
}

func (j *journal) slotOf(op uint64) *journalSlot { return &j.slots[op%uint64(len(j.slots))] }

// get returns the slot holding op, or nil.
func (j *journal) get(op uint64) *journalSlot {
	if op == 0 || op < j.floor {
		return nil
	}
	s := j.slotOf(op)
	if !s.present || s.prepare.Header.Op != op {
		return nil
	}
	return s
}

func (j *journal) has(op uint64) bool { return j.get(op) != nil }

// header returns the header at op and whether it is held.
func (j *journal) header(op uint64) (PrepareHeader, bool) {
	s := j.get(op)
	if s == nil {
		return PrepareHeader{}, false
	}
	return s.prepare.Header, true
}

// canAppend reports whether op's slot is free or holds checkpointed history.
func (j *journal) canAppend(op, checkpointOp uint64) bool {
	if op < j.floor {
		return false
	}
	s := j.slotOf(op)
	return !s.present || s.prepare.Header.Op == op || s.prepare.Header.Op < checkpointOp
}

// put stores p (the caller copied its body). It panics if that would
// overwrite un-checkpointed history: callers check canAppend first.
func (j *journal) put(p Prepare, checkpointOp uint64) {
	op := p.Header.Op
	s := j.slotOf(op)
	if s.present && s.prepare.Header.Op != op {
		if s.prepare.Header.Op >= checkpointOp {
			panic(fmt.Sprintf("consensus: journal slot for op %d holds un-checkpointed op %d", op, s.prepare.Header.Op))
		}
		if s.prepare.Header.Op >= j.floor {
			j.floor = s.prepare.Header.Op + 1
		}
	}
	*s = journalSlot{present: true, prepare: p}
	if op > j.headOp {
		j.headOp = op
	}
}

// truncateFrom removes every op >= from.
func (j *journal) truncateFrom(from uint64) {
	if from == 0 {
		from = 1
	}
	for op := from; op <= j.headOp; op++ {
		if s := j.get(op); s != nil {
			*s = journalSlot{}
		}
	}
	if from <= j.headOp {
		j.headOp = from - 1
		for j.headOp >= j.floor && !j.has(j.headOp) && j.headOp > 0 {
			j.headOp--
		}
	}
}

// remove drops the entry at op alone (an unverifiable entry).
func (j *journal) remove(op uint64) {
	if s := j.get(op); s != nil {
		*s = journalSlot{}
	}
	for j.headOp > 0 && j.headOp >= j.floor && !j.has(j.headOp) {
		j.headOp--
	}
}

// releaseBelow drops every op < op (installed state transfer snapshot);
// the entry at op, if held, stays as the hash-chain anchor.
func (j *journal) releaseBelow(op uint64) {
	for o := j.floor; o < op && o <= j.headOp; o++ {
		if s := j.get(o); s != nil {
			*s = journalSlot{}
		}
	}
	if op > j.floor {
		j.floor = op
	}
	if j.headOp < op {
		j.headOp = 0
	}
}

// lowestHeld returns the lowest op held at or above from, or 0.
func (j *journal) lowestHeld(from uint64) uint64 {
	from = max(from, j.floor)
	for op := from; op <= j.headOp; op++ {
		if j.has(op) {
			return op
		}
	}
	return 0
}
