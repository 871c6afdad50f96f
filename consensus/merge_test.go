package consensus

import (
	"strings"
	"testing"
)

// chainLog builds a hash-chained log of n headers whose ops start at 1;
// variant changes the content so two logs diverge from op `from`.
func chainLog(n int, variant uint64, from uint64) []PrepareHeader {
	hs := make([]PrepareHeader, 0, n)
	parent := uint64(0)
	for op := uint64(1); op <= uint64(n); op++ {
		h := PrepareHeader{Op: op, Parent: parent, Timestamp: op}
		if op >= from {
			h.Request = variant
		}
		h.Checksum = PrepareChecksum(&h, nil)
		hs = append(hs, h)
		parent = h.Checksum
	}
	return hs
}

// dvcFrom makes a DVC whose suffix runs from log[op-1] down to max(commit,1).
func dvcFrom(replica uint8, logView uint32, log []PrepareHeader, op, commit uint64) dvcRecord {
	d := dvcRecord{replica: replica, logView: logView, op: op, commit: commit}
	for o := op; o >= max(commit, 1) && o > 0; o-- {
		d.headers = append(d.headers, log[o-1])
		setBit(&d.present, op-o)
	}
	return d
}

func TestMergeRules(t *testing.T) {
	a := chainLog(6, 0, 1)
	b := chainLog(6, 7, 4) // same as a up to op 3, diverges from op 4
	cases := []struct {
		name       string
		rule       string
		dvcs       []dvcRecord
		n, qNack   int
		outcome    mergeOutcome
		head, cmax uint64
		reasonHas  string
	}{
		{
			name: "longest canonical log wins", rule: "§3.5.4 canonical = max log_view, up to its max op",
			dvcs: []dvcRecord{dvcFrom(0, 1, a, 5, 2), dvcFrom(1, 1, a, 3, 2)},
			n:    3, qNack: 2, outcome: mergeDecided, head: 5, cmax: 2,
		},
		{
			name: "higher log_view beats a longer log", rule: "§3.5.4 log_view precedence",
			dvcs: []dvcRecord{dvcFrom(0, 1, a, 6, 3), dvcFrom(1, 2, b, 4, 3)},
			n:    3, qNack: 2, outcome: mergeDecided, head: 4, cmax: 3,
		},
		{
			name: "nack quorum cuts the head", rule: "§3.5.4 nacks >= Q_nack truncate head to op-1",
			// replica 0 holds op 5; replicas 1 and 2 stop at op 4: 2 nacks = Q_nack for n = 3
			dvcs: []dvcRecord{dvcFrom(0, 1, a, 5, 2), dvcFrom(1, 1, a, 4, 2), dvcFrom(2, 1, a, 4, 2)},
			n:    3, qNack: 2, outcome: mergeDecided, head: 4, cmax: 2,
		},
		{
			name: "explicit nack bit counts", rule: "§3.5.3 nack bit i proves op (op-i) never prepared",
			dvcs: func() []dvcRecord {
				x := dvcFrom(0, 1, a, 5, 2)
				y := dvcFrom(1, 1, a, 5, 2)
				y.headers[0] = PrepareHeader{Op: 5} // blank at op 5 ...
				y.present.Lo &^= 1
				setBit(&y.nack, 0) // ... and a proof it never prepared it
				z := dvcFrom(2, 1, a, 4, 2)
				return []dvcRecord{x, y, z}
			}(),
			n: 5, qNack: 2, outcome: mergeDecided, head: 4, cmax: 2,
		},
		{
			name: "older log_view holding another header is an implicit nack", rule: "§3.5.4 implicit nacks",
			dvcs: []dvcRecord{dvcFrom(0, 2, a, 5, 3), dvcFrom(1, 1, b, 5, 3), dvcFrom(2, 2, a, 4, 3)},
			n:    3, qNack: 2, outcome: mergeDecided, head: 4, cmax: 3,
		},
		{
			name: "blank without nack is not proof", rule: "§3.5.3 never nack an entry it cannot prove absent",
			dvcs: func() []dvcRecord {
				x := dvcFrom(0, 1, a, 5, 2)
				y := dvcFrom(1, 1, a, 5, 2)
				y.headers[0] = PrepareHeader{Op: 5}
				y.present.Lo &^= 1
				return []dvcRecord{x, y}
			}(),
			n: 3, qNack: 2, outcome: mergeDecided, head: 5, cmax: 2,
		},
		{
			name: "canonical senders disagree", rule: "§3.5.4 two canonical senders disagreeing => AwaitingRepair",
			dvcs: []dvcRecord{dvcFrom(0, 1, a, 5, 2), dvcFrom(1, 1, b, 5, 2)},
			n:    3, qNack: 2, outcome: mergeAwaiting, reasonHas: "disagree",
		},
		{
			name: "disagreement with every replica in is deadlocked", rule: "§3.5.4 ... or Deadlocked",
			dvcs: []dvcRecord{dvcFrom(0, 1, a, 5, 2), dvcFrom(1, 1, b, 5, 2)},
			n:    2, qNack: 2, outcome: mergeDeadlocked, reasonHas: "disagree",
		},
		{
			name: "no body source", rule: "§3.5.4 no sender offering the body => AwaitingRepair",
			dvcs: func() []dvcRecord {
				x := dvcFrom(0, 1, a, 5, 2)
				x.present.Lo &^= 1 // header known, body not servable
				return []dvcRecord{x, dvcFrom(1, 1, a, 5, 2)}
			}(),
			n: 3, qNack: 2, outcome: mergeDecided, head: 5, cmax: 2, // replica 1 serves it
		},
		{
			name: "no body anywhere", rule: "§3.5.4 no sender offering the body => AwaitingRepair",
			dvcs: func() []dvcRecord {
				x := dvcFrom(0, 1, a, 5, 2)
				x.present.Lo &^= 1
				return []dvcRecord{x, dvcFrom(1, 1, a, 4, 2)}
			}(),
			n: 3, qNack: 2, outcome: mergeAwaiting, reasonHas: "body",
		},
		{
			name: "commit from header stamps", rule: "§3.5.4 commit_max includes the head header's commit",
			dvcs: func() []dvcRecord {
				log := chainLog(4, 0, 1)
				log[3].Commit = 3
				log[3].Checksum = PrepareChecksum(&log[3], nil)
				return []dvcRecord{dvcFrom(0, 1, log, 4, 1), dvcFrom(1, 1, log, 2, 1)}
			}(),
			n: 3, qNack: 2, outcome: mergeDecided, head: 4, cmax: 3,
		},
		{
			name: "broken hash chain", rule: "§3.5.4 canonical headers must hash-chain",
			dvcs: func() []dvcRecord {
				log := chainLog(5, 0, 1)
				log[4].Parent = 12345
				log[4].Checksum = PrepareChecksum(&log[4], nil)
				return []dvcRecord{dvcFrom(0, 1, log, 5, 2), dvcFrom(1, 1, log, 5, 2)}
			}(),
			n: 3, qNack: 2, outcome: mergeAwaiting, reasonHas: "chain",
		},
		{
			name: "empty logs", rule: "§3.5.4 nothing to merge",
			dvcs: []dvcRecord{{replica: 0}, {replica: 1}},
			n:    3, qNack: 2, outcome: mergeDecided, head: 0, cmax: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mergeDoViewChanges(tc.dvcs, tc.n, tc.qNack)
			if p.outcome != tc.outcome {
				t.Fatalf("%s: outcome %d (%s), want %d", tc.rule, p.outcome, p.reason, tc.outcome)
			}
			if tc.outcome != mergeDecided {
				if !strings.Contains(p.reason, tc.reasonHas) {
					t.Fatalf("%s: reason %q lacks %q", tc.rule, p.reason, tc.reasonHas)
				}
				return
			}
			if p.head != tc.head || p.commitMax != tc.cmax {
				t.Fatalf("%s: head %d commit %d, want head %d commit %d", tc.rule, p.head, p.commitMax, tc.head, tc.cmax)
			}
			for op := p.commitMax + 1; op <= p.head; op++ {
				if h, ok := p.header(op); !ok || h.Op != op {
					t.Fatalf("%s: no canonical header for op %d", tc.rule, op)
				}
				if p.sources[op-p.commitMax-1] == 0 {
					t.Fatalf("%s: no body source for op %d", tc.rule, op)
				}
			}
		})
	}
}
