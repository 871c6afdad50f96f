package partitions

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/wire"
)

// Defaults for Options fields left zero.
const (
	DefaultSegmentSizeBytes   = 1 << 30 // upstream topic default segment_size (1 GiB)
	DefaultIndexIntervalBytes = 4 << 10 // one sparse index entry per 4 KiB of log
	// DefaultPollBytesMax keeps a poll reply inside one 64 MiB frame: frame header (256) and the 16-byte
	// reply prefix are subtracted.
	DefaultPollBytesMax = wire.BatchFrameBytesMax - 256 - wire.PollMessagesReplyPrefixSize

	segmentSizeBytesMin   = 4 << 10 // tests use small segments; the topic validator enforces ≥ 1 MiB
	indexIntervalBytesMin = 1
)

// Options configures one partition log.
type Options struct {
	// SegmentSizeBytes is the roll threshold: the active segment is sealed and a new one started once
	// it holds at least this many bytes (it may overshoot by one batch). Default 1 GiB.
	SegmentSizeBytes uint64
	// IndexIntervalBytes is the spacing of sparse index entries: a batch gets an entry when it is the
	// first of its segment or starts at least this many bytes after the last indexed batch.
	IndexIntervalBytes uint64
	// PollBytesMax bounds the record bytes of one poll answer. Default fits a 64 MiB reply frame.
	PollBytesMax uint64
	// WritebackBytes: once the active segment holds this many bytes appended since the last time,
	// Append asks the kernel to begin writing them to the device without waiting (sync_file_range,
	// vfs.Writebacker), so the next Sync, a cluster checkpoint's or a persisted barrier's, finds
	// little left to write. A hint: nothing becomes durable by it. 0: never.
	WritebackBytes uint64
	// SyncOffsets makes consumer-offset writes durable (fsync of the file and the directory) before
	// Store/Delete return: consumer_offset_durability = persisted.
	SyncOffsets bool
	// Logger receives recovery warnings and quarantine errors. Default slog.Default().
	Logger *slog.Logger
	// ServeAroundDamage: damage Open finds that is not a torn tail (a damaged range inside a segment,
	// a sealed segment damaged to its end, offsets missing between segments) is set apart as a refused
	// range (polls over it answer ErrCorrupt) and the rest of the log is served, instead of the whole
	// partition being quarantined. A single node sets it (it has no peer to refill from).
	ServeAroundDamage bool
	// ServeAroundSealedDamage: the same for damage inside a sealed segment (synced when it was sealed,
	// so never a torn write: rot) and for a damaged batch of the active segment below SyncedBelow whose
	// extent is known. Other damage in the active segment, which may be unsynced writes a power loss
	// tore, and gaps between segments are quarantined as without it. A cluster replica sets
	// it: it repairs a set-apart batch with a peer's copy (RepairBatch, node/partition_repair.go), and
	// sets quarantined damage aside to refill it by state transfer.
	ServeAroundSealedDamage bool
	// SyncedBelow: every batch starting below this offset was synced (a cluster replica of a
	// persisted topic: the frontier its last checkpoint's superblock records). Damage to such a batch
	// is corruption, reported as a QuarantineError, never cut as a torn tail. 0: unknown.
	SyncedBelow uint64
	// ReadOnly opens for inspection (the offline check): nothing on disk is changed — torn tails,
	// index mismatches, stale files and corrupt offset files are only listed in Findings — and the
	// log refuses writes.
	ReadOnly bool
	// AckBeforeSync: the log's batches are acknowledged before they are synced (a single node's
	// durability = replicated topic: page cache only). After the machine rebooted, damage in the
	// active segment at or above the synced frontier (offsets.reserved records it) is then an
	// unsynced tail that the power loss tore, holes included: it is cut, never refused as
	// corruption. Its offsets stay reserved, never re-issued. Needs ReserveOffsets.
	AckBeforeSync bool
	// RollFullAtOpen: a log reopened with a full active segment rolls at once, as the append
	// that filled it did (a cluster replica: the empty segment that roll created may have been
	// lost with the page cache, and its files must stay its peers'). Otherwise the next append
	// rolls it.
	RollFullAtOpen bool
	// DeferRoll: Append leaves a segment it filled active, and the caller rolls it with Roll, off
	// its loop (roll.go): the sealing fdatasync then never stalls the caller's loop. Until it does,
	// RollDue reports it and Stats counts the segment the roll starts; an Append before it rolls
	// first, as after a failed roll.
	DeferRoll bool
	// ReserveOffsets reserves offsets durably ahead of use so a restart resumes above every offset ever
	// handed out, whatever a crash lost (reserve.go). A single node sets it; a cluster replica's
	// offsets come from its group's log instead.
	ReserveOffsets bool
	// StageUnsealed: staged batches (stage.go) are written with batch_length zero and sealed
	// when Append adopts them, so a batch staged and never adopted reads after a crash as a torn
	// tail (cut), never as applied data. For a log whose caller has nothing else to tell staged
	// bytes from applied ones (a single node: no prepare WAL); a cluster replica's staged batches
	// stay sealed, since its prepare WAL's references are resolved from them.
	StageUnsealed bool
	// Files is the open-file cache the log's segment files go through (filecache.go): shared by every
	// log of a node so their descriptors stay under one bound. nil: SharedFileCache().
	Files *FileCache
	// FS is the file system every file of the log goes through: segments and indexes (through
	// Files), consumer offsets, offsets.reserved, lost-offset markers, the boot id, recovery,
	// retention and salvage. nil: vfs.OS. A vfs.Mem runs the log on a simulated disk.
	FS vfs.FS
	// SyncOnEvict: the cache fdatasyncs a segment file written since the last Sync before it closes
	// it (persisted topics), and the next Sync reports that sync's error.
	SyncOnEvict bool
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentSizeBytes == 0 {
		o.SegmentSizeBytes = DefaultSegmentSizeBytes
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.PollBytesMax == 0 {
		o.PollBytesMax = DefaultPollBytesMax
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.Files == nil {
		o.Files = SharedFileCache()
	}
	if o.SegmentSizeBytes < segmentSizeBytesMin {
		return o, fmt.Errorf("partition options: segment size %d bytes is below the %d-byte minimum",
			o.SegmentSizeBytes, segmentSizeBytesMin)
	}
	if o.IndexIntervalBytes < indexIntervalBytesMin {
		return o, errors.New("partition options: index interval must be at least 1 byte")
	}
	if o.PollBytesMax < wire.BatchHeaderSize+wire.BatchMessageHeaderSize+1 {
		return o, fmt.Errorf("partition options: poll bytes max %d cannot hold one message", o.PollBytesMax)
	}
	return o, nil
}
