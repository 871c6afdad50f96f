package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/zeebo/xxh3"
)

// snapshot.bin layout (little-endian):
//
//	op u64 | checksum u64 (XXH3-64 of data, = consensus.Snapshot.Checksum) |
//	data_len u64 | data | trailer: magic u32 "ISNP" | XXH3-128 of all
//	preceding bytes (lo u64, hi u64)
const (
	snapshotFileName            = "snapshot.bin"
	snapshotFileMagic    uint32 = 0x504E5349 // "ISNP"
	snapshotFileHead            = 24
	snapshotFileTrailer         = 20
	SnapshotFileBytesMax        = 1 << 30
)

// WriteSnapshot durably replaces dir/snapshot.bin with s (tmp → fsync →
// rename → dir fsync). s.Checksum must be XXH3-64 of s.Data.
func WriteSnapshot(dir string, s consensus.Snapshot, opts ...Option) error {
	fsys := fsOf(opts)
	if got := xxh3.Hash(s.Data); got != s.Checksum {
		return fmt.Errorf("write snapshot op %d: checksum field %016x does not match data %016x", s.Op, s.Checksum, got)
	}
	if len(s.Data)+snapshotFileHead+snapshotFileTrailer > SnapshotFileBytesMax {
		return fmt.Errorf("write snapshot op %d: %d bytes above the %d-byte bound", s.Op, len(s.Data), SnapshotFileBytesMax)
	}
	if err := ensureDir(fsys, dir); err != nil {
		return err
	}
	le := binary.LittleEndian
	b := make([]byte, 0, snapshotFileHead+len(s.Data)+snapshotFileTrailer)
	b = le.AppendUint64(b, s.Op)
	b = le.AppendUint64(b, s.Checksum)
	b = le.AppendUint64(b, uint64(len(s.Data)))
	b = append(b, s.Data...)
	b = le.AppendUint32(b, snapshotFileMagic)
	sum := xxh3.Hash128(b)
	b = le.AppendUint64(b, sum.Lo)
	b = le.AppendUint64(b, sum.Hi)
	defer ObserveSync(SyncSnapshot, time.Now())
	if err := replaceFile(fsys, filepath.Join(dir, snapshotFileName), b); err != nil {
		return fmt.Errorf("write snapshot op %d: %w", s.Op, err)
	}
	return nil
}

// ErrSnapshotDamaged marks a snapshot file that fails verification.
var ErrSnapshotDamaged = errors.New("snapshot damaged")

// ReadSnapshot loads dir/snapshot.bin; nil, nil when none exists. Any
// verification failure is an error (the caller refuses to boot).
func ReadSnapshot(dir string, opts ...Option) (*consensus.Snapshot, error) {
	return readSnapshot(fsOf(opts), dir)
}

func readSnapshot(fsys vfs.FS, dir string) (*consensus.Snapshot, error) {
	path := filepath.Join(dir, snapshotFileName)
	st, err := fsys.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Size() > SnapshotFileBytesMax {
		return nil, fmt.Errorf("%s is %d bytes, above the %d-byte bound", path, st.Size(), SnapshotFileBytesMax)
	}
	b, err := fsys.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	snap, err := decodeSnapshotFile(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSnapshotDamaged, path, err)
	}
	return snap, nil
}

func decodeSnapshotFile(b []byte) (*consensus.Snapshot, error) {
	le := binary.LittleEndian
	if len(b) < snapshotFileHead+snapshotFileTrailer {
		return nil, fmt.Errorf("%d bytes is shorter than header and trailer", len(b))
	}
	tr := b[len(b)-snapshotFileTrailer:]
	if m := le.Uint32(tr); m != snapshotFileMagic {
		return nil, fmt.Errorf("bad trailer magic %08x", m)
	}
	sum := xxh3.Hash128(b[:len(b)-16])
	if sum.Lo != le.Uint64(tr[4:]) || sum.Hi != le.Uint64(tr[12:]) {
		return nil, errors.New("trailer checksum mismatch")
	}
	dataLen := le.Uint64(b[16:])
	if dataLen != uint64(len(b)-snapshotFileHead-snapshotFileTrailer) {
		return nil, fmt.Errorf("data length %d does not match file size %d", dataLen, len(b))
	}
	data := append([]byte(nil), b[snapshotFileHead:snapshotFileHead+int(dataLen)]...)
	s := &consensus.Snapshot{Op: le.Uint64(b[0:]), Checksum: le.Uint64(b[8:]), Data: data}
	if xxh3.Hash(data) != s.Checksum {
		return nil, errors.New("data checksum mismatch")
	}
	return s, nil
}
