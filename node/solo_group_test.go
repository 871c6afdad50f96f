package node

import (
	"bytes"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

func testSolo() *soloGroup {
	clock := uint64(1000)
	return newSoloGroup(consensus.Config{ReplicaCount: 1, ClientTableMax: 4, PrepareQueueDepth: 4},
		func() uint64 { clock++; return clock })
}

// drive proposes req, carries out the Ready the way the driver does
// (recording reply bodies for committed client requests) and returns the reply.
func drive(t *testing.T, g *soloGroup, req consensus.Request, replyBody []byte) consensus.Reply {
	t.Helper()
	g.Propose(req)
	rd := g.Ready()
	for _, p := range rd.Committed {
		g.RecordReply(p.Header.Client, p.Header.Request, replyBody)
	}
	g.Advance(rd)
	if len(rd.Replies) != 1 {
		t.Fatalf("want 1 reply, got %d", len(rd.Replies))
	}
	return rd.Replies[0]
}

func TestSoloClientTablePreflightRows(t *testing.T) {
	g := testSolo()
	alice := consensus.Uint128{Lo: 7}
	reg := drive(t, g, consensus.Request{Client: alice, Operation: consensus.OperationRegister}, nil)
	if reg.Kind != consensus.ReplyCommitted || reg.Op != 1 {
		t.Fatalf("register: %+v", reg)
	}
	session := reg.Op
	op := consensus.Operation(128)
	first := drive(t, g, consensus.Request{Client: alice, Session: session, Request: 1, Checksum: 11, Operation: op}, []byte("r1"))
	if first.Kind != consensus.ReplyCommitted || first.Cached != nil {
		t.Fatalf("new request: %+v", first)
	}
	cases := []struct {
		name string
		req  consensus.Request
		want consensus.ReplyKind
		body []byte
	}{
		{"replay same id same checksum", consensus.Request{Client: alice, Session: session, Request: 1, Checksum: 11, Operation: op}, consensus.ReplyCommitted, []byte("r1")},
		{"replay with zero checksum", consensus.Request{Client: alice, Session: session, Request: 1, Operation: op}, consensus.ReplyCommitted, []byte("r1")},
		{"same id different checksum", consensus.Request{Client: alice, Session: session, Request: 1, Checksum: 12, Operation: op}, consensus.ReplyDropped, nil},
		{"unknown client", consensus.Request{Client: consensus.Uint128{Lo: 99}, Session: 1, Request: 5, Operation: op}, consensus.ReplyEvictNoSession, nil},
		{"session from the future", consensus.Request{Client: alice, Session: session + 5, Request: 9, Operation: op}, consensus.ReplyDropped, nil},
	}
	for _, c := range cases {
		got := drive(t, g, c.req, nil)
		if got.Kind != c.want || !bytes.Equal(got.Cached, c.body) {
			t.Errorf("%s: got kind %d cached %q, want %d %q", c.name, got.Kind, got.Cached, c.want, c.body)
		}
	}
	// Re-register raises the fence; the old session is too low.
	rereg := drive(t, g, consensus.Request{Client: alice, Operation: consensus.OperationRegister}, nil)
	if got := drive(t, g, consensus.Request{Client: alice, Session: session, Request: 2, Operation: op}, nil); got.Kind != consensus.ReplyEvictSessionTooLow {
		t.Fatalf("old session: %+v", got)
	}
	// Age request 1 out of the 5-reply ring.
	for id := uint64(2); id <= 6; id++ {
		drive(t, g, consensus.Request{Client: alice, Session: rereg.Op, Request: id, Operation: op}, []byte{byte(id)})
	}
	if got := drive(t, g, consensus.Request{Client: alice, Session: rereg.Op, Request: 1, Operation: op}, nil); got.Kind != consensus.ReplyAlreadyApplied {
		t.Fatalf("aged out: %+v", got)
	}
	// Logout removes the entry.
	drive(t, g, consensus.Request{Client: alice, Session: rereg.Op, Request: 7, Operation: consensus.OperationLogout}, nil)
	if got := drive(t, g, consensus.Request{Client: alice, Session: rereg.Op, Request: 8, Operation: op}, nil); got.Kind != consensus.ReplyEvictNoSession {
		t.Fatalf("after logout: %+v", got)
	}
}

func TestSoloInFlightAndQueueBound(t *testing.T) {
	g := testSolo()
	a := consensus.Uint128{Lo: 1}
	g.Propose(consensus.Request{Client: a, Operation: consensus.OperationRegister, Tag: 1})
	g.Propose(consensus.Request{Client: a, Operation: consensus.OperationRegister, Tag: 2})
	rd := g.Ready()
	if len(rd.Replies) != 2 || rd.Replies[1].Kind != consensus.ReplyNotCommitted {
		t.Fatalf("second proposal while in flight: %+v", rd.Replies)
	}
	for i := uint64(10); i < 20; i++ {
		g.Propose(consensus.Request{Client: consensus.Uint128{Lo: i}, Operation: consensus.OperationRegister, Tag: i})
	}
	rd = g.Ready()
	if len(rd.Entries) != 8 {
		t.Fatalf("pending entries %d, want the bound 8", len(rd.Entries))
	}
	if last := rd.Replies[len(rd.Replies)-1]; last.Kind != consensus.ReplyNotAccepted {
		t.Fatalf("over the bound: %+v", last)
	}
	g.Advance(rd)
	if g.HasReady() {
		t.Fatal("ready after advance")
	}
}

func TestSoloRestartRebuildsTableAndChain(t *testing.T) {
	g := testSolo()
	a := consensus.Uint128{Lo: 3}
	var journal []consensus.Prepare
	record := func(req consensus.Request, body []byte) consensus.Reply {
		g.Propose(req)
		rd := g.Ready()
		journal = append(journal, rd.Entries...)
		for _, p := range rd.Committed {
			g.RecordReply(p.Header.Client, p.Header.Request, body)
		}
		g.Advance(rd)
		return rd.Replies[0]
	}
	reg := record(consensus.Request{Client: a, Operation: consensus.OperationRegister}, nil)
	record(consensus.Request{Client: a, Session: reg.Op, Request: 1, Checksum: 5, Operation: 128}, []byte("x"))
	tableAtSnapshot := g.ClientTableSnapshot()
	snap := &consensus.Snapshot{Op: g.Op()}
	record(consensus.Request{Client: a, Session: reg.Op, Request: 2, Checksum: 6, Operation: 128}, []byte("y"))

	r, err := restartSoloGroup(g.cfg, g.now, consensus.Restored{Snapshot: snap, Entries: journal}, tableAtSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if r.Op() != 3 || r.lastChecksum != g.lastChecksum {
		t.Fatalf("restart op %d checksum %x, want 3 %x", r.Op(), r.lastChecksum, g.lastChecksum)
	}
	r.RecordReply(a, 2, []byte("y")) // the driver re-records while replaying
	got := drive(t, r, consensus.Request{Client: a, Session: reg.Op, Request: 1, Checksum: 5, Operation: 128}, nil)
	if got.Kind != consensus.ReplyCommitted || string(got.Cached) != "x" {
		t.Fatalf("replay of pre-snapshot request: %+v", got)
	}
	got = drive(t, r, consensus.Request{Client: a, Session: reg.Op, Request: 2, Checksum: 6, Operation: 128}, nil)
	if string(got.Cached) != "y" {
		t.Fatalf("replay of post-snapshot request: %+v", got)
	}
	if _, err := restartSoloGroup(g.cfg, g.now, consensus.Restored{Entries: journal[1:]}, nil); err == nil {
		t.Fatal("journal gap accepted")
	}
	if _, err := decodeClientTable(tableAtSnapshot[:len(tableAtSnapshot)-1], 4); err == nil {
		t.Fatal("truncated table accepted")
	}
}

func TestClientTableEvictsOldestWhenFull(t *testing.T) {
	tb := newClientTable(2)
	for i := uint64(1); i <= 3; i++ {
		tb.commit(consensus.PrepareHeader{Op: i, Client: consensus.Uint128{Lo: i}, Operation: consensus.OperationRegister})
	}
	if _, ok := tb.entries[consensus.Uint128{Lo: 1}]; ok || len(tb.entries) != 2 {
		t.Fatalf("entries after overflow: %d, oldest kept=%v", len(tb.entries), ok)
	}
	again, err := decodeClientTable(tb.encode(), 2)
	if err != nil || !bytes.Equal(again.encode(), tb.encode()) {
		t.Fatalf("round trip: %v", err)
	}
}
