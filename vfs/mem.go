package vfs

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultSectorSize is the granularity of torn writes.
const DefaultSectorSize = 512

// CrashModel says what a power loss does to unsynced file operations.
type CrashModel struct {
	// Keep and Torn are the probabilities that one unsynced write
	// survives whole or torn (a truncation is kept with Keep+Torn); the
	// rest are lost. Without Ordered, each operation is drawn on its own.
	Keep, Torn float64
	// Ordered: the unsynced operations of all files survive as a prefix
	// in the order they were made (a uniform length), and the first one
	// after that prefix is torn with probability Torn (a prefix of its
	// sectors): a torn tail, never a hole.
	Ordered bool
}

// DefaultCrashModel keeps, tears or loses each unsynced write with equal
// probability, independently.
var DefaultCrashModel = CrashModel{Keep: 1.0 / 3, Torn: 1.0 / 3}

// Faults are per-call fault probabilities drawn from the seed (0: never).
type Faults struct {
	SyncFail    float64 // a Sync, Datasync or SyncDir fails with EIO
	NoSpace     float64 // a write or growing truncation fails with ENOSPC, writing nothing
	CorruptRead float64 // a read first flips one stored byte of the range it reads
}

// MemStats counts what Mem did; tests use it to prove faults ran.
type MemStats struct {
	Crashes                            int
	WritesKept, WritesTorn, WritesLost int // unsynced writes at crashes and failed syncs
	DirOpsKept, DirOpsLost             int // undurable directory operations at crashes
	SyncFailures                       int
	NoSpace                            int // writes refused or cut short with ENOSPC
	Flips                              int // stored bytes flipped (FlipByte, CorruptRead)
}

// Mem is an in-memory file system with power-loss and fault simulation
// (see the package documentation for the model). Paths are slash
// separated; a relative path is taken from the root "/".
type Mem struct {
	mu       sync.Mutex
	rng      *rand.Rand
	sector   int64
	crash    CrashModel
	faults   Faults
	capacity int64 // 0: unlimited
	used     int64 // bytes of current content of live files
	names    map[string]*inode
	// children indexes names by parent directory (ReadDir lists a
	// directory without a pass over every name: the simulators' disks
	// hold tens of thousands); kept with names.
	children nameIndex
	durable  map[string]*inode // the namespace after a crash with no undurable operation kept
	dirOps   []dirOp           // undurable directory operations, oldest first
	gen      uint64            // Crash increments it: older handles are stale
	powerIn  int               // operations left before the power fails (-1: never)
	off      bool              // the power failed: every operation fails until Crash
	// killTears: the cut is a process's death (KillAfter): a write it
	// lands in keeps a prefix of whole pages. cutNow: the operation being
	// counted is the one the cut landed in.
	killTears, cutNow bool
	seq               uint64 // global order of data operations
	nextIno           uint64
	stats             MemStats
}

type inode struct {
	ino       uint64
	dir       bool
	perm      fs.FileMode
	data      []byte   // current content
	durable   []byte   // durable content
	pending   []dataOp // unsynced operations: durable + pending = data (unless a sync failed)
	nlink     int      // names in the current namespace
	open      int      // open handles
	failSyncs int      // explicit sync failures to inject
}

// dataOp is an unsynced write (data != nil or a zero-length write) or
// truncation.
type dataOp struct {
	seq      uint64
	truncate bool
	off      int64 // write offset, or truncation size
	data     []byte
}

const (
	opLink = iota
	opUnlink
	opRename
)

type dirOp struct {
	kind    int
	path    string // link, unlink: the name; rename: the old name
	newpath string // rename
	ino     *inode
}

// NewMem returns an empty file system (just "/") whose every random
// choice comes from seed, with DefaultCrashModel, 512-byte sectors, no
// capacity bound and no random faults.
func NewMem(seed uint64) *Mem {
	root := &inode{ino: 1, dir: true, perm: 0o755, nlink: 1}
	return &Mem{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)),
		sector:   DefaultSectorSize,
		crash:    DefaultCrashModel,
		names:    map[string]*inode{"/": root},
		children: nameIndex{},
		durable:  map[string]*inode{"/": root},
		nextIno:  2,
		powerIn:  -1,
	}
}

// PowerOffAfter makes the power fail after n more operations (n = 0: at
// the next one): from then on every operation of the file system and its
// files fails with ErrPoweredOff, changing nothing, until Crash resolves
// the power loss. A negative n cancels. So a crash can land inside a
// caller's sequence of writes, syncs and renames.
func (m *Mem) PowerOffAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.powerIn, m.killTears = n, false
}

// KillAfter is PowerOffAfter for a process killed (SIGKILL) inside its
// file operations, to be resolved by ProcessDied: a write the cut lands in
// keeps a prefix that ends at a page boundary of the file (none, some,
// never all), as a write(2) interrupted by a fatal signal returns short.
func (m *Mem) KillAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.powerIn, m.killTears = n, true
}

// memPageBytes is the page size a killed write stops at a boundary of.
const memPageBytes = 4096

// killedWriteLocked writes the prefix of p a write that a KillAfter cut
// landed in keeps, and returns its length: it ends at a page boundary of
// the file (the kernel copies page by page and checks for a fatal signal
// between pages), before the end of p.
func (m *Mem) killedWriteLocked(ino *inode, off int64, p []byte) int {
	if !m.killTears || !m.cutNow || len(p) == 0 {
		return 0
	}
	first := memPageBytes - off%memPageBytes // bytes to the first boundary
	if first >= int64(len(p)) {
		return 0
	}
	boundaries := 1 + (int64(len(p))-1-first)/memPageBytes // boundaries inside p
	k := m.rng.Int64N(boundaries + 1)                      // 0: none of it
	if k == 0 {
		return 0
	}
	n, _ := m.writeLocked(ino, off, p[:first+(k-1)*memPageBytes])
	return n
}

// PoweredOff reports whether the power failed (PowerOffAfter) and Crash
// has not run since.
func (m *Mem) PoweredOff() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.off
}

// powerLocked counts one operation against PowerOffAfter; an error once
// the power failed.
func (m *Mem) powerLocked(op, name string) error {
	m.cutNow = false
	if !m.off && m.powerIn >= 0 {
		if m.powerIn == 0 {
			m.off, m.cutNow = true, true
		}
		m.powerIn--
	}
	if m.off {
		return perr(op, name, ErrPoweredOff)
	}
	return nil
}

// SetCrashModel sets what Crash (and a failed fsync) does to unsynced writes.
func (m *Mem) SetCrashModel(c CrashModel) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crash = c
}

// SetSectorSize sets the torn-write granularity (at least 1).
func (m *Mem) SetSectorSize(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sector = int64(max(n, 1))
}

// SetFaults sets the per-call fault probabilities.
func (m *Mem) SetFaults(f Faults) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = f
}

// SetCapacity bounds the bytes the files hold (0: unlimited). Lowering it
// below what is held makes every growing write fail until space is freed.
func (m *Mem) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = bytes
}

// Used returns the bytes the live files hold (current content).
func (m *Mem) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Stats returns the fault and crash counters.
func (m *Mem) Stats() MemStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Pending returns how many unsynced data operations (over live files) and
// undurable directory operations there are.
func (m *Mem) Pending() (data, dir int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ino := range m.liveInodesLocked(m.names) {
		data += len(ino.pending)
	}
	return data, len(m.dirOps)
}

// Unsynced returns how many unsynced data operations the named file has
// (0 when it does not exist).
func (m *Mem) Unsynced(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ino := m.names[clean(name)]; ino != nil {
		return len(ino.pending)
	}
	return 0
}

// UnsyncedFiles lists, sorted, every path a file with unsynced data
// operations may hold after a crash: its current name, its durable one,
// and names of undurable directory operations (so a removed file whose
// removal is not durable is listed too).
func (m *Mem) UnsyncedFiles() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for _, ns := range []map[string]*inode{m.names, m.durable} {
		for p, ino := range ns {
			if len(ino.pending) > 0 {
				set[p] = true
			}
		}
	}
	for _, op := range m.dirOps {
		if len(op.ino.pending) > 0 {
			set[op.path] = true
			if op.kind == opRename {
				set[op.newpath] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// InjectSyncFailure makes the next Sync or Datasync of the named file, or
// SyncDir of the named directory, fail with EIO.
func (m *Mem) InjectSyncFailure(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	ino := m.names[name]
	if ino == nil {
		return perr("inject", name, syscall.ENOENT)
	}
	ino.failSyncs++
	return nil
}

// FlipByte flips the stored byte at off of the named file (its current
// and, where it holds that byte, its durable content): bit rot.
func (m *Mem) FlipByte(name string, off int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	ino := m.names[name]
	switch {
	case ino == nil:
		return perr("flip", name, syscall.ENOENT)
	case ino.dir:
		return perr("flip", name, syscall.EISDIR)
	case off < 0 || off >= int64(len(ino.data)):
		return perr("flip", name, syscall.EINVAL)
	}
	m.flipLocked(ino, off, 0xFF)
	return nil
}

// FlipRandomByte flips one stored byte of a file chosen by the PRNG
// (among non-empty files, in path order) and says which; ok is false when
// every file is empty.
func (m *Mem) FlipRandomByte() (name string, off int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var files []string
	for _, p := range sortedKeys(m.names) {
		if ino := m.names[p]; !ino.dir && len(ino.data) > 0 {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		return "", 0, false
	}
	name = files[m.rng.IntN(len(files))]
	ino := m.names[name]
	off = m.rng.Int64N(int64(len(ino.data)))
	m.flipLocked(ino, off, byte(1+m.rng.IntN(255)))
	return name, off, true
}

func (m *Mem) flipLocked(ino *inode, off int64, mask byte) {
	ino.data[off] ^= mask
	if off < int64(len(ino.durable)) {
		ino.durable[off] ^= mask
	}
	m.stats.Flips++
}

// chance draws from the PRNG only when p > 0, so faults that are off do
// not shift the draws of anything else.
func (m *Mem) chance(p float64) bool {
	return p > 0 && m.rng.Float64() < p
}

func clean(name string) string {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return path.Clean(name)
}

// parentDir is path.Dir for the absolute, clean paths Mem keeps (clean),
// without path.Clean's copy: SyncDir compares it for every pending op.
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func perr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func sortedKeys(ns map[string]*inode) []string {
	keys := make([]string, 0, len(ns))
	for k := range ns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// liveInodesLocked lists the distinct inodes of a namespace in path order.
func (m *Mem) liveInodesLocked(ns map[string]*inode) []*inode {
	seen := make(map[uint64]bool, len(ns))
	var out []*inode
	for _, p := range sortedKeys(ns) {
		if ino := ns[p]; !seen[ino.ino] {
			seen[ino.ino] = true
			out = append(out, ino)
		}
	}
	return out
}

// missing is the error for a cleaned name that does not exist: ENOTDIR
// when an ancestor is a file, as the kernel's path walk says, else ENOENT.
func (m *Mem) missing(p string) syscall.Errno {
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if ino := m.names[d]; ino != nil {
			if !ino.dir {
				return syscall.ENOTDIR
			}
			break
		}
	}
	return syscall.ENOENT
}

// lookupParent checks that name's parent directory exists.
func (m *Mem) lookupParent(op, name string) error {
	dir := path.Dir(name)
	p := m.names[dir]
	if p == nil {
		return perr(op, name, m.missing(dir))
	}
	if !p.dir {
		return perr(op, name, syscall.ENOTDIR)
	}
	return nil
}

func (m *Mem) hasChildren(ns map[string]*inode, dir string) bool {
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	for k := range ns {
		if k != dir && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func (m *Mem) newInode(dir bool, perm fs.FileMode) *inode {
	ino := &inode{ino: m.nextIno, dir: dir, perm: perm.Perm()}
	m.nextIno++
	return ino
}

// releaseIfDead frees the bytes of a file with no name and no handle.
func (m *Mem) releaseIfDead(ino *inode) {
	if ino.nlink == 0 && ino.open == 0 && !ino.dir {
		m.used -= int64(len(ino.data))
	}
}

// OpenFile implements FS.
func (m *Mem) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	orig := name
	if err := m.powerLocked("open", name); err != nil {
		return nil, err
	}
	name = clean(name)
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &memFile{m: m, name: orig, path: name, gen: m.gen,
		read: acc != os.O_WRONLY, write: acc != os.O_RDONLY, append: flag&os.O_APPEND != 0}
	ino := m.names[name]
	switch {
	case ino == nil:
		if flag&os.O_CREATE == 0 {
			return nil, perr("open", orig, m.missing(name))
		}
		if err := m.lookupParent("open", name); err != nil {
			return nil, err
		}
		ino = m.newInode(false, perm)
		ino.nlink = 1
		m.names[name] = ino
		m.children.add(name)
		m.dirOps = append(m.dirOps, dirOp{kind: opLink, path: name, ino: ino})
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, perr("open", orig, syscall.EEXIST)
	case ino.dir && f.write:
		return nil, perr("open", orig, syscall.EISDIR)
	}
	f.ino = ino
	ino.open++
	if flag&os.O_TRUNC != 0 && f.write && !ino.dir {
		m.truncateLocked(ino, 0)
	}
	return f, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

// ReadFile implements FS.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("open", name); err != nil {
		return nil, err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		return nil, perr("open", name, m.missing(p))
	case ino.dir:
		return nil, perr("read", name, syscall.EISDIR)
	}
	m.maybeCorruptLocked(ino, 0, int64(len(ino.data)))
	return append([]byte(nil), ino.data...), nil
}

func (m *Mem) maybeCorruptLocked(ino *inode, off, n int64) {
	n = min(n, int64(len(ino.data))-off)
	if n > 0 && m.chance(m.faults.CorruptRead) {
		m.flipLocked(ino, off+m.rng.Int64N(n), byte(1+m.rng.IntN(255)))
	}
}

// Rename implements FS: atomic, replacing a file at newpath (never a
// directory, as os.Rename); durable after SyncDir of either parent.
func (m *Mem) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, n := clean(oldpath), clean(newpath)
	lerr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err} }
	if m.powerLocked("rename", oldpath) != nil {
		return lerr(ErrPoweredOff)
	}
	// The kernel resolves both parents first, then the old name; os.Rename
	// refuses an existing directory as the new name before that.
	for _, p := range []string{o, n} {
		if err := m.lookupParent("rename", p); p != "/" && err != nil {
			return lerr(err.(*fs.PathError).Err)
		}
	}
	ino := m.names[o]
	if old := m.names[n]; old != nil && old.dir && ino != nil {
		return lerr(syscall.EEXIST)
	}
	if ino == nil {
		return lerr(syscall.ENOENT)
	}
	if o == n {
		return nil
	}
	if o == "/" || strings.HasPrefix(n, o+"/") {
		return lerr(syscall.EINVAL)
	}
	if old := m.names[n]; old != nil {
		if ino.dir {
			return lerr(syscall.ENOTDIR)
		}
		old.nlink--
		m.releaseIfDead(old)
	}
	renameIn(m.names, o, n, ino, m.children.move)
	m.dirOps = append(m.dirOps, dirOp{kind: opRename, path: o, newpath: n, ino: ino})
	return nil
}

// renameIn moves ino from o to n in ns (with its subtree, for a
// directory); ns[o] is removed only if it still names ino. moved, if not
// nil, hears of each name that left (to "" when none replaces it) or came.
func renameIn(ns map[string]*inode, o, n string, ino *inode, moved func(from, to string)) {
	if ino.dir {
		prefix := o + "/"
		var sub []string
		for k := range ns {
			if strings.HasPrefix(k, prefix) {
				sub = append(sub, k)
			}
		}
		sort.Strings(sub)
		for _, k := range sub {
			to := n + "/" + strings.TrimPrefix(k, prefix)
			ns[to] = ns[k]
			delete(ns, k)
			if moved != nil {
				moved(k, to)
			}
		}
	}
	from := ""
	if ns[o] == ino {
		delete(ns, o)
		from = o
	}
	ns[n] = ino
	if moved != nil {
		moved(from, n)
	}
}

// Remove implements FS: a file, or an empty directory.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("remove", name); err != nil {
		return err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		return perr("remove", name, m.missing(p))
	case p == "/":
		return perr("remove", name, syscall.EBUSY)
	case ino.dir && m.hasChildren(m.names, p):
		return perr("remove", name, syscall.ENOTEMPTY)
	}
	delete(m.names, p)
	m.children.remove(p)
	ino.nlink--
	m.releaseIfDead(ino)
	m.dirOps = append(m.dirOps, dirOp{kind: opUnlink, path: p, ino: ino})
	return nil
}

// RemoveAll implements FS: every entry under name, deepest first, then
// name itself, each an unlink in the parent's undurable operations (so a
// crash keeps a prefix: children go before their directory).
func (m *Mem) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("removeall", name); err != nil {
		return err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		if errno := m.missing(p); errno != syscall.ENOENT {
			return perr("removeall", name, errno)
		}
		return nil
	case p == "/":
		return perr("removeall", name, syscall.EBUSY)
	}
	prefix := p + "/"
	var doomed []string
	for k := range m.names {
		if k == p || strings.HasPrefix(k, prefix) {
			doomed = append(doomed, k)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(doomed))) // a child sorts after its directory
	for _, k := range doomed {
		victim := m.names[k]
		delete(m.names, k)
		m.children.remove(k)
		victim.nlink--
		m.releaseIfDead(victim)
		m.dirOps = append(m.dirOps, dirOp{kind: opUnlink, path: k, ino: victim})
	}
	return nil
}

// Truncate implements FS.
func (m *Mem) Truncate(name string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("truncate", name); err != nil {
		return err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		return perr("truncate", name, m.missing(p))
	case ino.dir:
		return perr("truncate", name, syscall.EISDIR)
	case size < 0:
		return perr("truncate", name, syscall.EINVAL)
	}
	if err := m.truncateLocked(ino, size); err != nil {
		return perr("truncate", name, err)
	}
	return nil
}

// MkdirAll implements FS.
func (m *Mem) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("mkdir", name); err != nil {
		return err
	}
	p := clean(name)
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		if ino := m.names[cur]; ino != nil {
			if !ino.dir {
				return perr("mkdir", cur, syscall.ENOTDIR)
			}
			continue
		}
		ino := m.newInode(true, perm)
		ino.nlink = 1
		m.names[cur] = ino
		m.children.add(cur)
		m.dirOps = append(m.dirOps, dirOp{kind: opLink, path: cur, ino: ino})
	}
	return nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("open", name); err != nil {
		return nil, err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		return nil, perr("open", name, m.missing(p))
	case !ino.dir:
		return nil, perr("readdirent", name, syscall.ENOTDIR)
	}
	// Children first, then sort: the names share the prefix p, so their
	// order is their base names' order.
	children := make([]string, 0, len(m.children[p]))
	for k := range m.children[p] {
		children = append(children, k)
	}
	sort.Strings(children)
	var out []fs.DirEntry
	for _, k := range children {
		out = append(out, fs.FileInfoToDirEntry(infoOf(path.Base(k), m.names[k])))
	}
	return out, nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("stat", name); err != nil {
		return nil, err
	}
	p := clean(name)
	ino := m.names[p]
	if ino == nil {
		return nil, perr("stat", name, m.missing(p))
	}
	return infoOf(path.Base(p), ino), nil
}

// SyncDir implements FS: the directory's undurable entries become durable
// (they are applied to the durable namespace, in their order).
func (m *Mem) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.powerLocked("sync", name); err != nil {
		return err
	}
	p := clean(name)
	ino := m.names[p]
	switch {
	case ino == nil:
		return perr("open", name, m.missing(p))
	case !ino.dir:
		return perr("sync", name, syscall.ENOTDIR)
	}
	return m.syncDirLocked(p, name, ino)
}

func (m *Mem) syncDirLocked(p, name string, ino *inode) error {
	if m.syncFails(ino) {
		return perr("sync", name, syscall.EIO)
	}
	kept := m.dirOps[:0]
	for _, op := range m.dirOps {
		if parentDir(op.path) == p || (op.kind == opRename && parentDir(op.newpath) == p) {
			applyDirOp(m.durable, op)
			if op.kind == opRename && op.ino.dir {
				// The entries made in the directory before it moved and
				// not yet durable are entries of that directory, wherever
				// it is now (a directory of the old name created later
				// must not receive them after a crash).
				movePendingUnder(kept, op.path, op.newpath)
			}
			continue
		}
		kept = append(kept, op)
	}
	clear(m.dirOps[len(kept):])
	m.dirOps = kept
	return nil
}

func (m *Mem) syncFails(ino *inode) bool {
	if ino.failSyncs > 0 {
		ino.failSyncs--
		m.stats.SyncFailures++
		return true
	}
	if m.chance(m.faults.SyncFail) {
		m.stats.SyncFailures++
		return true
	}
	return false
}

// movePendingUnder renames, in ops, every path under directory o to the
// same path under n.
func movePendingUnder(ops []dirOp, o, n string) {
	move := func(p string) string {
		if strings.HasPrefix(p, o+"/") {
			return n + "/" + strings.TrimPrefix(p, o+"/")
		}
		return p
	}
	for i := range ops {
		ops[i].path = move(ops[i].path)
		if ops[i].kind == opRename {
			ops[i].newpath = move(ops[i].newpath)
		}
	}
}

func applyDirOp(ns map[string]*inode, op dirOp) {
	switch op.kind {
	case opLink:
		ns[op.path] = op.ino
	case opUnlink:
		if ns[op.path] == op.ino {
			delete(ns, op.path)
		}
	case opRename:
		renameIn(ns, op.path, op.newpath, op.ino, nil)
	}
}

// syncFileLocked makes ino's content durable, or fails (EIO) and resolves
// its unsynced operations as a crash would, forgetting them.
func (m *Mem) syncFileLocked(ino *inode) error {
	if m.syncFails(ino) {
		for _, op := range ino.pending {
			ino.durable = m.applyDrawnLocked(ino.durable, op)
		}
		clear(ino.pending)
		ino.pending = ino.pending[:0]
		return syscall.EIO
	}
	for _, op := range ino.pending {
		ino.durable = applyOp(ino.durable, op)
	}
	clear(ino.pending)
	ino.pending = ino.pending[:0]
	return nil
}

// applyDrawnLocked applies op to buf kept, torn (a random subset of its
// sectors) or not at all, as the crash model draws.
func (m *Mem) applyDrawnLocked(buf []byte, op dataOp) []byte {
	r := m.rng.Float64()
	switch {
	case r < m.crash.Keep:
		m.stats.WritesKept++
		return applyOp(buf, op)
	case r < m.crash.Keep+m.crash.Torn:
		if op.truncate {
			m.stats.WritesKept++
			return applyOp(buf, op)
		}
		pieces := m.pieces(op)
		if len(pieces) < 2 {
			m.stats.WritesKept++
			return applyOp(buf, op)
		}
		m.stats.WritesTorn++
		for _, pc := range pieces {
			if m.rng.IntN(2) == 0 {
				buf = writeAt(buf, pc.off, pc.data)
			}
		}
		return buf
	default:
		m.stats.WritesLost++
		return buf
	}
}

// pieces splits a write at sector boundaries (of the file offset).
func (m *Mem) pieces(op dataOp) []dataOp {
	var out []dataOp
	off, data := op.off, op.data
	for len(data) > 0 {
		n := min(int64(len(data)), m.sector-off%m.sector)
		out = append(out, dataOp{off: off, data: data[:n]})
		off, data = off+n, data[n:]
	}
	return out
}

func applyOp(buf []byte, op dataOp) []byte {
	if op.truncate {
		return truncateTo(buf, op.off)
	}
	return writeAt(buf, op.off, op.data)
}

// writeAt writes p at off, zero-filling a gap past the end.
func writeAt(buf []byte, off int64, p []byte) []byte {
	end := off + int64(len(p))
	if end > int64(len(buf)) {
		buf = truncateTo(buf, end)
	}
	copy(buf[off:], p)
	return buf
}

// truncateTo sets len(buf) to size, zero-filling growth.
func truncateTo(buf []byte, size int64) []byte {
	if size <= int64(len(buf)) {
		return buf[:size]
	}
	if size > int64(cap(buf)) {
		nb := make([]byte, len(buf), max(size, 2*int64(cap(buf))))
		copy(nb, buf)
		buf = nb
	}
	old := len(buf)
	buf = buf[:size]
	clear(buf[old:])
	return buf
}

// writeLocked writes p at off of ino, within the capacity: it returns how
// much it wrote and ENOSPC when that is not all of p.
func (m *Mem) writeLocked(ino *inode, off int64, p []byte) (int, error) {
	if len(p) > 0 && m.chance(m.faults.NoSpace) {
		m.stats.NoSpace++
		return 0, syscall.ENOSPC
	}
	n := int64(len(p))
	size := int64(len(ino.data))
	var err error
	if growth := off + n - size; m.capacity > 0 && growth > 0 && m.used+growth > m.capacity {
		n = min(max(size+max(m.capacity-m.used, 0)-off, 0), n)
		err = syscall.ENOSPC
		m.stats.NoSpace++
	}
	if n > 0 {
		data := append([]byte(nil), p[:n]...)
		m.used += max(off+n-size, 0)
		ino.data = writeAt(ino.data, off, data)
		m.seq++
		ino.pending = append(ino.pending, dataOp{seq: m.seq, off: off, data: data})
	}
	return int(n), err
}

func (m *Mem) truncateLocked(ino *inode, size int64) error {
	growth := size - int64(len(ino.data))
	if growth > 0 {
		if m.chance(m.faults.NoSpace) || (m.capacity > 0 && m.used+growth > m.capacity) {
			m.stats.NoSpace++
			return syscall.ENOSPC
		}
	}
	m.used += growth
	ino.data = truncateTo(ino.data, size)
	m.seq++
	ino.pending = append(ino.pending, dataOp{seq: m.seq, truncate: true, off: size})
	return nil
}

// ProcessDied simulates the death of the process using the file system
// (SIGKILL), typically after PowerOffAfter cut it inside a sequence of
// operations: the operations that failed never happened, and everything
// done before them stays, synced or not, as the page cache keeps it.
// Handles opened before go stale. (Files unlinked while open keep their
// bytes counted against the capacity; the simulations that use it do not
// set one.)
func (m *Mem) ProcessDied() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.off, m.powerIn, m.killTears = false, -1, false
	m.gen++
}

// Crash simulates a power loss: the namespace becomes its durable part
// plus a prefix of the undurable directory operations (entries whose
// parent is gone are dropped), every file its durable content plus its
// unsynced operations as the crash model draws them. Open files go stale.
// Everything the file system holds afterwards is durable.
func (m *Mem) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Crashes++
	m.gen++
	m.off, m.powerIn = false, -1
	ns := make(map[string]*inode, len(m.durable))
	for k, v := range m.durable {
		ns[k] = v
	}
	k := m.rng.IntN(len(m.dirOps) + 1)
	for _, op := range m.dirOps[:k] {
		applyDirOp(ns, op)
	}
	m.stats.DirOpsKept += k
	m.stats.DirOpsLost += len(m.dirOps) - k
	m.dirOps = nil
	// Drop entries whose parent did not survive (parents sort first).
	for _, p := range sortedKeys(ns) {
		if p == "/" {
			continue
		}
		if parent := ns[path.Dir(p)]; parent == nil || !parent.dir {
			delete(ns, p)
		}
	}
	live := m.liveInodesLocked(ns)
	if m.crash.Ordered {
		m.crashOrderedLocked(live)
	} else {
		for _, ino := range live {
			for _, op := range ino.pending {
				ino.durable = m.applyDrawnLocked(ino.durable, op)
			}
		}
	}
	m.used = 0
	for _, ino := range live {
		ino.pending, ino.open, ino.nlink, ino.failSyncs = nil, 0, 0, 0
		ino.data = append([]byte(nil), ino.durable...)
		if !ino.dir {
			m.used += int64(len(ino.data))
		}
	}
	for _, ino := range ns {
		ino.nlink++
	}
	m.names = ns
	m.children = indexNames(ns)
	m.durable = make(map[string]*inode, len(ns))
	for k, v := range ns {
		m.durable[k] = v
	}
}

// crashOrderedLocked keeps a prefix of all unsynced operations in global
// order; the next one is torn (a prefix of its sectors) with probability
// Torn.
func (m *Mem) crashOrderedLocked(live []*inode) {
	type ref struct {
		ino *inode
		op  dataOp
	}
	var ops []ref
	for _, ino := range live {
		for _, op := range ino.pending {
			ops = append(ops, ref{ino, op})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].op.seq < ops[j].op.seq })
	k := m.rng.IntN(len(ops) + 1)
	for _, r := range ops[:k] {
		r.ino.durable = applyOp(r.ino.durable, r.op)
	}
	m.stats.WritesKept += k
	if k == len(ops) {
		return
	}
	lost := len(ops) - k
	if r := ops[k]; !r.op.truncate && m.chance(m.crash.Torn) {
		if pieces := m.pieces(r.op); len(pieces) >= 2 {
			for _, pc := range pieces[:1+m.rng.IntN(len(pieces)-1)] {
				r.ino.durable = writeAt(r.ino.durable, pc.off, pc.data)
			}
			m.stats.WritesTorn++
			lost--
		}
	}
	m.stats.WritesLost += lost
}

// memInfo is a Mem file's fs.FileInfo.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func infoOf(name string, ino *inode) memInfo {
	mode := ino.perm
	if ino.dir {
		mode |= fs.ModeDir
	}
	return memInfo{name: name, size: int64(len(ino.data)), mode: mode}
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
