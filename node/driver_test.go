package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// memLog records what the driver persisted, in order.
type memLog struct {
	mu      sync.Mutex
	events  []string
	entries []consensus.Prepare
}

func (m *memLog) note(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, fmt.Sprintf(format, args...))
}

func (m *memLog) Append(es ...consensus.Prepare) error {
	m.mu.Lock()
	m.entries = append(m.entries, es...)
	m.mu.Unlock()
	m.note("append %d..%d", es[0].Header.Op, es[len(es)-1].Header.Op)
	return nil
}
func (m *memLog) TruncateFrom(op uint64) error { m.note("truncate %d", op); return nil }
func (m *memLog) WriteSuperblock(st consensus.VsrState) error {
	m.note("superblock checkpoint=%d", st.CheckpointOp)
	return nil
}
func (m *memLog) WriteSnapshot(s consensus.Snapshot) error { m.note("snapshot %d", s.Op); return nil }
func (m *memLog) Compact(op uint64) error                  { m.note("compact %d", op); return nil }

// countingApp answers each op with its op number and counts applies.
type countingApp struct {
	mu      sync.Mutex
	applied []uint64
}

func (a *countingApp) applyCommitted(p consensus.Prepare, local *proposal) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = append(a.applied, p.Header.Op)
	return []byte(fmt.Sprintf("op%d", p.Header.Op))
}
func (a *countingApp) checkpointData(table []byte) []byte { return append([]byte("state"), table...) }
func (a *countingApp) installSnapshot(consensus.Snapshot, metadataGroup) error {
	return errors.New("countingApp: no state transfer")
}

func testGroup(t *testing.T, clients uint32) *consensus.Replica {
	t.Helper()
	cfg := consensus.DefaultConfig(0, 1)
	cfg.GroupID, cfg.ClientTableMax = metadataGroupID, clients
	g, err := consensus.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestDriverCommitsConcurrentProposalsInOrder(t *testing.T) {
	g := testGroup(t, 1024)
	store := &memLog{}
	app := &countingApp{}
	d := newDriver(quietLogger(), g, store, app, 0)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.run(ctx) }()

	const clients = 40
	var wg sync.WaitGroup
	sessions := make([]uint64, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out := d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: uint64(i + 1)}, Operation: consensus.OperationRegister}, nil)
			if out.kind != consensus.ReplyCommitted || string(out.body) != fmt.Sprintf("op%d", out.op) {
				t.Errorf("client %d: %+v", i, out)
			}
			sessions[i] = out.op
		}(i)
	}
	wg.Wait()
	// A retried request gets the recorded body of its first commit.
	first := d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: 1}, Session: sessions[0], Request: 1, Operation: 128}, nil)
	again := d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: 1}, Session: sessions[0], Request: 1, Operation: 128}, nil)
	if string(first.body) != string(again.body) || first.kind != consensus.ReplyCommitted {
		t.Fatalf("dedup replay: first %+v again %+v", first, again)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	for i, op := range app.applied {
		if op != uint64(i+1) {
			t.Fatalf("applied out of order: %v", app.applied)
		}
	}
	if len(app.applied) != clients+1 || len(store.entries) != clients+1 {
		t.Fatalf("applied %d persisted %d, want %d", len(app.applied), len(store.entries), clients+1)
	}
	if out := d.propose(context.Background(), consensus.Request{Client: consensus.Uint128{Lo: 99}, Operation: consensus.OperationRegister}, nil); out.kind != consensus.ReplyNotAccepted {
		t.Fatalf("proposal after stop: %+v", out)
	}
}

func TestDriverCheckpointOrder(t *testing.T) {
	g := testGroup(t, 8)
	store := &memLog{}
	d := newDriver(quietLogger(), g, store, &countingApp{}, 0)
	for i := 0; i < 3; i++ {
		d.admit(&proposal{req: consensus.Request{Client: consensus.Uint128{Lo: uint64(i + 1)}, Operation: consensus.OperationRegister}, done: make(chan outcome, 1)})
	}
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := d.processReady(); err != nil {
		t.Fatal(err)
	}
	want := []string{"append 1..3", "snapshot 3", "superblock checkpoint=3", "compact 3"}
	if fmt.Sprint(store.events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", store.events, want)
	}
}
