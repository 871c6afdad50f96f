package sim

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/lodestream/lodestream/consensus"
	"github.com/zeebo/xxh3"
)

// appState is the replicated application a replica applies committed ops
// to: a running hash over (op, checksum). Two replicas that applied the
// same ops in the same order hold the same hash, so comparing hashes at
// equal ops checks "apply exactly once, in order" end to end, snapshots
// included.
type appState struct {
	op   uint64
	hash uint64
	// extra is opaque state the consensus core asks the driver to carry in
	// snapshots (its client table); kept verbatim.
	extra []byte
}

// apply folds one committed op in; ops must arrive contiguously.
func (a *appState) apply(p *consensus.Prepare) error {
	if p.Header.Op != a.op+1 {
		return fmt.Errorf("committed op %d applied after op %d: not contiguous", p.Header.Op, a.op)
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], a.hash)
	binary.LittleEndian.PutUint64(b[8:], p.Header.Op)
	binary.LittleEndian.PutUint64(b[16:], p.Header.Checksum)
	a.hash = xxh3.Hash(b[:])
	a.op = p.Header.Op
	return nil
}

// snapshot encodes the state: op u64 | hash u64 | extra.
func (a *appState) snapshot() consensus.Snapshot {
	data := make([]byte, 16, 16+len(a.extra))
	binary.LittleEndian.PutUint64(data[0:], a.op)
	binary.LittleEndian.PutUint64(data[8:], a.hash)
	data = append(data, a.extra...)
	return consensus.Snapshot{Op: a.op, Checksum: consensus.SnapshotChecksum(data), Data: data}
}

// decodeAppSnapshot verifies and decodes a snapshot made by snapshot().
func decodeAppSnapshot(s *consensus.Snapshot) (appState, error) {
	if consensus.SnapshotChecksum(s.Data) != s.Checksum {
		return appState{}, fmt.Errorf("snapshot at op %d: checksum mismatch", s.Op)
	}
	if len(s.Data) < 16 {
		return appState{}, fmt.Errorf("snapshot at op %d: %d bytes, need 16", s.Op, len(s.Data))
	}
	a := appState{
		op:    binary.LittleEndian.Uint64(s.Data[0:]),
		hash:  binary.LittleEndian.Uint64(s.Data[8:]),
		extra: slices.Clone(s.Data[16:]),
	}
	if a.op != s.Op {
		return appState{}, fmt.Errorf("snapshot labelled op %d holds state of op %d", s.Op, a.op)
	}
	return a, nil
}

// replyBody is the reply the application produces for the op it just
// applied: built from committed data only, so every replica produces the
// same bytes and a deduplicated retry must replay exactly these.
func (a *appState) replyBody() []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b[0:], a.op)
	binary.LittleEndian.PutUint64(b[8:], a.hash)
	return b
}
