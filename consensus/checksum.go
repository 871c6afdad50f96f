package consensus

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// prepareHeaderHashedBytes is the size of the header fields covered by the
// identity checksum (everything except View and Checksum).
const prepareHeaderHashedBytes = 8*4 + 16 + 8*3 + 1 + 4

// PrepareChecksum computes the identity checksum of a prepare: XXH3 over the
// header without View and Checksum, then the body. View is left out so a
// prepare keeps its identity when a later primary retransmits it.
func PrepareChecksum(h *PrepareHeader, body []byte) uint64 {
	var buf [prepareHeaderHashedBytes]byte
	b := buf[:0]
	b = binary.LittleEndian.AppendUint64(b, h.Op)
	b = binary.LittleEndian.AppendUint64(b, h.Commit)
	b = binary.LittleEndian.AppendUint64(b, h.Timestamp)
	b = binary.LittleEndian.AppendUint64(b, h.Parent)
	b = binary.LittleEndian.AppendUint64(b, h.Client.Lo)
	b = binary.LittleEndian.AppendUint64(b, h.Client.Hi)
	b = binary.LittleEndian.AppendUint64(b, h.Session)
	b = binary.LittleEndian.AppendUint64(b, h.Request)
	b = binary.LittleEndian.AppendUint64(b, h.ReqSum)
	b = append(b, byte(h.Operation))
	b = binary.LittleEndian.AppendUint32(b, h.UserID)
	// Chain the header hash in as the body hash's seed: no allocation.
	sum := xxh3.HashSeed(body, xxh3.Hash(b))
	if sum == 0 {
		sum = 1 // zero marks a blank header in DVC suffixes
	}
	return sum
}

// verifyPrepare reports whether p's identity checksum matches its contents.
func verifyPrepare(p *Prepare) bool {
	return p.Header.Op > 0 && p.Header.Checksum == PrepareChecksum(&p.Header, p.Body)
}

// SnapshotChecksum is the checksum a Snapshot's Checksum field must carry.
func SnapshotChecksum(data []byte) uint64 { return xxh3.Hash(data) }
