package partitions

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"

	"github.com/lodestream/lodestream/vfs"
)

// openFDs counts the process's open descriptors (/proc/self/fd; the listing's own descriptor
// included, the same in every count).
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// checkFDs fails when the process holds more descriptors than base + bound, or the cache counts more
// than its bound.
func checkFDs(t *testing.T, c *FileCache, base int, when string) {
	t.Helper()
	if n := openFDs(t); n > base+c.Max() {
		t.Fatalf("%s: %d descriptors open, %d before any log plus the bound %d", when, n, base, c.Max())
	}
	if st := c.Stats(); st.Open > st.Max {
		t.Fatalf("%s: the cache holds %d descriptors, bound %d", when, st.Open, st.Max)
	}
}

// TestManyLogsStayUnderTheOpenFileBound (issue 15 point 8): 100 partitions of several segments each,
// written, synced, polled, closed and reopened through a cache of 16 descriptors. Every message
// reads back and the process never holds more than 16 descriptors for them. Before the cache, each
// log held one descriptor per segment plus its active index for its whole life.
func TestManyLogsStayUnderTheOpenFileBound(t *testing.T) {
	const logs, bound = 100, 16
	cache := NewFileCache(bound, quietLogger)
	root := t.TempDir()
	base := openFDs(t)
	opts := func(i int) Options {
		// Small segments: each log rolls several times. Every other log is persisted.
		return Options{SegmentSizeBytes: 4 << 10, IndexIntervalBytes: 1, Files: cache, SyncOnEvict: i%2 == 0}
	}
	all := make([]*Log, logs)
	for i := range all {
		all[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), opts(i))
		fillLog(t, all[i], 3, 5, 600)
		checkFDs(t, cache, base, fmt.Sprintf("log %d written", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2 {
		for _, i := range rng.Perm(logs) {
			l := all[i]
			fillLog(t, l, 2, 5, 600)
			if i%2 == 0 {
				if err := l.Sync(); err != nil {
					t.Fatalf("round %d: sync log %d: %v", round, i, err)
				}
			}
			want := 25 + 10*round
			expectOffsets(t, fmt.Sprintf("round %d log %d", round, i), poll(t, l, wire.PollFirst, 0, 1000), 0, want)
			if st := l.Stats(); st.SegmentsCount < 3 {
				t.Fatalf("log %d has %d segments; the test wants several per log", i, st.SegmentsCount)
			}
			checkFDs(t, cache, base, fmt.Sprintf("round %d log %d", round, i))
		}
	}
	st := cache.Stats()
	if st.Evictions == 0 || st.EvictionSyncs == 0 {
		t.Fatalf("cache stats %+v: the test should evict, and sync evicted persisted files", st)
	}
	for i, l := range all {
		if err := l.Close(); err != nil {
			t.Fatalf("close log %d: %v", i, err)
		}
	}
	if st := cache.Stats(); st.Open != 0 {
		t.Fatalf("closed logs still hold %d descriptors", st.Open)
	}
	if n := openFDs(t); n > base {
		t.Fatalf("%d descriptors open after every log closed, %d before", n, base)
	}
	// A boot: every log recovers (each segment walked) through the same bound.
	for i := range all {
		all[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), opts(i))
		checkFDs(t, cache, base, fmt.Sprintf("log %d reopened", i))
	}
	for i, l := range all {
		expectOffsets(t, fmt.Sprintf("reopened log %d", i), poll(t, l, wire.PollFirst, 0, 1000), 0, 35)
		fillLog(t, l, 1, 5, 600)
		checkFDs(t, cache, base, fmt.Sprintf("reopened log %d appended", i))
		l.Close()
	}
}

// TestConcurrentLogsUnderATinyBound: writers and pollers on 40 logs share a 16-descriptor cache (run
// it with -race). Nothing deadlocks, every poll reads back what was written, the bound holds.
func TestConcurrentLogsUnderATinyBound(t *testing.T) {
	const logs, writers, pollers = 40, 4, 4
	cache := NewFileCache(OpenFilesMin, quietLogger)
	root := t.TempDir()
	all := make([]*Log, logs)
	for i := range all {
		all[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), Options{SegmentSizeBytes: 4 << 10, Files: cache,
			SyncOnEvict: i%2 == 0})
		defer all[i].Close()
	}
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, writers+pollers)
	for w := range writers {
		wg.Add(1)
		go func() { // writer w owns logs w, w+writers, ...
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				l := all[w+writers*(n%(logs/writers))]
				b := makeBatch(t, l.NextOffset(), 3, 200, uint64(1000+n))
				if _, err := l.Append(b); err != nil {
					errs <- err
					return
				}
				if n%7 == 0 {
					if err := l.Sync(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for p := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 9))
			for time.Now().Before(deadline) {
				l := all[rng.IntN(logs)]
				res, err := l.Poll(PollQuery{Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 50})
				if err != nil {
					errs <- err
					return
				}
				if res.MessagesCount > 0 && res.FirstOffset != 0 {
					errs <- fmt.Errorf("poll from the first offset started at %d", res.FirstOffset)
					return
				}
				if st := cache.Stats(); st.Open > st.Max {
					errs <- fmt.Errorf("cache holds %d descriptors, bound %d", st.Open, st.Max)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, l := range all {
		next := l.NextOffset()
		if next == 0 {
			continue
		}
		expectOffsets(t, fmt.Sprintf("log %d", i), poll(t, l, wire.PollFirst, 0, uint32(next)), 0, int(next))
	}
}

// TestEvictionKeepsThePendingSyncState: a persisted log's segment evicted while dirty is synced
// before it is closed; when that sync fails, the log's next Sync reports it (the append it covers is
// never acknowledged), and the one after is clean again.
func TestEvictionKeepsThePendingSyncState(t *testing.T) {
	cache := NewFileCache(OpenFilesMin, quietLogger)
	dir := t.TempDir()
	l := openLog(t, filepath.Join(dir, "persisted"), Options{Files: cache, SyncOnEvict: true})
	defer l.Close()
	others := make([]*CachedFile, 2*OpenFilesMin)
	for i := range others {
		h, err := cache.Create(nil, filepath.Join(dir, fmt.Sprint("other-", i)), os.O_RDWR|os.O_CREATE, 0o644, false)
		if err != nil {
			t.Fatal(err)
		}
		others[i] = h
		defer h.Close()
	}
	evictAll := func() {
		for _, h := range others {
			if _, err := h.Stat(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fillLog(t, l, 1, 3, 100)
	syncs := cache.Stats().EvictionSyncs
	evictAll()
	if got := cache.Stats().EvictionSyncs; got == syncs {
		t.Fatal("the dirty persisted segment was evicted without a sync")
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("sync after a clean eviction: %v", err)
	}

	injected := errors.New("injected: fdatasync failed")
	evictSync = func(vfs.File) error { return injected }
	defer func() { evictSync = datasync }()
	fillLog(t, l, 1, 3, 100)
	evictAll()
	evictSync = datasync
	if err := l.Sync(); !errors.Is(err, injected) {
		t.Fatalf("sync after a failed eviction sync: %v, want the eviction's error", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("the next sync: %v", err)
	}
	expectOffsets(t, "after evictions", poll(t, l, wire.PollFirst, 0, 100), 0, 6)
}

// TestOpenFailsCleanlyOutOfDescriptors: when the process has no descriptor left the cache closes an
// idle file of its own and opens; with none to close the read answers the error and nothing breaks.
func TestOpenFailsCleanlyWhenAFileIsGone(t *testing.T) {
	cache := NewFileCache(OpenFilesMin, quietLogger)
	h := cache.Register(nil, filepath.Join(t.TempDir(), "missing"), os.O_RDWR, false)
	if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a missing file: %v", err)
	}
	if st := cache.Stats(); st.Open != 0 {
		t.Fatalf("a failed open kept a slot: %+v", st)
	}
	h.Close()
	if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrFileCacheClosed) {
		t.Fatalf("read of a closed file: %v", err)
	}
}
