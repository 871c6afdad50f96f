package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// Superblock record (server-design §3.7), little-endian:
//
//	magic u32 "SBLK" | version u16 = 1 | flags u16 | sequence u64 |
//	parent_checksum u64 = 0 | payload_len u32 (<= 4096) | payload |
//	XXH3-64 over all preceding bytes
//
// Payload (VsrState, 82 bytes): cluster u128 @0, replica_id u8 @16,
// replica_count u8 @17, view u32 @18, log_view u32 @22, commit_max u64 @26,
// checkpoint_op u64 @34, checkpoint_checksum u128 @42, offset_frontier u64
// @58, anchor_timestamp u64 @66, anchor_checksum u64 @74, then, only when
// there are view headers: view_header_count u16 @82 (1..128) and that many
// headers of viewHeaderBytes each (the WAL's prepare encoding with an empty
// body: header fields, body_len u32 = 0), the durable StartView suffix of
// log_view (consensus.VsrState.ViewHeaders). The anchors and the view
// headers extend server-design's 66-byte payload by length (the version
// stays 1): the 82-byte form (no view headers), the 66-byte form (no
// anchors) and the 58-byte legacy form (no frontier, no anchors) are still
// read, the missing fields as zero. flags (reserved = 0 before): bit 0 =
// VsrState.Amnesiac (the group restarted after losing unsynced
// acknowledged prepares to a power loss); other bits must be zero.
const (
	superblockFlagAmnesiac    uint16 = 1
	superblockMagic           uint32 = 0x53424C4B
	superblockVersion         uint16 = 1
	superblockHeaderBytes            = 28
	superblockTrailerBytes           = 8
	superblockPayloadBytes           = 82 // written when there are no view headers
	superblockFrontierPayload        = 66 // server-design §3.7, no anchors
	superblockLegacyPayload          = 58 // no frontier, no anchors
	superblockViewHeadersAt          = 84 // first view header, after the u16 count @82
	viewHeaderBytes                  = prepareFixedBytes
	superblockPayloadBytesMax        = 16384
)

// The largest payload (128 view headers) must fit the read bound.
var _ [superblockPayloadBytesMax - (superblockViewHeadersAt + consensus.ViewHeadersMax*viewHeaderBytes)]struct{}

// Identity is what a superblock must match at boot.
type Identity struct {
	Cluster      consensus.Uint128
	ReplicaID    uint8
	ReplicaCount uint8
}

// SuperblockState is the durable VSR state of one group.
type SuperblockState struct {
	Identity
	consensus.VsrState
	CheckpointChecksum consensus.Uint128
	OffsetFrontier     uint64
}

// Superblock manages the two slots superblock.a / superblock.b of a dir.
// Writes alternate slots so a torn write never destroys the newest valid
// record. Single writer: methods are serialized by a mutex.
type Superblock struct {
	mu       sync.Mutex
	fs       vfs.FS
	dir      string
	identity Identity
	sequence uint64 // of the newest valid record; 0 = none
	newest   int    // slot index holding it (0 = a, 1 = b), -1 = none
	// olderDamage describes a damaged slot that was provably the older
	// copy (OpenSuperblock booted from the newer one); empty otherwise.
	olderDamage string
}

var slotNames = [2]string{"superblock.a", "superblock.b"}

// ErrSuperblockUnreadable marks a slot that exists but fails verification.
var ErrSuperblockUnreadable = errors.New("superblock unreadable")

// OpenSuperblock reads both slots of dir. It returns the newest valid
// state (nil when neither slot exists: a fresh replica). A damaged slot
// refuses the boot unless it is provably the older copy (see
// provablyOlder): then the newer, valid copy is used, the damage is
// described by OlderCopyDamage, and the next Write replaces the damaged
// slot. An identity mismatch refuses.
func OpenSuperblock(dir string, id Identity, opts ...Option) (*Superblock, *SuperblockState, error) {
	fsys := fsOf(opts)
	if err := ensureDir(fsys, dir); err != nil {
		return nil, nil, err
	}
	sb := &Superblock{fs: fsys, dir: dir, identity: id, newest: -1}
	var best *SuperblockState
	var damaged []byte
	var damagedErr error
	for slot, name := range slotNames {
		path := filepath.Join(dir, name)
		data, err := fsys.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		seq, st, err := decodeSuperblock(data)
		if err != nil {
			if damagedErr != nil {
				return nil, nil, fmt.Errorf("%w: both copies are damaged: %v; %s: %v (remedy: wipe the directory and rejoin by state transfer)",
					ErrSuperblockUnreadable, damagedErr, path, err)
			}
			damaged, damagedErr = data, fmt.Errorf("%s: %v", path, err)
			continue
		}
		if sb.newest < 0 || seq > sb.sequence { // tie keeps slot a
			sb.sequence, sb.newest, best = seq, slot, st
		}
	}
	if damagedErr != nil {
		if best == nil || !provablyOlder(damaged, sb.sequence, best) {
			return nil, nil, fmt.Errorf("%w: %v; it may hold the newest state, so the other copy cannot stand in for it (remedy: wipe the directory and rejoin by state transfer)",
				ErrSuperblockUnreadable, damagedErr)
		}
		sb.olderDamage = fmt.Sprintf("%v; it is the older copy (sequence below %d): booting from the newer one, the next write replaces it", damagedErr, sb.sequence)
	}
	if best != nil && best.Identity != id {
		return nil, nil, fmt.Errorf("superblock in %s belongs to cluster %016x%016x replica %d of %d, configured cluster %016x%016x replica %d of %d; refusing to boot",
			dir, best.Cluster.Hi, best.Cluster.Lo, best.ReplicaID, best.ReplicaCount,
			id.Cluster.Hi, id.Cluster.Lo, id.ReplicaID, id.ReplicaCount)
	}
	return sb, best, nil
}

// OlderCopyDamage describes the damaged older slot OpenSuperblock
// booted past ("" when both copies were sound). The caller logs it.
func (sb *Superblock) OlderCopyDamage() string { return sb.olderDamage }

// provablyOlder says whether a damaged record is the copy written before
// the valid one, whose sequence is seq: writes alternate slots, so the
// other slot holds seq-1 (older) or seq+1 (newer, then damaged). The
// damaged record's own header must say seq-1 and its view and commit must
// not be ahead of the valid record's: a damaged field that could be the
// newer state refuses the boot rather than forget a view or a commit.
func provablyOlder(b []byte, seq uint64, valid *SuperblockState) bool {
	le := binary.LittleEndian
	if seq == 0 || len(b) < superblockHeaderBytes+superblockLegacyPayload || le.Uint64(b[8:]) != seq-1 {
		return false
	}
	p := b[superblockHeaderBytes:]
	return le.Uint32(p[18:]) <= valid.View && le.Uint64(p[26:]) <= valid.CommitMax
}

// Write durably stores st (its identity must be the opened one) in the
// slot not holding the newest record, with sequence+1.
func (sb *Superblock) Write(st SuperblockState) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if st.Identity != sb.identity {
		return fmt.Errorf("superblock write: identity %+v differs from opened %+v", st.Identity, sb.identity)
	}
	if st.LogView > st.View {
		return fmt.Errorf("superblock write: log_view %d above view %d", st.LogView, st.View)
	}
	if n := len(st.ViewHeaders); n > consensus.ViewHeadersMax {
		return fmt.Errorf("superblock write: %d view headers exceed the bound %d", n, consensus.ViewHeadersMax)
	}
	target := 0
	if sb.newest == 0 {
		target = 1
	}
	seq := sb.sequence + 1
	path := filepath.Join(sb.dir, slotNames[target])
	start := time.Now()
	if err := replaceFile(sb.fs, path, encodeSuperblock(seq, &st)); err != nil {
		return fmt.Errorf("superblock write sequence %d: %w", seq, err)
	}
	ObserveSync(SyncSuperblock, start)
	sb.sequence, sb.newest = seq, target
	return nil
}

// Sequence returns the sequence of the newest record (0 = none).
func (sb *Superblock) Sequence() uint64 {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.sequence
}

func encodeSuperblock(seq uint64, st *SuperblockState) []byte {
	le := binary.LittleEndian
	payloadLen := superblockPayloadBytes
	if len(st.ViewHeaders) > 0 {
		payloadLen = superblockViewHeadersAt + len(st.ViewHeaders)*viewHeaderBytes
	}
	b := make([]byte, superblockHeaderBytes+superblockPayloadBytes, superblockHeaderBytes+payloadLen+superblockTrailerBytes)
	le.PutUint32(b[0:], superblockMagic)
	le.PutUint16(b[4:], superblockVersion)
	if st.Amnesiac {
		le.PutUint16(b[6:], superblockFlagAmnesiac)
	}
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], 0) // parent_checksum
	le.PutUint32(b[24:], uint32(payloadLen))
	p := b[superblockHeaderBytes:]
	le.PutUint64(p[0:], st.Cluster.Lo)
	le.PutUint64(p[8:], st.Cluster.Hi)
	p[16] = st.ReplicaID
	p[17] = st.ReplicaCount
	le.PutUint32(p[18:], st.View)
	le.PutUint32(p[22:], st.LogView)
	le.PutUint64(p[26:], st.CommitMax)
	le.PutUint64(p[34:], st.CheckpointOp)
	le.PutUint64(p[42:], st.CheckpointChecksum.Lo)
	le.PutUint64(p[50:], st.CheckpointChecksum.Hi)
	le.PutUint64(p[58:], st.OffsetFrontier)
	le.PutUint64(p[66:], st.AnchorTimestamp)
	le.PutUint64(p[74:], st.AnchorChecksum)
	if len(st.ViewHeaders) > 0 {
		b = le.AppendUint16(b, uint16(len(st.ViewHeaders)))
		for i := range st.ViewHeaders {
			b = appendPrepare(b, &consensus.Prepare{Header: st.ViewHeaders[i]})
		}
	}
	return le.AppendUint64(b, xxh3.Hash(b))
}

func decodeSuperblock(b []byte) (uint64, *SuperblockState, error) {
	le := binary.LittleEndian
	if len(b) < superblockHeaderBytes+superblockTrailerBytes {
		return 0, nil, fmt.Errorf("%d bytes is shorter than header and trailer", len(b))
	}
	if m := le.Uint32(b); m != superblockMagic {
		return 0, nil, fmt.Errorf("bad magic %08x", m)
	}
	payloadLen := int(le.Uint32(b[24:]))
	if payloadLen > superblockPayloadBytesMax || len(b) != superblockHeaderBytes+payloadLen+superblockTrailerBytes {
		return 0, nil, fmt.Errorf("payload length %d does not fit the %d-byte record", payloadLen, len(b))
	}
	body := b[:len(b)-superblockTrailerBytes]
	if got, want := xxh3.Hash(body), le.Uint64(b[len(b)-superblockTrailerBytes:]); got != want {
		return 0, nil, fmt.Errorf("checksum mismatch (computed %016x, stored %016x)", got, want)
	}
	if v := le.Uint16(b[4:]); v != superblockVersion {
		return 0, nil, fmt.Errorf("unknown version %d", v)
	}
	flags := le.Uint16(b[6:])
	if flags&^superblockFlagAmnesiac != 0 {
		return 0, nil, fmt.Errorf("unknown flags %04x", flags)
	}
	switch {
	case payloadLen == superblockPayloadBytes, payloadLen == superblockFrontierPayload, payloadLen == superblockLegacyPayload:
	case payloadLen > superblockViewHeadersAt && (payloadLen-superblockViewHeadersAt)%viewHeaderBytes == 0:
	default:
		return 0, nil, fmt.Errorf("payload length %d is none of %d + n x %d (view headers), %d, %d (no anchors) or %d (legacy)",
			payloadLen, superblockViewHeadersAt, viewHeaderBytes, superblockPayloadBytes, superblockFrontierPayload, superblockLegacyPayload)
	}
	p := b[superblockHeaderBytes : superblockHeaderBytes+payloadLen]
	st := &SuperblockState{}
	st.Amnesiac = flags&superblockFlagAmnesiac != 0
	st.Cluster = consensus.Uint128{Lo: le.Uint64(p[0:]), Hi: le.Uint64(p[8:])}
	st.ReplicaID, st.ReplicaCount = p[16], p[17]
	st.View, st.LogView = le.Uint32(p[18:]), le.Uint32(p[22:])
	st.CommitMax, st.CheckpointOp = le.Uint64(p[26:]), le.Uint64(p[34:])
	st.CheckpointChecksum = consensus.Uint128{Lo: le.Uint64(p[42:]), Hi: le.Uint64(p[50:])}
	if payloadLen >= superblockFrontierPayload {
		st.OffsetFrontier = le.Uint64(p[58:])
	}
	if payloadLen >= superblockPayloadBytes {
		st.AnchorTimestamp, st.AnchorChecksum = le.Uint64(p[66:]), le.Uint64(p[74:])
	}
	if payloadLen > superblockViewHeadersAt {
		headers, err := decodeViewHeaders(p)
		if err != nil {
			return 0, nil, err
		}
		st.ViewHeaders = headers
	}
	if st.LogView > st.View {
		return 0, nil, fmt.Errorf("log_view %d above view %d", st.LogView, st.View)
	}
	return le.Uint64(b[8:]), st, nil
}

// decodeViewHeaders reads the view headers of a payload longer than the
// 84-byte prefix; the count must match the length and stay within
// consensus.ViewHeadersMax.
func decodeViewHeaders(p []byte) ([]consensus.PrepareHeader, error) {
	count := int(binary.LittleEndian.Uint16(p[82:]))
	if count == 0 || count > consensus.ViewHeadersMax {
		return nil, fmt.Errorf("view header count %d must be 1..%d", count, consensus.ViewHeadersMax)
	}
	if want := superblockViewHeadersAt + count*viewHeaderBytes; len(p) != want {
		return nil, fmt.Errorf("%d view headers need a %d-byte payload, have %d", count, want, len(p))
	}
	headers := make([]consensus.PrepareHeader, count)
	for i := range headers {
		at := superblockViewHeadersAt + i*viewHeaderBytes
		e, err := decodePrepare(p[at : at+viewHeaderBytes])
		if err != nil {
			return nil, fmt.Errorf("view header %d: %w", i, err)
		}
		headers[i] = e.Header
	}
	return headers, nil
}

// NextSequence is the sequence the group's next record takes, in its
// slots or in a SuperblockLog.
func (sb *Superblock) NextSequence() uint64 {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.sequence + 1
}

// NoteSequence records that a newer record of the group was made durable
// elsewhere (a SuperblockLog): the next slot write goes above it.
func (sb *Superblock) NoteSequence(seq uint64) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.sequence = max(sb.sequence, seq)
}
