package consensus

import "fmt"

// dvcRecord is one DoViewChange as the primary-elect keeps it: the first
// one per sender for the view (spec §3.5 step 3).
type dvcRecord struct {
	replica uint8
	logView uint32
	op      uint64
	commit  uint64
	headers []PrepareHeader // suffix from op downwards; Checksum 0 = blank
	nack    Uint128
	present Uint128
	// amnesiac: the sender's log may lack ops it acknowledged (amnesia.go);
	// counted only beside enough other such DVCs.
	amnesiac bool
	// lost: the sender's storage was lost (Message.StorageLost).
	lost bool
	// commitMax: the sender's commit_max, not clamped to its head
	// (Message.CommitMax; 0 from a sender that does not report it).
	commitMax uint64
}

func bitAt(u Uint128, i uint64) bool {
	if i < 64 {
		return u.Lo&(1<<i) != 0
	}
	if i < 128 {
		return u.Hi&(1<<(i-64)) != 0
	}
	return false
}

func setBit(u *Uint128, i uint64) {
	if i < 64 {
		u.Lo |= 1 << i
	} else if i < 128 {
		u.Hi |= 1 << (i - 64)
	}
}

// headerAt returns the suffix slot for op: inSuffix false when op is not
// covered; blank when the sender has no header there.
func (d *dvcRecord) headerAt(op uint64) (h PrepareHeader, inSuffix bool, blank bool) {
	if op > d.op || d.op-op >= uint64(len(d.headers)) {
		return PrepareHeader{}, false, true
	}
	h = d.headers[d.op-op]
	return h, true, h.Checksum == 0
}

// mergeOutcome is the verdict of a merge attempt.
type mergeOutcome uint8

const (
	mergeDecided    mergeOutcome = iota
	mergeAwaiting                // more DVCs could decide it
	mergeDeadlocked              // all replicas answered and it still cannot be decided
)

// mergePlan is the log the new view starts from.
type mergePlan struct {
	outcome   mergeOutcome
	reason    string
	logView   uint32 // canonical (max) log_view
	commitMax uint64
	head      uint64
	// headers[i] is the canonical header of op base+i for base..head, with
	// base = commitMax; a zero Checksum means unknown (only at base).
	base    uint64
	headers []PrepareHeader
	// canonical: bit per replica whose log_view is the max.
	canonical uint32
	// sources[op-commitMax-1]: replicas that can serve op's body.
	sources []uint32
}

func (p *mergePlan) header(op uint64) (PrepareHeader, bool) {
	if op < p.base || op > p.head {
		return PrepareHeader{}, false
	}
	h := p.headers[op-p.base]
	return h, h.Checksum != 0
}

// mergeDoViewChanges decides the new view's log from a quorum of DVCs
// (spec §3.5 step 4):
//   - canonical senders are those with the maximum log_view; their log is
//     the candidate, up to their highest op;
//   - commit_max is the max over senders of their commit, op-127 (nothing
//     more than the pipeline bound above a held op can be uncommitted) and
//     the commit stamp of every header they report;
//   - scanning upwards from commit_max+1, the first op that Q_nack senders
//     prove they never prepared (op above their head, an explicit nack bit,
//     or an older log_view holding a different header) cannot have
//     committed, so the head is cut just below it;
//   - every kept op needs one canonical header (canonical senders must
//     agree), a sender able to serve its body, and an unbroken hash chain.
//
// replicaCount tells "wait for more DVCs" from "deadlocked".
func mergeDoViewChanges(dvcs []dvcRecord, replicaCount, quorumNack int) mergePlan {
	if len(dvcs) == 0 {
		return mergePlan{outcome: mergeAwaiting, reason: "no DVCs"}
	}
	stuck := func(reason string) mergePlan {
		if len(dvcs) < replicaCount {
			return mergePlan{outcome: mergeAwaiting, reason: reason}
		}
		return mergePlan{outcome: mergeDeadlocked, reason: reason}
	}
	var p mergePlan
	for i := range dvcs {
		p.logView = max(p.logView, dvcs[i].logView)
	}
	var maxOp uint64
	for i := range dvcs {
		d := &dvcs[i]
		p.commitMax = max(p.commitMax, d.commit)
		if d.op >= dvcSuffixHeadersMax {
			p.commitMax = max(p.commitMax, d.op-(dvcSuffixHeadersMax-1))
		}
		for _, h := range d.headers {
			if h.Checksum != 0 {
				p.commitMax = max(p.commitMax, h.Commit)
			}
		}
		if d.logView == p.logView {
			p.canonical |= 1 << d.replica
			maxOp = max(maxOp, d.op)
		}
	}
	if maxOp < p.commitMax {
		return stuck(fmt.Sprintf("canonical head %d below commit %d", maxOp, p.commitMax))
	}
	p.head = maxOp
	p.base = p.commitMax
	headers := make([]PrepareHeader, 0, maxOp-p.base+1)
	sources := make([]uint32, 0, maxOp-p.commitMax)
	// The header at commit_max (if any canonical sender reports it) anchors
	// the chain; op 0 is a blank anchor.
	anchor := PrepareHeader{}
	if p.commitMax > 0 {
		anchor = canonicalHeader(dvcs, p.logView, p.commitMax)
	}
	headers = append(headers, anchor)
	for op := p.commitMax + 1; op <= maxOp; op++ {
		canon, conflict := canonicalHeaderChecked(dvcs, p.logView, op)
		held := canon.Checksum != 0 && bodyPresent(dvcs, op, canon.Checksum)
		nacks := 0
		for i := range dvcs {
			d := &dvcs[i]
			if d.amnesiac && held {
				// A rack voter's short head or nack proves nothing about an
				// op whose body a survivor still holds: it may have acked
				// the op and lost it to its own power loss (simulator seed
				// 60850574: a committed op, held by two replicas, cut by
				// the nack of its primary after that primary's power loss).
				// Keeping a held op is always safe; cutting one is only
				// needed when no body survives.
				continue
			}
			if d.op < op {
				nacks++
				continue
			}
			h, inSuffix, blank := d.headerAt(op)
			if !inSuffix {
				continue
			}
			if bitAt(d.nack, d.op-op) {
				nacks++
				continue
			}
			if canon.Checksum != 0 && d.logView < p.logView && !blank && h.Checksum != canon.Checksum {
				nacks++
			}
		}
		if nacks >= quorumNack {
			p.head = op - 1
			break
		}
		if conflict {
			return stuck(fmt.Sprintf("canonical senders disagree at op %d", op))
		}
		if canon.Checksum == 0 {
			return stuck(fmt.Sprintf("no canonical header for op %d", op))
		}
		var src uint32
		for i := range dvcs {
			d := &dvcs[i]
			h, inSuffix, blank := d.headerAt(op)
			if inSuffix && !blank && h.Checksum == canon.Checksum && bitAt(d.present, d.op-op) {
				src |= 1 << d.replica
			}
		}
		if src == 0 {
			return stuck(fmt.Sprintf("no replica can serve the body of op %d", op))
		}
		prev := headers[len(headers)-1]
		if prev.Checksum != 0 && canon.Parent != prev.Checksum {
			return stuck(fmt.Sprintf("hash chain broken at op %d", op))
		}
		headers = append(headers, canon)
		sources = append(sources, src)
	}
	p.headers = headers[:p.head-p.base+1]
	p.sources = sources[:p.head-p.commitMax]
	p.outcome = mergeDecided
	return p
}

// bodyPresent reports whether some sender reported op with that checksum
// and its body.
func bodyPresent(dvcs []dvcRecord, op, checksum uint64) bool {
	for i := range dvcs {
		d := &dvcs[i]
		if h, inSuffix, blank := d.headerAt(op); inSuffix && !blank && h.Checksum == checksum && bitAt(d.present, d.op-op) {
			return true
		}
	}
	return false
}

func canonicalHeader(dvcs []dvcRecord, logView uint32, op uint64) PrepareHeader {
	h, _ := canonicalHeaderChecked(dvcs, logView, op)
	return h
}

// canonicalHeaderChecked returns the header canonical senders hold at op and
// whether two of them disagree.
func canonicalHeaderChecked(dvcs []dvcRecord, logView uint32, op uint64) (PrepareHeader, bool) {
	var found PrepareHeader
	for i := range dvcs {
		d := &dvcs[i]
		if d.logView != logView {
			continue
		}
		h, inSuffix, blank := d.headerAt(op)
		if !inSuffix || blank {
			continue
		}
		if found.Checksum == 0 {
			found = h
		} else if found.Checksum != h.Checksum {
			return found, true
		}
	}
	return found, false
}
