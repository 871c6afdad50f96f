package partitions

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lodestream/lodestream/journal"
	"github.com/lodestream/lodestream/vfs"
)

// The open-file cache (issue 15 point 8). A partition's segment files (the .log of every segment, the
// .index of the active one) used to stay open for the life of the log, so the descriptor limit bound
// the number of partitions (4,096 partitions needed 8,200 descriptors) and a node past it could not
// boot. Now every segment file is a CachedFile: a name, opened on demand and closed, least recently
// used first, when the cache holds FileCache.Max descriptors. A partition nobody uses holds none.
//
// Rules that keep it simple and deadlock-free:
//   - A descriptor is pinned only for one system call (ReadAt, WriteAt, Truncate, Sync, Stat) or
//     between Acquire and Release, and a caller never waits for a second pin while it holds one. A
//     caller that finds every descriptor pinned waits for one to be released, which then happens
//     without waiting on anything, so the wait ends.
//   - The cache never holds more than Max descriptors: a slot is handed from the victim to the
//     opener, and the victim is closed before the new file is opened.
//   - Opening fails cleanly: when the process is out of descriptors (EMFILE, ENFILE: connections took
//     them) the cache closes an idle file of its own and tries again, and answers the error when it
//     has none left to close. Reads and writes get the error; nothing is half-done.
//
// Sync state survives eviction. A file written since its last Sync is dirty. When the cache evicts a
// dirty file whose owner asked for it (SyncOnEvict, set for persisted topics), it fdatasyncs it
// before closing, and an error from that sync is kept and returned by the file's next Sync, so a
// persisted append whose bytes could not be made durable is never acknowledged. Other dirty files
// (replicated topics, which never promise the page cache survives a crash) are closed without a
// sync and stay dirty; their next Sync (a roll, Close) runs fdatasync on a newly opened descriptor.
// That relies on Linux semantics: fsync and fdatasync flush the inode's page cache whatever
// descriptor wrote the pages (vfs_fsync_range works on file->f_mapping, shared by every open of the
// inode), and since Linux 4.16 a writeback error no descriptor has seen yet is reported to a
// descriptor opened after it (errseq "report once"). No acknowledged persisted write depends on it.

// ErrFileCacheClosed is returned for a CachedFile that was closed (its segment deleted or its log
// closed).
var ErrFileCacheClosed = errors.New("partitions: cached file is closed")

// OpenFilesMin is the smallest bound a FileCache accepts: an operation pins at most one descriptor,
// but a cache of a handful thrashes.
const OpenFilesMin = 16

// FileCache bounds the descriptors held by the files registered with it. Safe for concurrent use; one
// cache is shared by every partition log of a node (Options.Files).
type FileCache struct {
	max    int
	logger *slog.Logger

	mu   sync.Mutex
	cond *sync.Cond // a slot, a pin or a file's busy state was released
	open int        // descriptors held, being opened or being closed (≤ max)
	lru  fileList   // open, unpinned, not busy; front = least recently used
	full bool       // the cache has reached max at least once (logged once)

	opens, evictions, evictionSyncs, waits, exhausted atomic.Uint64
}

// FileCacheStats are a cache's figures (metrics).
type FileCacheStats struct {
	Open          int    // descriptors held now
	Max           int    // the bound
	Opens         uint64 // files opened (first opens and reopens)
	Evictions     uint64 // idle files closed to make room
	EvictionSyncs uint64 // evicted files synced first (dirty, SyncOnEvict)
	Waits         uint64 // times a caller waited because every descriptor was pinned
	Exhausted     uint64 // opens that failed with EMFILE/ENFILE and retried after closing an idle file
}

// NewFileCache makes a cache of at most bound descriptors (at least OpenFilesMin). logger receives
// one line when the cache first fills (nil: slog.Default()).
func NewFileCache(bound int, logger *slog.Logger) *FileCache {
	if logger == nil {
		logger = slog.Default()
	}
	c := &FileCache{max: max(bound, OpenFilesMin), logger: logger}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Max is the cache's bound.
func (c *FileCache) Max() int { return c.max }

// Stats returns the cache's figures.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	open := c.open
	c.mu.Unlock()
	return FileCacheStats{Open: open, Max: c.max, Opens: c.opens.Load(), Evictions: c.evictions.Load(),
		EvictionSyncs: c.evictionSyncs.Load(), Waits: c.waits.Load(), Exhausted: c.exhausted.Load()}
}

// Register makes path (a file of fsys; nil: vfs.OS) a cached file without opening it: it is opened
// with flag (no O_CREATE, O_EXCL or O_TRUNC: the file must exist) when first used. This is the hook
// for any per-partition file that is not a segment (a prepare WAL, for instance): Register it, use
// ReadAt/WriteAt/Sync or Acquire/Release, Close it when done, and it shares the node's descriptor
// bound. The file system is per file, so one cache can serve logs on different file systems.
func (c *FileCache) Register(fsys vfs.FS, path string, flag int, syncOnEvict bool) *CachedFile {
	if fsys == nil {
		fsys = vfs.OS
	}
	return &CachedFile{c: c, fs: fsys, path: path, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC),
		syncOnEvict: syncOnEvict}
}

// Create opens path now with createFlag (O_CREATE, O_EXCL, O_TRUNC as needed), so creation errors
// surface at once, and keeps it as a cached file reopened later with createFlag minus those flags.
// The new file is not dirty: its directory entry is the caller's to sync (a directory fsync).
func (c *FileCache) Create(fsys vfs.FS, path string, createFlag int, perm os.FileMode, syncOnEvict bool) (*CachedFile, error) {
	h := c.Register(fsys, path, createFlag, syncOnEvict)
	if _, err := h.acquire(createFlag, perm); err != nil {
		return nil, err
	}
	h.release(false)
	return h, nil
}

// CachedFile is one file of a FileCache. Its methods are safe for concurrent use.
type CachedFile struct {
	c           *FileCache
	fs          vfs.FS
	path        string
	flag        int
	syncOnEvict bool

	// Under c.mu:
	f          vfs.File
	pins       int
	busy       bool // being opened or closed outside c.mu
	closed     bool
	dirty      bool  // written since the last Sync
	evictErr   error // a sync or close at eviction failed: returned by the next Sync
	prev, next *CachedFile
}

// Name is the file's path.
func (h *CachedFile) Name() string { return h.path }

// Acquire pins the file open and returns its descriptor, opening it (and closing the least recently
// used idle file when the cache is full) if needed. Release it after the call that uses it; do not
// Acquire another CachedFile before releasing this one.
func (h *CachedFile) Acquire() (vfs.File, error) { return h.acquire(h.flag, 0) }

// Release unpins a file Acquire returned; dirty says the caller wrote to it.
func (h *CachedFile) Release(dirty bool) { h.release(dirty) }

func (h *CachedFile) acquire(flag int, perm os.FileMode) (vfs.File, error) {
	c := h.c
	c.mu.Lock()
	for {
		switch {
		case h.closed:
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", h.path, ErrFileCacheClosed)
		case h.busy:
			c.cond.Wait()
			continue
		case h.f != nil:
			if h.pins == 0 {
				c.lru.remove(h)
			}
			h.pins++
			f := h.f
			c.mu.Unlock()
			return f, nil
		}
		if c.open < c.max {
			c.open++
			break
		}
		if !c.full {
			c.full = true
			c.logger.Info("open-file cache full: idle segment files are closed and reopened on demand",
				"open_files_max", c.max)
		}
		victim := c.lru.front()
		if victim == nil {
			c.waits.Add(1)
			c.cond.Wait() // every descriptor is pinned for one call: one is released soon
			continue
		}
		h.busy = true         // before c.mu is released: nobody else opens h meanwhile
		c.evictLocked(victim) // the victim's slot is ours now
		break
	}
	h.busy = true
	c.mu.Unlock()
	f, err := h.fs.OpenFile(h.path, flag, perm)
	for err != nil && isOutOfDescriptors(err) {
		// The process ran out of descriptors (connections, other files): close one of ours and retry.
		c.mu.Lock()
		victim := c.lru.front()
		if victim == nil {
			c.mu.Unlock()
			break
		}
		c.exhausted.Add(1)
		c.evictLocked(victim)
		c.open-- // the victim's slot is given up: the process needs it, not the cache
		c.mu.Unlock()
		f, err = h.fs.OpenFile(h.path, flag, perm)
	}
	c.mu.Lock()
	h.busy = false
	defer c.cond.Broadcast()
	defer c.mu.Unlock()
	if err != nil {
		c.open--
		return nil, err
	}
	if h.closed { // closed while opening: not possible for an owner that waits, kept for safety
		c.open--
		f.Close()
		return nil, fmt.Errorf("%s: %w", h.path, ErrFileCacheClosed)
	}
	c.opens.Add(1)
	h.f, h.pins = f, 1
	return f, nil
}

// evictLocked closes victim (idle, open) keeping its slot for the caller; c.mu is held on entry and
// on return but released while the victim is synced and closed.
func (c *FileCache) evictLocked(victim *CachedFile) {
	c.lru.remove(victim)
	victim.busy = true
	vf := victim.f
	victim.f = nil
	sync := victim.dirty && victim.syncOnEvict
	c.mu.Unlock()
	var err error
	if sync {
		start := time.Now()
		err = evictSync(vf)
		journal.ObserveSync(journal.SyncSegment, start)
		c.evictionSyncs.Add(1)
	}
	if cerr := vf.Close(); cerr != nil && err == nil {
		err = cerr
	}
	c.evictions.Add(1)
	c.mu.Lock()
	victim.busy = false
	if sync && err == nil {
		victim.dirty = false
	}
	if err != nil && victim.evictErr == nil {
		victim.evictErr = fmt.Errorf("sync or close of %s when the open-file cache evicted it: %w", victim.path, err)
		victim.dirty = true
	}
	c.cond.Broadcast()
}

func (h *CachedFile) release(dirty bool) {
	c := h.c
	c.mu.Lock()
	if dirty {
		h.dirty = true
	}
	h.pins--
	if h.pins == 0 {
		c.lru.pushBack(h)
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// ReadAt reads from the file at off (io.ReaderAt).
func (h *CachedFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := h.Acquire()
	if err != nil {
		return 0, err
	}
	n, err := f.ReadAt(b, off)
	h.release(false)
	return n, err
}

// WriteAt writes to the file at off (io.WriterAt); the file is dirty until its next Sync.
func (h *CachedFile) WriteAt(b []byte, off int64) (int, error) {
	f, err := h.Acquire()
	if err != nil {
		return 0, err
	}
	n, err := f.WriteAt(b, off)
	h.release(true)
	return n, err
}

// StartWriteback asks the file system to begin writing [off, off+n) to the device without waiting
// (vfs.Writebacker; a no-op on a file system without it). Nothing becomes durable by it.
func (h *CachedFile) StartWriteback(off, n int64) error {
	f, err := h.Acquire()
	if err != nil {
		return err
	}
	if w, ok := f.(vfs.Writebacker); ok {
		err = w.StartWriteback(off, n)
	}
	h.release(false)
	return err
}

// Truncate changes the file's size; the file is dirty until its next Sync.
func (h *CachedFile) Truncate(size int64) error {
	f, err := h.Acquire()
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	h.release(true)
	return err
}

// Stat returns the file's information.
func (h *CachedFile) Stat() (os.FileInfo, error) {
	f, err := h.Acquire()
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	h.release(false)
	return fi, err
}

// Sync makes the file durable (fdatasync), and returns any error a sync or close at eviction met
// since the last Sync (those bytes may not be durable).
func (h *CachedFile) Sync() error {
	f, err := h.Acquire()
	if err != nil {
		return err
	}
	c := h.c
	c.mu.Lock()
	evictErr := h.evictErr
	h.evictErr, h.dirty = nil, false
	c.mu.Unlock()
	err = datasync(f)
	c.mu.Lock()
	if err != nil || evictErr != nil {
		h.dirty = true
	}
	c.mu.Unlock()
	h.release(false)
	return errors.Join(evictErr, err)
}

// Close closes the descriptor if open and forgets the file; later calls answer ErrFileCacheClosed.
// It does not sync.
func (h *CachedFile) Close() error {
	c := h.c
	c.mu.Lock()
	for h.busy || h.pins > 0 {
		c.cond.Wait()
	}
	if h.closed {
		c.mu.Unlock()
		return nil
	}
	h.closed = true
	f := h.f
	h.f = nil
	if f != nil {
		c.lru.remove(h)
	}
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	err := f.Close()
	c.mu.Lock()
	c.open--
	c.cond.Broadcast()
	c.mu.Unlock()
	return err
}

// evictSync is the sync of an evicted dirty file (a variable so a test can make it fail).
var evictSync = datasync

func isOutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// fileList is an intrusive doubly linked list of cached files.
type fileList struct{ head, tail *CachedFile }

func (l *fileList) front() *CachedFile { return l.head }

func (l *fileList) pushBack(h *CachedFile) {
	h.prev, h.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = h
	} else {
		l.head = h
	}
	l.tail = h
}

func (l *fileList) remove(h *CachedFile) {
	if h.prev != nil {
		h.prev.next = h.next
	} else if l.head == h {
		l.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else if l.tail == h {
		l.tail = h.prev
	}
	h.prev, h.next = nil, nil
}

// openFilesLimitAssumed stands in for an unreadable RLIMIT_NOFILE (the common soft default).
const openFilesLimitAssumed = 1024

// AutoOpenFilesMax is the open-file bound derived from the descriptor limit (RLIMIT_NOFILE) when
// none is configured: the limit minus a reserve for everything else the process opens
// (connections, listeners, the metadata files, directory syncs and atomic replacements that hold a
// descriptor for one call): connectionsMax + 128, but at most half the limit, and never below
// OpenFilesMin.
func AutoOpenFilesMax(limit, connectionsMax uint64) int {
	if limit == 0 {
		limit = openFilesLimitAssumed
	}
	reserve := min(connectionsMax+128, limit/2)
	return int(max(min(limit-reserve, 1<<30), OpenFilesMin))
}

// sharedFiles is the cache of logs opened without Options.Files (tools, tests).
var sharedFiles = sync.OnceValue(func() *FileCache {
	limit, _ := OpenFilesLimit()
	return NewFileCache(AutoOpenFilesMax(limit, 4096), nil)
})

// SharedFileCache is the process-wide cache logs opened without Options.Files use.
func SharedFileCache() *FileCache { return sharedFiles() }
