package node

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// fullDisk is a memLog whose writes fail with ENOSPC while full is set.
type fullDisk struct {
	memLog
	full atomic.Bool
}

func (f *fullDisk) Append(es ...consensus.Prepare) error {
	if f.full.Load() {
		return syscall.ENOSPC
	}
	return f.memLog.Append(es...)
}

func (f *fullDisk) TruncateAndAppend(from uint64, es []consensus.Prepare) error {
	if f.full.Load() {
		return syscall.ENOSPC
	}
	return f.memLog.TruncateAndAppend(from, es)
}

// TestFullDiskFencesMetadataWritesUntilSpaceReturns (issue 15 point 8): a
// metadata write hitting a full disk used to stop the process. Now the group
// is fenced: new writes are refused at once with a retryable answer, the
// admitted one stays pending, and everything commits once space returns.
func TestFullDiskFencesMetadataWritesUntilSpaceReturns(t *testing.T) {
	store := &fullDisk{}
	d := newDriver(quietLogger(), testGroup(t, 64), store, &countingApp{}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.run(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("driver stopped with %v", err)
		}
	}()
	register := func(client uint64) outcome {
		return d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: client}, Operation: consensus.OperationRegister}, nil)
	}
	if out := register(1); out.kind != consensus.ReplyCommitted {
		t.Fatalf("before the disk filled: %+v", out)
	}
	store.full.Store(true)
	pending := make(chan outcome, 1)
	go func() { pending <- register(2) }()
	for i := 0; !d.fenced.Load(); i++ {
		if i > 2000 {
			t.Fatal("the group was not fenced while the disk is full")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if refused := register(100); refused.kind != consensus.ReplyNotAccepted || !errors.Is(refused.err, errMetadataFenced) {
		t.Fatalf("refusal while fenced: %+v", refused)
	}
	store.full.Store(false)
	if out := <-pending; out.kind != consensus.ReplyCommitted {
		t.Fatalf("the write admitted before the fence did not commit once space returned: %+v", out)
	}
	var after outcome
	for i := 0; ; i++ {
		if i > 2000 {
			t.Fatalf("writes never resumed after space returned: %+v", after)
		}
		if after = register(9999); after.kind == consensus.ReplyCommitted {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWedgedMetadataStorageExitsWithItsOwnCode: a fence that outlives
// superblock_wedged_fatal_timeout stops the driver with an error whose
// ExitCode is ExitStorageWedged.
func TestWedgedMetadataStorageExitsWithItsOwnCode(t *testing.T) {
	store := &fullDisk{}
	store.full.Store(true)
	d := newDriver(quietLogger(), testGroup(t, 64), store, &countingApp{}, 0)
	d.fence.timeout = 1500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- d.run(ctx) }()
	go d.propose(ctx, consensus.Request{Client: consensus.Uint128{Lo: 1}, Operation: consensus.OperationRegister}, nil)
	err := <-stopped
	var coded interface{ ExitCode() int }
	if !errors.As(err, &coded) || coded.ExitCode() != ExitStorageWedged || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("driver stopped with %v, want the wedged error (exit %d) wrapping ENOSPC", err, ExitStorageWedged)
	}
}
