package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
	"github.com/zeebo/xxh3"
)

// The consumer offsets of a partition group's checkpoint (cluster mode).
// The log's offset files hold what was last applied, which after a crash
// is above the checkpoint the group restarts from; applying the committed
// ops above it again (the WAL's replay) would walk an offset back to an
// older stored value until the replay passes the last store (docs/nemesis.md
// finding 3). So the offsets as of each checkpoint are kept beside the
// superblock, written before the superblock names the checkpoint when they
// changed since the last one, and a restart installs them before the
// replay: the offsets then only move forward through the same values they
// took the first time.
//
// File checkpoint.offsets: [op u64][count u32] count × [kind u8][id u32]
// [offset u64], then XXH3-64 of everything before it, little endian.
// Written durably (fsync, rename, directory fsync) whatever the topic's
// consumer_offset_durability: the superblock that names the checkpoint is
// synced after it, and a replica that lost power restarts from that
// checkpoint. Without the sync a power loss of one replica (fewer than a
// quorum, which `replicated` survives) left an older or torn file; the
// replica then restarted from offsets older than its checkpoint, the
// replay above the checkpoint did not bring back the stores below it, and
// the replica kept an offset its peers had moved past (whole-node
// simulator, docs/simulator.md).
const checkpointOffsetsFile = "checkpoint.offsets"

func encodeCheckpointOffsets(op uint64, offsets []partitions.ConsumerOffsetEntry) []byte {
	b := make([]byte, 0, 12+len(offsets)*partitionCheckpointEntry+8)
	b = binary.LittleEndian.AppendUint64(b, op)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(offsets)))
	for _, o := range offsets {
		b = append(b, byte(o.Kind))
		b = binary.LittleEndian.AppendUint32(b, o.ID)
		b = binary.LittleEndian.AppendUint64(b, o.Offset)
	}
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
}

// readCheckpointOffsets returns the file's offsets if they are those of
// checkpoint op (written at op, or at an earlier checkpoint with no change
// since); ok is false without a usable file.
func readCheckpointOffsets(fsys vfs.FS, dir string, op uint64) (offsets []partitions.ConsumerOffsetEntry, ok bool, err error) {
	b, err := readCheckpointFile(fsys, dir, checkpointOffsetsFile, op)
	if errors.Is(err, errCheckpointFileAhead) {
		// Written for a checkpoint whose superblock never became durable,
		// with no earlier generation: none to go back to.
		return nil, false, nil
	}
	if err != nil || b == nil {
		return nil, false, err
	}
	if len(b) < 20 {
		return nil, false, fmt.Errorf("%s: %d bytes", checkpointOffsetsFile, len(b))
	}
	n := binary.LittleEndian.Uint32(b[8:])
	body := b[12 : len(b)-8]
	if n > partitionCheckpointOffsetMax || len(body) != int(n)*partitionCheckpointEntry {
		return nil, false, fmt.Errorf("%s: %d offsets do not fit its %d bytes", checkpointOffsetsFile, n, len(body))
	}
	offsets = make([]partitions.ConsumerOffsetEntry, n)
	for i := range offsets {
		e := body[i*partitionCheckpointEntry:]
		offsets[i] = partitions.ConsumerOffsetEntry{Kind: wire.ConsumerKind(e[0]), ID: binary.LittleEndian.Uint32(e[1:]),
			Offset: binary.LittleEndian.Uint64(e[5:])}
	}
	return offsets, true, nil
}

// writeCheckpointOffsets replaces the file durably, keeping the generation
// of the confirmed checkpoint (partition_cpfiles.go).
func writeCheckpointOffsets(fsys vfs.FS, dir string, op uint64, offsets []partitions.ConsumerOffsetEntry, confirmedOp uint64) error {
	return replaceCheckpointFile(fsys, dir, checkpointOffsetsFile, encodeCheckpointOffsets(op, offsets), confirmedOp)
}

// noteCheckpointOffsets (shard goroutine, at a checkpoint) records the
// offsets as of the checkpoint for the next superblock write when they
// changed since the ones last written.
func (e *partitionEntry) noteCheckpointOffsets(offsets []partitions.ConsumerOffsetEntry) {
	if e.superblock == nil || (e.offsetsFileWritten && slices.Equal(offsets, e.writtenOffsets)) {
		return
	}
	e.checkpointOffsets, e.checkpointOffsetsDirty = offsets, true
}

// restoreCheckpointOffsets (restart) installs the consumer offsets as of
// checkpoint op when its file is readable; unreadable, the log keeps the
// offsets last applied (logged).
func (p *partitionPlane) restoreCheckpointOffsets(e *partitionEntry, op uint64) error {
	offsets, ok, err := readCheckpointOffsets(p.fsys, e.dir, op)
	if err != nil {
		p.log.Warn("partition checkpoint offsets unreadable: restarting with the offsets last applied", "dir", e.dir, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	if err := installConsumerOffsets(e.log, offsets); err != nil {
		return err
	}
	e.writtenOffsets, e.offsetsFileWritten = offsets, true
	return nil
}

// startOffsetsAtOpZero (restart with nothing applied) installs the consumer
// offsets as of op 0: none. The replay stores them again in order; kept,
// the ones last applied would go back to each older store as it is
// replayed (whole-node simulator finding 15).
func startOffsetsAtOpZero(e *partitionEntry) error {
	if err := installConsumerOffsets(e.log, nil); err != nil {
		return err
	}
	e.writtenOffsets = nil
	return nil
}
