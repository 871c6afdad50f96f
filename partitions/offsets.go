package partitions

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
	"github.com/zeebo/xxh3"
)

const (
	offsetsDirName         = "offsets"
	consumersDirName       = "consumers"
	groupsDirName          = "groups"
	offsetFileSize         = 16 // [offset u64][XXH3-64(offset LE) u64]
	corruptOffsetSuffix    = ".corrupt"
	offsetsPerPartitionMax = 1 << 20 // bound on consumers tracked per partition
)

// ErrConsumerOffsetNotFound is returned by DeleteConsumerOffset for a consumer without a stored
// offset; it matches wire.ErrConsumerOffsetNotFound (3021).
var ErrConsumerOffsetNotFound = wire.ErrConsumerOffsetNotFound

type offsetKey struct {
	kind wire.ConsumerKind
	id   uint32
}

// offsetStore keeps consumer and consumer-group offsets in memory and one file per consumer under
// offsets/consumers/<id> and offsets/groups/<id>.
type offsetStore struct {
	fs      vfs.FS
	dir     string
	durable bool
	logger  *slog.Logger
	// readOnly (the offline check): nothing is removed or renamed; findings go to note.
	readOnly bool
	note     func(string, ...any)

	mu      sync.Mutex
	offsets map[offsetKey]uint64
}

func (o *offsetStore) kindDir(kind wire.ConsumerKind) (string, error) {
	switch kind {
	case wire.ConsumerKindSingle:
		return filepath.Join(o.dir, offsetsDirName, consumersDirName), nil
	case wire.ConsumerKindGroup:
		return filepath.Join(o.dir, offsetsDirName, groupsDirName), nil
	}
	return "", fmt.Errorf("consumer kind %d is not 1 (consumer) or 2 (group)", kind)
}

// openOffsetStore loads every offset file. A file that is short, long or fails its checksum is renamed
// to <id>.corrupt with a warning and ignored, so one bad file never stops the partition.
func openOffsetStore(fsys vfs.FS, dir string, durable bool, logger *slog.Logger, readOnly bool,
	note func(string, ...any)) (*offsetStore, error) {
	o := &offsetStore{fs: fsys, dir: dir, durable: durable, logger: logger, offsets: map[offsetKey]uint64{}, readOnly: readOnly,
		note: note}
	for _, kind := range []wire.ConsumerKind{wire.ConsumerKindSingle, wire.ConsumerKindGroup} {
		kdir, _ := o.kindDir(kind)
		if !readOnly {
			if err := o.createKindDir(kdir); err != nil {
				return nil, err
			}
		}
		entries, err := o.fs.ReadDir(kdir)
		if readOnly && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list offsets directory %s: %w", kdir, err)
		}
		for _, e := range entries {
			if err := o.loadOffsetFile(kind, kdir, e.Name()); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

// createKindDir creates an offsets directory if it is missing, durably: the directories above it are
// synced too, or a power loss could take the directory, and every offset stored durably in it, away.
// When a sync fails the new directories are removed again, so the next open creates and syncs them
// rather than finding them present and trusting them.
func (o *offsetStore) createKindDir(kdir string) error {
	if _, err := o.fs.Stat(kdir); err == nil {
		return nil
	}
	top := filepath.Dir(kdir)
	_, topErr := o.fs.Stat(top)
	if err := o.fs.MkdirAll(kdir, 0o755); err != nil {
		return fmt.Errorf("create offsets directory %s: %w", kdir, err)
	}
	for _, parent := range []string{top, o.dir} {
		if err := syncDir(o.fs, parent); err != nil {
			o.fs.Remove(kdir)
			if topErr != nil {
				o.fs.Remove(top)
			}
			return fmt.Errorf("create offsets directory %s: %w", kdir, err)
		}
	}
	return nil
}

func (o *offsetStore) loadOffsetFile(kind wire.ConsumerKind, kdir, name string) error {
	path := filepath.Join(kdir, name)
	if strings.HasSuffix(name, ".tmp") {
		if o.readOnly {
			return nil
		}
		return o.fs.Remove(path) // an interrupted store: the previous value is intact
	}
	if strings.HasSuffix(name, corruptOffsetSuffix) {
		return nil
	}
	id, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		o.logger.Warn("ignoring unexpected file in offsets directory", "path", path)
		return nil
	}
	if len(o.offsets) >= offsetsPerPartitionMax {
		return fmt.Errorf("offsets directory %s holds more than %d consumers", kdir, offsetsPerPartitionMax)
	}
	data, err := o.fs.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read consumer offset %s: %w", path, err)
	}
	offset, ok := decodeOffsetFile(data)
	if !ok && o.readOnly {
		o.note("consumer offset %s is corrupt (%d bytes; renamed %s at open)", path, len(data), corruptOffsetSuffix)
		return nil
	}
	if !ok {
		o.logger.Warn("quarantining corrupt consumer offset file", "path", path, "bytes", len(data),
			"moved_to", path+corruptOffsetSuffix)
		if err := o.fs.Rename(path, path+corruptOffsetSuffix); err != nil {
			return fmt.Errorf("quarantine corrupt offset file %s: %w", path, err)
		}
		return nil
	}
	o.offsets[offsetKey{kind, uint32(id)}] = offset
	return nil
}

func encodeOffsetFile(offset uint64) []byte {
	b := make([]byte, offsetFileSize)
	binary.LittleEndian.PutUint64(b, offset)
	binary.LittleEndian.PutUint64(b[8:], xxh3.Hash(b[:8]))
	return b
}

func decodeOffsetFile(b []byte) (uint64, bool) {
	if len(b) != offsetFileSize || binary.LittleEndian.Uint64(b[8:]) != xxh3.Hash(b[:8]) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

func (o *offsetStore) store(kind wire.ConsumerKind, id uint32, offset uint64) error {
	kdir, err := o.kindDir(kind)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := offsetKey{kind, id}
	if _, exists := o.offsets[key]; !exists && len(o.offsets) >= offsetsPerPartitionMax {
		return fmt.Errorf("store consumer offset: partition already tracks %d consumers", offsetsPerPartitionMax)
	}
	path := filepath.Join(kdir, strconv.FormatUint(uint64(id), 10))
	if err := writeFileAtomic(o.fs, kdir, path, encodeOffsetFile(offset), o.durable); err != nil {
		return fmt.Errorf("store consumer offset: %w", err)
	}
	o.offsets[key] = offset
	return nil
}

func (o *offsetStore) get(kind wire.ConsumerKind, id uint32) (uint64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.offsets[offsetKey{kind, id}]
	return v, ok
}

// lowest returns the smallest stored offset of any consumer or consumer group (the retention
// barrier), and false when none is stored.
func (o *offsetStore) lowest() (uint64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var low uint64
	found := false
	for _, off := range o.offsets {
		if !found || off < low {
			low, found = off, true
		}
	}
	return low, found
}

func (o *offsetStore) remove(kind wire.ConsumerKind, id uint32) error {
	kdir, err := o.kindDir(kind)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := offsetKey{kind, id}
	if _, ok := o.offsets[key]; !ok {
		return fmt.Errorf("delete consumer offset of %d/%d: %w", kind, id, ErrConsumerOffsetNotFound)
	}
	path := filepath.Join(kdir, strconv.FormatUint(uint64(id), 10))
	if err := o.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete consumer offset %s: %w", path, err)
	}
	if o.durable {
		if err := syncDir(o.fs, kdir); err != nil {
			return err
		}
	}
	delete(o.offsets, key)
	return nil
}

// clear removes every stored offset (purge), durably whatever the offsets' durability: the purge
// itself is durable (the log restarts its offsets at 0), so an offset of the old generation that a
// power loss brought back would point into the new one and make its consumer skip messages.
func (o *offsetStore) clear() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	// Every offset file on disk, not only those in the map: a store whose directory sync failed
	// returned an error but left its file in place.
	for _, kind := range []wire.ConsumerKind{wire.ConsumerKindSingle, wire.ConsumerKindGroup} {
		kdir, _ := o.kindDir(kind)
		entries, err := o.fs.ReadDir(kdir)
		if err != nil {
			return fmt.Errorf("purge consumer offsets: list %s: %w", kdir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if _, err := strconv.ParseUint(name, 10, 32); err != nil && !strings.HasSuffix(name, ".tmp") {
				continue // a quarantined <id>.corrupt is kept for inspection
			}
			path := filepath.Join(kdir, name)
			if err := o.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("purge consumer offset %s: %w", path, err)
			}
		}
		// Synced even with nothing removed now: an earlier delete may not be durable yet.
		if err := syncDir(o.fs, kdir); err != nil {
			return err
		}
	}
	clear(o.offsets)
	return nil
}

// ConsumerOffsetEntry is one stored offset.
type ConsumerOffsetEntry struct {
	Kind   wire.ConsumerKind
	ID     uint32
	Offset uint64
}

// ConsumerOffsets lists every stored offset, ordered by kind then id (a deterministic encoding for
// checkpoints).
func (l *Log) ConsumerOffsets() []ConsumerOffsetEntry {
	o := l.offsets
	o.mu.Lock()
	out := make([]ConsumerOffsetEntry, 0, len(o.offsets))
	for k, v := range o.offsets {
		out = append(out, ConsumerOffsetEntry{Kind: k.kind, ID: k.id, Offset: v})
	}
	o.mu.Unlock()
	slices.SortFunc(out, func(a, b ConsumerOffsetEntry) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// StoreConsumerOffset persists the offset of a consumer (kind 1) or consumer group (kind 2), keyed by
// the numeric id the caller resolved. With Options.SyncOffsets the file and directory are synced before
// returning.
func (l *Log) StoreConsumerOffset(kind wire.ConsumerKind, id uint32, offset uint64) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	return l.offsets.store(kind, id, offset)
}

// ConsumerOffset returns the stored offset, if any.
func (l *Log) ConsumerOffset(kind wire.ConsumerKind, id uint32) (uint64, bool) {
	return l.offsets.get(kind, id)
}

// DeleteConsumerOffset removes a stored offset; ErrConsumerOffsetNotFound (3021) when there is none.
func (l *Log) DeleteConsumerOffset(kind wire.ConsumerKind, id uint32) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	return l.offsets.remove(kind, id)
}

func (l *Log) checkOpen() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}
