package node

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
)

// scriptedGroup hands the driver a fixed sequence of Readys: the shapes a
// one-replica group never produces (a view change's Truncate).
type scriptedGroup struct {
	readies  []consensus.Ready
	advanced int
}

func (g *scriptedGroup) Tick()                                         {}
func (g *scriptedGroup) Step(consensus.Message)                        {}
func (g *scriptedGroup) Propose(consensus.Request)                     {}
func (g *scriptedGroup) Checkpoint(consensus.Snapshot)                 {}
func (g *scriptedGroup) Ready() consensus.Ready                        { return g.readies[0] }
func (g *scriptedGroup) Outdated(m *consensus.Message) bool            { return m.View < g.View() }
func (g *scriptedGroup) HasReady() bool                                { return len(g.readies) > 0 }
func (g *scriptedGroup) HandOver(uint8) bool                           { return false }
func (g *scriptedGroup) SuspectPrimary() bool                          { return false }
func (g *scriptedGroup) ProbePrimary() bool                            { return false }
func (g *scriptedGroup) RestHeartbeat() bool                           { return false }
func (g *scriptedGroup) ReplicaID() uint8                              { return 0 }
func (g *scriptedGroup) View() uint32                                  { return 1 }
func (g *scriptedGroup) LogView() uint32                               { return 1 }
func (g *scriptedGroup) Status() consensus.Status                      { return consensus.StatusNormal }
func (g *scriptedGroup) IsPrimary() bool                               { return false }
func (g *scriptedGroup) Op() uint64                                    { return 0 }
func (g *scriptedGroup) CommitMin() uint64                             { return 0 }
func (g *scriptedGroup) CommitMax() uint64                             { return 0 }
func (g *scriptedGroup) StorageLost() bool                             { return false }
func (g *scriptedGroup) SetNow(uint64)                                 {}
func (g *scriptedGroup) NeedsCheckpoint() bool                         { return false }
func (g *scriptedGroup) CheckpointError() error                        { return nil }
func (g *scriptedGroup) RecordReply(consensus.Uint128, uint64, []byte) {}
func (g *scriptedGroup) ClientTableSnapshot() []byte                   { return nil }
func (g *scriptedGroup) RestoreClientTable([]byte) error               { return nil }
func (g *scriptedGroup) Advance(consensus.Ready) {
	g.readies = g.readies[1:]
	g.advanced++
}

// crashObserver wraps the real storage and, after every durable call,
// records the journal a crash at that moment would leave: its segment
// files copied aside and reopened by the journal.
type crashObserver struct {
	*metaStorage
	t      *testing.T
	states [][]string
}

func (c *crashObserver) observe() {
	c.t.Helper()
	c.states = append(c.states, journalOnDisk(c.t, c.dir))
}

func (c *crashObserver) Append(es ...consensus.Prepare) error {
	defer c.observe()
	return c.metaStorage.Append(es...)
}

func (c *crashObserver) TruncateAndAppend(from uint64, es []consensus.Prepare) error {
	defer c.observe()
	return c.metaStorage.TruncateAndAppend(from, es)
}

// journalOnDisk reopens a copy of dir's journal files and lists the
// recovered entries as "op/checksum".
func journalOnDisk(t *testing.T, dir string) []string {
	t.Helper()
	crashed := t.TempDir()
	names, err := filepath.Glob(filepath.Join(dir, "journal*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range names {
		name := filepath.Base(path)
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, entries, err := journal.OpenWAL(crashed)
	if err != nil {
		t.Fatalf("reopen the journal as a crash left it: %v", err)
	}
	w.Close()
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprintf("%d/%x", e.Header.Op, e.Header.Checksum))
	}
	return out
}

func fakePrepare(op, checksum uint64) consensus.Prepare {
	return consensus.Prepare{Header: consensus.PrepareHeader{View: 1, Op: op, Checksum: checksum, Timestamp: op}, Body: []byte("b")}
}

// TestDriverTruncateAndReappendIsOneDurableStep: a Ready with Truncate and
// re-appended Entries reaches the disk in one step, so at every point a
// crash could hit between the driver's storage calls the journal is either
// the one before the Ready or the one after it, never truncated without
// the re-appended entries.
func TestDriverTruncateAndReappendIsOneDurableStep(t *testing.T) {
	dir := t.TempDir()
	store, _ := openTestStorage(t, dir)
	defer store.Close()
	for op := uint64(1); op <= 6; op++ {
		if err := store.Append(fakePrepare(op, 100+op)); err != nil {
			t.Fatal(err)
		}
	}
	before := journalOnDisk(t, dir)
	obs := &crashObserver{metaStorage: store, t: t}
	g := &scriptedGroup{readies: []consensus.Ready{
		{Truncate: 4, Entries: []consensus.Prepare{fakePrepare(4, 204), fakePrepare(5, 205)}},
		{Entries: []consensus.Prepare{fakePrepare(6, 206)}},
	}}
	d := newDriver(quietLogger(), g, obs, &countingApp{}, 0)
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}
	afterFirst := []string{"1/65", "2/66", "3/67", "4/cc", "5/cd"}
	afterSecond := append(append([]string(nil), afterFirst...), "6/ce")
	if g.advanced != 2 {
		t.Fatalf("advanced %d Readys, want 2", g.advanced)
	}
	valid := map[string]bool{fmt.Sprint(before): true, fmt.Sprint(afterFirst): true, fmt.Sprint(afterSecond): true}
	for i, st := range obs.states {
		if !valid[fmt.Sprint(st)] {
			t.Fatalf("a crash after storage step %d leaves %v: neither before (%v) nor after a Ready (%v / %v)",
				i+1, st, before, afterFirst, afterSecond)
		}
	}
	if got := obs.states[len(obs.states)-1]; fmt.Sprint(got) != fmt.Sprint(afterSecond) {
		t.Fatalf("final journal %v, want %v", got, afterSecond)
	}
}

// TestDriverRejectedCheckpointNeverReachesDisk: when consensus rejects a
// checkpoint (here a driver bug claims an op it has not committed), the
// driver logs CheckpointError, writes no snapshot, does not retry the same
// op, and later valid checkpoints proceed (snapshot, superblock, compaction).
func TestDriverRejectedCheckpointNeverReachesDisk(t *testing.T) {
	dir := t.TempDir()
	store, _ := openTestStorage(t, dir)
	boot := consensus.Snapshot{Op: 0, Data: []byte("boot")}
	boot.Checksum = snapshotChecksum(boot.Data)
	if err := store.WriteSnapshot(boot); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteSuperblock(consensus.VsrState{}); err != nil {
		t.Fatal(err)
	}
	g, err := consensus.New(soloMetadataConfig())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d := newDriver(slog.New(slog.NewTextHandler(&logs, nil)), g, store, &countingApp{}, 0)
	for c := uint64(1); c <= 3; c++ {
		d.admit(registerProposal(c))
	}
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}

	d.appliedOp = 5 // the bug: ops 4 and 5 were never committed
	if err := d.checkpoint(); err != nil {
		t.Fatalf("a rejected checkpoint stopped the driver: %v", err)
	}
	if !strings.Contains(logs.String(), "checkpoint rejected") || !strings.Contains(logs.String(), "op=5") {
		t.Fatalf("rejection not logged; log:\n%s", logs.String())
	}
	if snap, err := journal.ReadSnapshot(dir); err != nil || snap.Op != 0 {
		t.Fatalf("snapshot.bin after the rejection: %+v %v, want the boot snapshot", snap, err)
	}
	logs.Reset()
	if err := d.checkpoint(); err != nil || logs.Len() != 0 || d.lastCheckpoint != 0 {
		t.Fatalf("same op retried: err %v, log %q, last checkpoint %d", err, logs.String(), d.lastCheckpoint)
	}

	d.appliedOp = 3
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := d.processReady(); err != nil {
		t.Fatalf("persisting the checkpoint's superblock: %v", err)
	}
	store.Close()
	reopened, rec := openTestStorage(t, dir)
	defer reopened.Close()
	if rec.snapshot.Op != 3 || rec.superblock.CheckpointOp != 3 || len(rec.entries) != 1 || rec.entries[0].Header.Op != 3 {
		t.Fatalf("after a valid checkpoint: snapshot %d superblock %d entries %d", rec.snapshot.Op, rec.superblock.CheckpointOp, len(rec.entries))
	}
}

// A group stepped while its Ready was written may have moved to a newer
// view: the messages of the old view stay home, the rest leave in order,
// and the Ready's own slice (shared with the group) is left as it was.
func TestSendableDropsOutdatedMessagesWithoutTouchingTheReady(t *testing.T) {
	g := &scriptedGroup{} // in view 1
	msgs := []consensus.Message{
		{Kind: consensus.MsgPrepareOk, View: 0, To: 1},
		{Kind: consensus.MsgPrepareOk, View: 1, To: 2},
		{Kind: consensus.MsgCommit, View: 0, To: 3},
		{Kind: consensus.MsgCommit, View: 1, To: 4},
	}
	got := sendable(g, msgs)
	if len(got) != 2 || got[0].To != 2 || got[1].To != 4 {
		t.Fatalf("sendable kept %+v, want the view-1 messages to 2 and 4", got)
	}
	if msgs[0].To != 1 || msgs[2].To != 3 {
		t.Fatalf("sendable rewrote the Ready's messages: %+v", msgs)
	}
	current := msgs[1:2]
	if kept := sendable(g, current); &kept[0] != &current[0] {
		t.Fatal("sendable copied a slice with nothing to drop")
	}
}
