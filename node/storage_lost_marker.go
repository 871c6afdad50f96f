package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodestream/lodestream/vfs"
)

// The settle decision of a clustered node that booted on empty metadata
// storage (storage_lost.go) must outlive a crash. The first boot writes
// its boot checkpoint (a superblock of view 0) before the peers have
// answered; without a record, a wiped node that crashed before its
// metadata group rejoined booted next as an intact replica with an empty
// log — one that nacks and, with its probes unanswered, elects: the
// danger storage_lost.go exists to avoid. So the node records in
// metadata.storage_lost (synced):
//
//   - "unsettled", before the boot checkpoint: the peers have not
//     answered yet; a restart asks them again;
//   - "lost", before the metadata group restarts with StorageLost: a
//     restart restarts it the same way (and partition groups created
//     before the boot too);
//
// and removes it (synced) once the peers showed a new cluster, or once
// the metadata group is Normal in a view whose whole log it holds
// (consensus.Group.StorageLost cleared). An "unsettled" marker a power
// loss brought back to every node of a new cluster would make each take
// itself for lost, and more than f lost replicas never elect.
const metadataLostMarkerFile = "metadata.storage_lost"

type metadataSettle uint8

const (
	metadataSettled   metadataSettle = iota // no marker
	metadataUnsettled                       // the peers have not answered yet
	metadataLost                            // the storage was lost; not rejoined yet
)

func (s metadataSettle) String() string {
	switch s {
	case metadataUnsettled:
		return "unsettled"
	case metadataLost:
		return "lost"
	}
	return "settled"
}

// readMetadataSettle reads the marker. Content it does not know (damage)
// reads as lost, the decision that is safe either way, with a warning.
func readMetadataSettle(fsys vfs.FS, dataDir string) (metadataSettle, string, error) {
	b, err := fsys.ReadFile(filepath.Join(dataDir, metadataLostMarkerFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return metadataSettled, "", nil
	case err != nil:
		return metadataSettled, "", fmt.Errorf("read %s: %w", metadataLostMarkerFile, err)
	}
	switch content := strings.TrimSpace(string(b)); content {
	case metadataUnsettled.String():
		return metadataUnsettled, "", nil
	case metadataLost.String():
		return metadataLost, "", nil
	default:
		return metadataLost, fmt.Sprintf("%s holds %q, neither %q nor %q: taken as lost", metadataLostMarkerFile,
			content, metadataUnsettled, metadataLost), nil
	}
}

// writeMetadataSettle records s durably (metadataSettled removes the marker).
func writeMetadataSettle(fsys vfs.FS, dataDir string, s metadataSettle) error {
	if s == metadataSettled {
		if err := fsys.Remove(filepath.Join(dataDir, metadataLostMarkerFile)); errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			return fmt.Errorf("remove %s: %w", metadataLostMarkerFile, err)
		}
		// Synced: an "unsettled" marker back after a rack power loss of a
		// new cluster would make every node take itself for lost.
		return syncDirectory(fsys, dataDir)
	}
	if s == metadataLost {
		// First the partitions' record: it outlives the metadata marker.
		if err := replaceFileDurably(fsys, dataDir, partitionsLostMarkerFile, nil); err != nil {
			return fmt.Errorf("write %s: %w", partitionsLostMarkerFile, err)
		}
	}
	return replaceFileDurably(fsys, dataDir, metadataLostMarkerFile, []byte(s.String()+"\n"))
}

// partitionsLostMarkerFile records that this node's storage was lost for
// the partitions too: a partition created before the loss whose directory
// holds no superblock restarts its group StorageLost (no vote with an
// empty log until the view's primary answers). It is written with the
// metadata's "lost" and outlives it: the metadata group may rejoin (and
// drop its marker) before the partition plane has opened every partition
// and recorded storage.lost in each; a crash in between used to restart
// those partitions as intact replicas with empty logs, which voted, and a
// committed op of a persisted topic was dropped (metadata simulator seed
// 11509). The partition-reopen job removes it once every partition
// metadata holds is open (clearPartitionsLost).
const partitionsLostMarkerFile = "partitions.storage_lost"

// partitionsLostMarked: the node's partitions' storage was lost and not
// every partition has been reopened since.
func partitionsLostMarked(fsys vfs.FS, dataDir string) (bool, error) {
	_, err := fsys.Stat(filepath.Join(dataDir, partitionsLostMarkerFile))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", partitionsLostMarkerFile, err)
}
