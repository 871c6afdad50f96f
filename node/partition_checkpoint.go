package node

import (
	"encoding/binary"
	"fmt"

	"github.com/lodestream/lodestream/partitions"
	"github.com/lodestream/lodestream/wire"
)

// partitionCheckpoint is a partition group's application snapshot, what
// consensus keeps at a checkpoint and serves to a replica that needs a
// state transfer: where the log ends after the checkpoint op (frontier),
// where it starts, and the consumer offsets. The messages are not in it:
// an installing replica fetches the records it lacks from a peer
// (partition_transfer.go), so a snapshot stays small whatever the
// partition's size.
//
// Encoding: [version u8 = 4][frontier u64][first u64][count u32] then
// count × [kind u8][id u32][offset u64], ordered by kind then id, then the
// retry dedup table (partition_dedup.go), then [offsets reserved u64]
// (partition_reserve.go), then [purge generation u64][purge op u64] (the
// partition marker's, as of the checkpoint op),
// little endian. Version 1 had no table, version 2 no reservation, version
// 3 no purge state (still written when the purge state as of the
// checkpoint op is unknown: partition_purge_replay.go).
type partitionCheckpoint struct {
	frontier uint64
	first    uint64
	offsets  []partitions.ConsumerOffsetEntry
	dedup    []byte // encoded dedupTable; nil = empty
	// reserved: the applied offset reservation; hasReserved is false for a
	// version 1 or 2 snapshot, which did not carry it.
	reserved    uint64
	hasReserved bool
	// purge: the purge the log reflects at the checkpoint op; hasPurge is
	// false for a snapshot that did not carry it.
	purge    purgeState
	hasPurge bool
}

// purgeState is the purge a replica's files reflect: its generation and
// the op of the group's log that carried it out (the partition marker's).
type purgeState struct {
	generation, op uint64
}

const (
	partitionCheckpointVersion   = 4
	partitionCheckpointFixed     = 1 + 8 + 8 + 4
	partitionCheckpointEntry     = 1 + 4 + 8
	partitionCheckpointOffsetMax = 1 << 20 // as partitions bounds offsets per partition
)

func (c partitionCheckpoint) encode() []byte {
	b := make([]byte, 0, partitionCheckpointFixed+len(c.offsets)*partitionCheckpointEntry)
	b = append(b, partitionCheckpointVersion)
	b = binary.LittleEndian.AppendUint64(b, c.frontier)
	b = binary.LittleEndian.AppendUint64(b, c.first)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.offsets)))
	for _, o := range c.offsets {
		b = append(b, byte(o.Kind))
		b = binary.LittleEndian.AppendUint32(b, o.ID)
		b = binary.LittleEndian.AppendUint64(b, o.Offset)
	}
	if c.dedup == nil {
		b = binary.LittleEndian.AppendUint32(b, 0) // an empty table
	} else {
		b = append(b, c.dedup...)
	}
	b = binary.LittleEndian.AppendUint64(b, c.reserved)
	if !c.hasPurge {
		b[0] = 3
		return b
	}
	b = binary.LittleEndian.AppendUint64(b, c.purge.generation)
	return binary.LittleEndian.AppendUint64(b, c.purge.op)
}

func decodePartitionCheckpoint(b []byte) (partitionCheckpoint, error) {
	if len(b) < partitionCheckpointFixed {
		return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: %d bytes, shorter than its %d-byte header", len(b), partitionCheckpointFixed)
	}
	version := b[0]
	if version < 1 || version > partitionCheckpointVersion {
		return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: version %d, want 1 to %d", b[0], partitionCheckpointVersion)
	}
	c := partitionCheckpoint{frontier: binary.LittleEndian.Uint64(b[1:]), first: binary.LittleEndian.Uint64(b[9:])}
	n := binary.LittleEndian.Uint32(b[17:])
	offsetsEnd := partitionCheckpointFixed + int(n)*partitionCheckpointEntry
	if n > partitionCheckpointOffsetMax || len(b) < offsetsEnd || (version == 1 && len(b) != offsetsEnd) {
		return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: %d consumer offsets do not fit its %d bytes", n, len(b))
	}
	if version >= 2 {
		_, rest, err := decodeDedupTable(b[offsetsEnd:])
		if err != nil {
			return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: %w", err)
		}
		want := 0
		switch version {
		case 3:
			want = 8
		case 4:
			want = 24
		}
		if len(rest) != want {
			return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: %d bytes after the dedup table, want %d", len(rest), want)
		}
		c.dedup = b[offsetsEnd : len(b)-len(rest)]
		if version >= 3 {
			c.reserved, c.hasReserved = binary.LittleEndian.Uint64(rest), true
		}
		if version >= 4 {
			c.purge = purgeState{generation: binary.LittleEndian.Uint64(rest[8:]), op: binary.LittleEndian.Uint64(rest[16:])}
			c.hasPurge = true
		}
	}
	if c.first > c.frontier {
		return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: first offset %d above the frontier %d", c.first, c.frontier)
	}
	c.offsets = make([]partitions.ConsumerOffsetEntry, n)
	for i := range c.offsets {
		e := b[partitionCheckpointFixed+i*partitionCheckpointEntry:]
		kind := wire.ConsumerKind(e[0])
		if kind != wire.ConsumerKindSingle && kind != wire.ConsumerKindGroup {
			return partitionCheckpoint{}, fmt.Errorf("partition checkpoint: consumer offset %d has kind %d", i, kind)
		}
		c.offsets[i] = partitions.ConsumerOffsetEntry{Kind: kind, ID: binary.LittleEndian.Uint32(e[1:]), Offset: binary.LittleEndian.Uint64(e[5:])}
	}
	return c, nil
}

// checkpointOf describes a log whose applied state ends at frontier, with
// the offset reservation applied with it and, when known, the purge it
// reflects.
func checkpointOf(l partitionStore, frontier, reserved uint64, purge purgeState, hasPurge bool) partitionCheckpoint {
	return partitionCheckpoint{frontier: frontier, first: min(l.Stats().FirstOffset, frontier), offsets: l.ConsumerOffsets(),
		reserved: reserved, hasReserved: true, purge: purge, hasPurge: hasPurge}
}

// purgeState is the marker's purge state.
func (m partitionMarker) purgeState() purgeState {
	return purgeState{generation: m.PurgeGeneration, op: m.PurgeOp}
}
