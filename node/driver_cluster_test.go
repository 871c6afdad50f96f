package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// memBus connects drivers in one process: Send deep-copies the message
// (a real bus encodes it) and hands it to the target's inbox. A link to
// a stopped replica drops, like a dead peer.
type memBus struct {
	from    uint8
	drivers []atomic.Pointer[driver] // a restart swaps one in while the others send
	down    []atomic.Bool
}

type memBusPort struct {
	bus  *memBus
	from uint8
}

func (p memBusPort) SendShared(to []uint8, m *consensus.Message) {
	for _, t := range to {
		p.Send(t, m)
	}
}

func (p memBusPort) Send(to uint8, m *consensus.Message) {
	if int(to) >= len(p.bus.drivers) || p.bus.down[to].Load() || p.bus.down[p.from].Load() {
		return
	}
	if d := p.bus.drivers[to].Load(); d != nil {
		d.deliver(cloneMessage(m))
	}
}

func cloneMessage(m *consensus.Message) consensus.Message {
	c := *m
	if m.Prepare != nil {
		p := *m.Prepare
		p.Body = append([]byte(nil), m.Prepare.Body...)
		c.Prepare = &p
	}
	c.Suffix = append([]consensus.PrepareHeader(nil), m.Suffix...)
	c.ChunkData = append([]byte(nil), m.ChunkData...)
	return c
}

// listApp applies ops into a list; its snapshot is the list itself, so a
// state transfer must reproduce exactly what the peers applied.
type listApp struct {
	mu       sync.Mutex
	applied  []uint64
	installs int
}

func (a *listApp) applyCommitted(p consensus.Prepare, local *proposal) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = append(a.applied, p.Header.Op)
	return []byte(fmt.Sprintf("op%d", p.Header.Op))
}

func (a *listApp) checkpointData(table []byte) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	state := make([]byte, 0, 8*len(a.applied))
	for _, op := range a.applied {
		state = binary.LittleEndian.AppendUint64(state, op)
	}
	return encodeCheckpoint(state, table)
}

func (a *listApp) installSnapshot(s consensus.Snapshot, g metadataGroup) error {
	state, table, err := decodeCheckpoint(s.Data)
	if err != nil {
		return err
	}
	if len(state)%8 != 0 {
		return errors.New("listApp: snapshot length")
	}
	if err := g.RestoreClientTable(table); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = a.applied[:0]
	for i := 0; i < len(state); i += 8 {
		a.applied = append(a.applied, binary.LittleEndian.Uint64(state[i:]))
	}
	a.installs++
	return nil
}

func (a *listApp) snapshot() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]uint64(nil), a.applied...)
}

type clusterReplica struct {
	d      *driver
	app    *listApp
	store  *metaStorage
	cancel context.CancelFunc
	done   chan error
}

// TestDriversReplicateAndTransferState: three metadata drivers on durable
// storage, wired by an in-memory bus, replicate through the one driver
// contract (persist, send, apply, reply, advance); a replica that was
// down while the others checkpointed past their journal catches up by
// state transfer, installed through the applier.
func TestDriversReplicateAndTransferState(t *testing.T) {
	const n = 3
	bus := &memBus{drivers: make([]atomic.Pointer[driver], n), down: make([]atomic.Bool, n)}
	dir := t.TempDir()
	reps := make([]*clusterReplica, n)
	start := func(i int, sub string) {
		app := &listApp{}
		d, store := newMemBusDriver(t, filepath.Join(dir, sub), uint8(i), n, bus, app)
		bus.drivers[i].Store(d)
		ctx, cancel := context.WithCancel(context.Background())
		r := &clusterReplica{d: d, app: app, store: store, cancel: cancel, done: make(chan error, 1)}
		go func() { r.done <- d.run(ctx) }()
		reps[i] = r
	}
	stop := func(i int) {
		bus.down[i].Store(true)
		reps[i].cancel()
		if err := <-reps[i].done; err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
		reps[i].store.Close()
	}
	for i := 0; i < n; i++ {
		start(i, fmt.Sprint(i))
	}
	defer func() {
		for i := 0; i < n; i++ {
			if !bus.down[i].Load() {
				stop(i)
			}
		}
	}()
	ctx := context.Background()
	register := func(client uint64) outcome {
		return reps[0].d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: client}, Operation: consensus.OperationRegister}, nil)
	}
	if out := register(1); out.kind != consensus.ReplyCommitted || out.op != 1 {
		t.Fatalf("first proposal: %+v", out)
	}
	waitApplied := func(i int, op uint64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if a := reps[i].app.snapshot(); len(a) > 0 && a[len(a)-1] >= op {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("replica %d did not apply op %d (applied %v)", i, op, reps[i].app.snapshot())
	}
	waitApplied(1, 1)
	waitApplied(2, 1)

	// Replica 2 goes down; the other two commit past several checkpoints
	// and journal wraps (64 slots).
	stop(2)
	const ops = 300
	for c := uint64(2); c <= ops; c++ {
		if out := register(c); out.kind != consensus.ReplyCommitted {
			t.Fatalf("proposal %d with one replica down: %+v", c, out)
		}
	}
	bus.down[2].Store(false)
	start(2, "2-wiped") // a wiped node rejoins: empty storage, consensus.New
	waitApplied(2, ops)
	want := reps[0].app.snapshot()
	got := reps[2].app.snapshot()
	if fmt.Sprint(got) != fmt.Sprint(want[:len(got)]) {
		t.Fatalf("replica 2 applied %v..., primary %v...", got[:5], want[:5])
	}
	reps[2].app.mu.Lock()
	installs := reps[2].app.installs
	reps[2].app.mu.Unlock()
	if installs == 0 {
		t.Fatalf("replica 2 caught up without a state transfer")
	}
}

// newMemBusDriver opens a fresh metadata replica i of n on dir, wired to
// the in-memory bus (its caller runs and stops it).
func newMemBusDriver(t *testing.T, dir string, i, n uint8, bus *memBus, app applier) (*driver, *metaStorage) {
	t.Helper()
	store, _, err := openMetaStorage(vfs.OS, dir, journal.Identity{ReplicaID: i, ReplicaCount: n})
	if err != nil {
		t.Fatal(err)
	}
	cfg := consensus.DefaultConfig(i, n)
	cfg.GroupID, cfg.ClientTableMax = metadataGroupID, 64
	cfg.JournalSlots, cfg.PrepareQueueDepth = 64, 8
	cfg.Seed = uint64(i) + 1
	g, err := consensus.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(quietLogger(), g, store, app, 0)
	d.peers = memBusPort{bus: bus, from: i}
	return d, store
}
