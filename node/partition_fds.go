package node

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/lodestream/lodestream/config"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// File descriptors for partitions (issue 15 point 8). Partition segment
// files go through one bounded open-file cache per node
// (partitions.FileCache, [system] open_files_max): opened on demand, closed
// least recently used, so the partition count is no longer bound by
// RLIMIT_NOFILE and a boot never needs every file open at once.
//
// Before proposing a creation, the node still checks that the cache can
// have the descriptors the new partitions would take (each new partition
// creates its active segment's log and index; once the cache is full they
// evict idle files instead of adding descriptors), plus a reserve for
// connections and the metadata files: it opens that many (/dev/null) and
// closes them again. Short of that (connections or something else took the
// descriptors the cache was sized for), the creation is refused with 3000
// CannotCreatePartition before anything is committed.
const (
	partitionFilesEach   = 2  // a new partition's active segment: log and index
	partitionFilesSpared = 64 // connections, metadata files, transient opens
)

// fdsAvailable opens n descriptors and closes them again; an error names
// why they cannot be had.
func fdsAvailable(n int) error {
	files := make([]*os.File, 0, min(n, 4096))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return fmt.Errorf("only %d more files can be opened, %d needed: %w", len(files), n, err)
		}
		files = append(files, f)
	}
	return nil
}

// creationFilesNeeded is the descriptors creating count partitions may add:
// two each, but no more than the cache has left below its bound.
func creationFilesNeeded(count uint32, cache *partitions.FileCache) int {
	need := int(count) * partitionFilesEach
	if cache != nil {
		st := cache.Stats()
		need = min(need, max(st.Max-st.Open, 0))
	}
	return need + partitionFilesSpared
}

// creationResources refuses a command that creates partitions this node
// could not open.
func (n *Node) creationResources(cmd metadata.Command) wire.ErrorCode {
	var count uint32
	switch c := cmd.(type) {
	case metadata.CreateTopic:
		count = c.PartitionsCount
	case metadata.CreatePartitions:
		count = c.Count
	default:
		return wire.OK
	}
	if count == 0 || n.plane == nil {
		return wire.OK
	}
	if err := fdsAvailable(creationFilesNeeded(count, n.plane.files)); err != nil {
		n.log.Warn("partition creation refused: this node cannot open the files the partitions need",
			"partitions", count, "err", err)
		return wire.ErrCannotCreatePartition
	}
	return wire.OK
}

// openFilesReserveMin is what open_files_max always leaves of the
// descriptor limit for everything else (listeners, metadata files,
// connections, transient opens) when the configured value asks for more.
const openFilesReserveMin = 64

// newOpenFileCache builds the node's open-file cache from [system]
// open_files_max: 0 derives the bound from RLIMIT_NOFILE; a configured
// bound the limit cannot hold is lowered, with a warning.
func newOpenFileCache(cfg *config.Config, log *slog.Logger) *partitions.FileCache {
	limit, known := partitions.OpenFilesLimit()
	bound := cfg.System.OpenFilesMax
	derived := bound == 0
	if derived {
		bound = uint64(partitions.AutoOpenFilesMax(limit, cfg.TCP.ConnectionsMax))
	} else if known && bound+openFilesReserveMin > limit {
		lowered := uint64(max(int64(limit)-openFilesReserveMin, partitions.OpenFilesMin))
		log.Warn("system.open_files_max is above what the descriptor limit leaves: lowered",
			"open_files_max", bound, "lowered_to", lowered, "rlimit_nofile", limit)
		bound = lowered
	}
	log.Info("open-file cache for partition segments", "open_files_max", bound, "derived", derived,
		"rlimit_nofile", limit)
	return partitions.NewFileCache(int(bound), log)
}
