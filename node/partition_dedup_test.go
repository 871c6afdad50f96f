package node

import (
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
)

func TestDedupTableRecognisesReplaysWithinTheWindow(t *testing.T) {
	var tb dedupTable
	a := dedupKey{user: 1, client: consensus.Uint128{Lo: 7}}
	b := dedupKey{user: 2, client: consensus.Uint128{Lo: 7}} // same client id, another user
	tb.record(a, 10, 0xAA, 100, 1)
	if v, base := tb.check(a, 10, 0xAA); v != dedupReplay || base != 100 {
		t.Fatalf("replay: %v %d", v, base)
	}
	if v, _ := tb.check(a, 10, 0xBB); v != dedupNew {
		t.Fatal("a reused request id with another body was taken for a replay")
	}
	if v, _ := tb.check(b, 10, 0xAA); v != dedupNew {
		t.Fatal("another user's request was taken for a replay")
	}
	for r := uint64(11); r < 11+dedupWindow; r++ {
		tb.record(a, r, r, 1000+r, r)
	}
	if v, _ := tb.check(a, 10, 0xAA); v != dedupTooOld {
		t.Fatalf("a request id below a full window: %v, want too old", v)
	}
	if v, base := tb.check(a, 11+dedupWindow-1, 11+dedupWindow-1); v != dedupReplay || base != 1000+11+dedupWindow-1 {
		t.Fatalf("the newest entry: %v %d", v, base)
	}
	enc := tb.encode(nil)
	got, rest, err := decodeDedupTable(enc)
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode: %v (%d bytes left)", err, len(rest))
	}
	if string(got.encode(nil)) != string(enc) {
		t.Fatal("round trip changed the table")
	}
	for _, bad := range [][]byte{enc[:3], enc[:10], append([]byte{0xFF, 0xFF, 0, 0}, enc[4:]...)} {
		if _, _, err := decodeDedupTable(bad); err == nil {
			t.Errorf("a damaged table (%d bytes) decoded", len(bad))
		}
	}
}

func TestDedupTableEvictsTheLeastRecentClient(t *testing.T) {
	var tb dedupTable
	for i := 0; i < dedupClientsMax; i++ {
		tb.record(dedupKey{user: 1, client: consensus.Uint128{Lo: uint64(i + 1)}}, 1, 1, 1, uint64(i+1))
	}
	tb.record(dedupKey{user: 1, client: consensus.Uint128{Lo: 1}}, 2, 2, 2, 5000) // client 1 used again
	tb.record(dedupKey{user: 9, client: consensus.Uint128{Lo: 1}}, 1, 1, 1, 5001) // one more client
	if len(tb.clients) != dedupClientsMax {
		t.Fatalf("%d clients, bound %d", len(tb.clients), dedupClientsMax)
	}
	if _, ok := tb.clients[dedupKey{user: 1, client: consensus.Uint128{Lo: 2}}]; ok {
		t.Fatal("the least recently used client (2) was kept")
	}
	if _, ok := tb.clients[dedupKey{user: 1, client: consensus.Uint128{Lo: 1}}]; !ok {
		t.Fatal("a recently used client was evicted")
	}
}

func TestDedupFileKeepsTheCheckpointsTable(t *testing.T) {
	dir := t.TempDir()
	var tb dedupTable
	tb.record(dedupKey{user: 3, client: consensus.Uint128{Lo: 4}}, 5, 6, 7, 8)
	if err := writeDedupFile(vfs.OS, dir, 40, tb.encode(nil), 0); err != nil {
		t.Fatal(err)
	}
	got, err := readDedupFile(vfs.OS, dir, 50) // written at op 40, unchanged since: valid for 50
	if err != nil || len(got.clients) != 1 {
		t.Fatalf("read at a later checkpoint: %v %v", got.clients, err)
	}
	if _, err := readDedupFile(vfs.OS, dir, 30); err == nil {
		t.Fatal("a table written after the superblock's checkpoint was accepted")
	}
}
