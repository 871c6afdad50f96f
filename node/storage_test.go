package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// TruncateAndAppend completes memLog (driver_test.go) as a durableLog.
func (m *memLog) TruncateAndAppend(from uint64, es []consensus.Prepare) error {
	m.mu.Lock()
	kept := m.entries[:0]
	for _, e := range m.entries {
		if e.Header.Op < from {
			kept = append(kept, e)
		}
	}
	m.entries = append(kept, es...)
	m.mu.Unlock()
	m.note("truncate %d append %d", from, len(es))
	return nil
}

var soloIdentity = journal.Identity{ReplicaID: 0, ReplicaCount: 1}

func openTestStorage(t *testing.T, dir string) (*metaStorage, recovered) {
	t.Helper()
	st, rec, err := openMetaStorage(vfs.OS, dir, soloIdentity)
	if err != nil {
		t.Fatalf("open metadata storage: %v", err)
	}
	return st, rec
}

// TestMetaStorageLockRefusesSecondOpener: while one opener holds
// metadata/.lock, a second one (another server on the same data
// directory) is refused with an error saying so; closing releases it.
func TestMetaStorageLockRefusesSecondOpener(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "metadata")
	first, _ := openTestStorage(t, dir)
	if _, _, err := openMetaStorage(vfs.OS, dir, soloIdentity); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second opener: err %v, want a lock refusal", err)
	}
	// The refused opener left the first one intact.
	if err := first.Append(consensus.Prepare{Header: consensus.PrepareHeader{Op: 1, Checksum: 7}}); err != nil {
		t.Fatalf("append by the lock holder: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, rec := openTestStorage(t, dir)
	defer second.Close()
	if len(rec.entries) != 1 {
		t.Fatalf("reopened after release: %d entries, want 1", len(rec.entries))
	}
}

// TestRunRefusesDataDirInUse: a second server on a running server's data
// directory fails to boot with the lock error and disturbs nothing.
func TestRunRefusesDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	_, stop := startNode(t, dir)
	cfg, err := loopbackNodeConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Run(ctx, Options{Config: cfg, RootUsername: "iggy", RootPassword: "iggy", Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second server on the same data directory: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("first server: %v", err)
	}
}

// TestMetaStorageOpensSingleFileJournal: a metadata directory written by
// the single-file journal (metadata/journal.wal, the same record bytes)
// opens: the file becomes segment 0, its entries come back, and the
// journal goes on in segments.
func TestMetaStorageOpensSingleFileJournal(t *testing.T) {
	dir := t.TempDir()
	store, _ := openTestStorage(t, dir)
	for op := uint64(1); op <= 5; op++ {
		if err := store.Append(fakePrepare(op, 100+op)); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "journal-*.wal"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	if err := os.Rename(segs[0], filepath.Join(dir, "journal.wal")); err != nil {
		t.Fatal(err)
	}
	store, rec := openTestStorage(t, dir)
	defer store.Close()
	if len(rec.entries) != 5 || rec.entries[4].Header.Checksum != 105 {
		t.Fatalf("recovered %d entries from journal.wal", len(rec.entries))
	}
	if _, err := os.Stat(filepath.Join(dir, "journal.wal")); !os.IsNotExist(err) {
		t.Fatalf("journal.wal left in place: %v", err)
	}
	if err := store.Append(fakePrepare(6, 106)); err != nil {
		t.Fatal(err)
	}
	if got := journalOnDisk(t, dir); len(got) != 6 {
		t.Fatalf("after an append the journal holds %v", got)
	}
}
