package node

import (
	"fmt"
	"os"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// File descriptors for new partitions (issue 15 point 8). Each served
// partition holds open files (its active segment's log and index, and the
// log of each sealed segment), so a node past its RLIMIT_NOFILE used to
// answer CreateTopic OK while the partitions could not open, and then could
// not boot. Before proposing a creation, the node checks that it can still
// open the files the new partitions need, plus a reserve for connections,
// the metadata files and the next boot: it opens them (/dev/null) and
// closes them again. Short of that, the creation is refused with 3000
// CannotCreatePartition before anything is committed.
//
// Not done yet (issue 15 point 8, left open): a bounded cache of open
// segment files, so the number of partitions is no longer bound by the
// descriptor limit at all.
const (
	partitionFilesEach   = 2  // a new partition's active segment: log and index
	partitionFilesSpared = 64 // connections, metadata files, a boot's opens
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
	if err := fdsAvailable(int(count)*partitionFilesEach + partitionFilesSpared); err != nil {
		n.log.Warn("partition creation refused: this node cannot open the files the partitions need",
			"partitions", count, "err", err)
		return wire.ErrCannotCreatePartition
	}
	return wire.OK
}
