package node

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

type recordingSender struct {
	single []uint8
	shared [][]uint8
}

func (r *recordingSender) Send(to uint8, _ *consensus.Message) { r.single = append(r.single, to) }
func (r *recordingSender) SendShared(to []uint8, _ *consensus.Message) {
	r.shared = append(r.shared, append([]uint8(nil), to...))
}

// A prepare broadcast to two backups goes out once, shared; other messages
// (and a prepare to one replica) one by one.
func TestSendAllSharesABroadcastPrepare(t *testing.T) {
	p := &consensus.Prepare{Body: []byte("batch")}
	q := &consensus.Prepare{Body: []byte("other")}
	msgs := []consensus.Message{
		{Kind: consensus.MsgPrepare, To: 1, View: 3, Prepare: p},
		{Kind: consensus.MsgPrepare, To: 2, View: 3, Prepare: p},
		{Kind: consensus.MsgCommit, To: 1, View: 3},
		{Kind: consensus.MsgCommit, To: 2, View: 3},
		{Kind: consensus.MsgPrepare, To: 2, View: 3, Prepare: q},
	}
	var r recordingSender
	sendAll(&r, msgs)
	if len(r.shared) != 1 || len(r.shared[0]) != 2 || r.shared[0][0] != 1 || r.shared[0][1] != 2 {
		t.Fatalf("shared sends %v, want the prepare to [1 2] once", r.shared)
	}
	if len(r.single) != 3 {
		t.Fatalf("single sends %v, want the two commits and the lone prepare", r.single)
	}
}
