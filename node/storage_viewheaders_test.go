package node

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lodestream/lodestream/consensus"
)

// TestMetaStorageKeepsViewHeaders: the view headers consensus asks to
// persist with log_view (VsrState.ViewHeaders, consensus finding 6) come
// back unchanged in what a restart reads, so the restarted replica reports
// its view's head in a DoViewChange.
func TestMetaStorageKeepsViewHeaders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "metadata")
	store, _ := openTestStorage(t, dir)
	want := consensus.VsrState{View: 4, LogView: 3, CommitMax: 7}
	for op := uint64(9); op >= 7; op-- {
		want.ViewHeaders = append(want.ViewHeaders, consensus.PrepareHeader{View: 2, Op: op, Commit: op - 2,
			Timestamp: op * 10, Parent: op*31 - 1, Checksum: op * 31, Client: consensus.Uint128{Lo: op}, Request: op})
	}
	if err := store.WriteSuperblock(want); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, rec := openTestStorage(t, dir)
	defer reopened.Close()
	if rec.superblock == nil || !reflect.DeepEqual(*rec.superblock, want) {
		t.Fatalf("restart read superblock %+v, want %+v", rec.superblock, want)
	}
}
