package consensus

import (
	"fmt"
	"strings"
)

// The transcript interpreter's assertions ("expect ...").

var kindNames = map[string]MessageKind{
	"Prepare": MsgPrepare, "PrepareOk": MsgPrepareOk, "Commit": MsgCommit, "SVC": MsgStartViewChange,
	"DVC": MsgDoViewChange, "StartView": MsgStartView, "RSV": MsgRequestStartView,
	"RequestPrepares": MsgRequestPrepares, "RepairPrepare": MsgRepairPrepare, "RepairDone": MsgRepairDone,
	"RangeEvicted": MsgRangeEvicted, "RequestStateTransfer": MsgRequestStateTransfer,
	"StateTransferTarget": MsgStateTransferTarget, "RequestStateChunk": MsgRequestStateChunk, "StateChunk": MsgStateChunk,
}

var replyKindNames = map[string]ReplyKind{
	"committed": ReplyCommitted, "notaccepted": ReplyNotAccepted, "notcommitted": ReplyNotCommitted,
	"alreadyapplied": ReplyAlreadyApplied, "nosession": ReplyEvictNoSession,
	"sessiontoolow": ReplyEvictSessionTooLow, "dropped": ReplyDropped,
}

var statusNames = map[string]Status{"normal": StatusNormal, "viewchange": StatusViewChange, "recovering": StatusRecovering}

func (ts *transcript) cmdExpect(args []string) {
	switch args[0] {
	case "reply":
		ts.expectReply(args[1], ts.kv(args[2:]))
	case "noreply":
		if rep, ok := ts.h.replies[ts.tags[args[1]]]; ok {
			ts.failf("expected no reply for %s yet, got %+v", args[1], rep)
		}
	case "sent": // expect sent KIND=N | KIND>=N | KIND<=N (since reset-sent)
		for _, a := range args[1:] {
			ts.expectCount(a, func(k MessageKind) int { return ts.h.sent[k] })
		}
	case "queued":
		for _, a := range args[1:] {
			ts.expectCount(a, func(k MessageKind) int {
				c := 0
				for _, m := range ts.h.queue {
					if m.Kind == k {
						c++
					}
				}
				return c
			})
		}
	case "quorums":
		o := ts.kv(args[1:])
		n := int(ts.num(o["n"]))
		if got := ReplicationQuorum(n); got != int(ts.num(o["repl"])) {
			ts.failf("n=%d replication quorum %d, want %s", n, got, o["repl"])
		}
		if got := ViewChangeQuorum(n); got != int(ts.num(o["vc"])) {
			ts.failf("n=%d view-change quorum %d, want %s", n, got, o["vc"])
		}
		if got := (n - 1) / 2; got != int(ts.num(o["f"])) {
			ts.failf("n=%d svc threshold %d, want %s", n, got, o["f"])
		}
	case "ready":
		ts.expectReady(ts.replica(args[1]), args[2:])
	default:
		ts.expectReplica(ts.replica(args[0]), ts.kv(args[1:]))
	}
}

func (ts *transcript) expectCount(a string, count func(MessageKind) int) {
	for _, op := range []string{">=", "<=", "="} {
		name, v, ok := strings.Cut(a, op)
		if !ok {
			continue
		}
		k, known := kindNames[name]
		if !known {
			ts.failf("unknown message kind %q", name)
		}
		got, want := count(k), int(ts.num(v))
		if (op == "=" && got != want) || (op == ">=" && got < want) || (op == "<=" && got > want) {
			ts.failf("%s count %d, want %s%d", name, got, op, want)
		}
		return
	}
	ts.failf("bad count %q", a)
}

func (ts *transcript) expectReply(name string, o map[string]string) {
	rep, ok := ts.h.replies[ts.tags[name]]
	if !ok {
		ts.failf("no reply for %s", name)
	}
	for k, v := range o {
		switch k {
		case "kind":
			want, known := replyKindNames[v]
			if !known {
				ts.failf("unknown reply kind %q", v)
			}
			if rep.Kind != want {
				ts.failf("reply %s kind %d, want %s (%+v)", name, rep.Kind, v, rep)
			}
		case "op":
			if rep.Op != ts.num(v) {
				ts.failf("reply %s op %d, want %s", name, rep.Op, v)
			}
		case "cached":
			if string(rep.Cached) != v {
				ts.failf("reply %s cached %q, want %q", name, rep.Cached, v)
			}
		default:
			ts.failf("unknown reply field %q", k)
		}
	}
}

func (ts *transcript) expectReplica(i int, o map[string]string) {
	r := ts.h.replicas[i]
	for k, v := range o {
		var got, want string
		switch k {
		case "status":
			if _, ok := statusNames[v]; !ok {
				ts.failf("unknown status %q", v)
			}
			for name, s := range statusNames {
				if s == r.Status() {
					got = name
				}
			}
			want = v
		case "view":
			got, want = fmt.Sprint(r.View()), v
		case "logview":
			got, want = fmt.Sprint(r.LogView()), v
		case "op":
			got, want = fmt.Sprint(r.Op()), v
		case "commit":
			got, want = fmt.Sprint(r.CommitMin()), v
		case "commitmax":
			got, want = fmt.Sprint(r.CommitMax()), v
		case "primary":
			got, want = fmt.Sprint(r.IsPrimary()), v
		case "transferring":
			got, want = fmt.Sprint(r.Transferring()), v
		case "applied":
			got, want = fmt.Sprint(len(ts.h.stores[i].applied)), v
		case "journal": // ops held, as lo..hi or "empty"
			got, want = journalSpan(r), v
		case "durableview":
			sb := ts.h.stores[i].superblock
			got = "none"
			if sb != nil {
				got = fmt.Sprint(sb.View)
			}
			want = v
		default:
			ts.failf("unknown replica field %q", k)
		}
		if got != want {
			ts.failf("replica %d %s = %s, want %s", i, k, got, want)
		}
	}
}

func journalSpan(r *Replica) string {
	lo := r.journal.lowestHeld(1)
	if lo == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d..%d", lo, r.journal.headOp)
}

// expectReady inspects a paused replica's pending Ready without carrying it out.
func (ts *transcript) expectReady(i int, args []string) {
	if !ts.h.paused[i] {
		ts.failf("expect ready needs replica %d paused", i)
	}
	rd := ts.h.replicas[i].Ready()
	for k, v := range ts.kv(args) {
		switch k {
		case "superblock.view":
			if rd.Superblock == nil || fmt.Sprint(rd.Superblock.View) != v {
				ts.failf("ready superblock %+v, want view %s", rd.Superblock, v)
			}
		case "superblock":
			if v == "none" && rd.Superblock != nil {
				ts.failf("ready carries superblock %+v, want none", rd.Superblock)
			}
		case "entries":
			if fmt.Sprint(len(rd.Entries)) != v {
				ts.failf("ready has %d entries, want %s", len(rd.Entries), v)
			}
		case "has":
			for _, name := range strings.Split(v, ",") {
				found := false
				for _, m := range rd.Messages {
					if m.Kind == kindNames[name] {
						found = true
					}
				}
				if !found {
					ts.failf("ready lacks a %s message", name)
				}
			}
		case "messages":
			if fmt.Sprint(len(rd.Messages)) != v {
				ts.failf("ready has %d messages, want %s", len(rd.Messages), v)
			}
		default:
			ts.failf("unknown ready field %q", k)
		}
	}
}
