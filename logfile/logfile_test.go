package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func files(t *testing.T, dir string) (active []byte, archives []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == FileName {
			active, _ = os.ReadFile(filepath.Join(dir, e.Name()))
		} else {
			archives = append(archives, e.Name())
		}
	}
	sort.Strings(archives)
	return active, archives
}

func TestRotatesBySizeAndBoundsTotal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w, err := Open(Config{Dir: dir, MaxFileSize: 100, MaxTotalSize: 250, now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 39) + "\n") // 40 bytes: two per file
	for i := 0; i < 20; i++ {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	active, archives := files(t, dir)
	if len(active) == 0 || len(active) > 100 {
		t.Fatalf("active file %d bytes, want 1..100", len(active))
	}
	var total int64
	for _, name := range archives {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 100 {
			t.Fatalf("archive %s is %d bytes, over max_file_size", name, info.Size())
		}
		total += info.Size()
		if !strings.HasPrefix(name, FileName+".") {
			t.Fatalf("unexpected file %s", name)
		}
	}
	// 20 lines of 40 B = 800 B written; archives bounded by 250 B (three files of 80 B).
	if total > 250 || len(archives) != 3 {
		t.Fatalf("archives %v total %d B, want 3 files ≤ 250 B", archives, total)
	}
}

func TestRetentionDeletesOldArchives(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Now()}
	old := filepath.Join(dir, FileName+".20200101T000000.000000000Z")
	if err := os.WriteFile(old, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := clk.Now().Add(-8 * 24 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	unrelated := filepath.Join(dir, "other.log")
	_ = os.WriteFile(unrelated, []byte("keep"), 0o644)
	w, err := Open(Config{Dir: dir, Retention: 7 * 24 * time.Hour, CheckInterval: 10 * time.Millisecond, now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("archive past retention kept: %v", err)
	}
	if _, err := os.Stat(unrelated); err != nil {
		t.Fatal("a file that is not an archive was deleted")
	}
	// The periodic sweep: a fresh archive ages past retention.
	fresh := filepath.Join(dir, FileName+".20250101T000000.000000000Z")
	_ = os.WriteFile(fresh, []byte("fresh\n"), 0o644)
	now := clk.Now()
	_ = os.Chtimes(fresh, now, now)
	clk.advance(8 * 24 * time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(fresh); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("periodic sweep did not delete the aged archive")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAppendsAcrossOpensAndNoSizeLimit(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		w, err := Open(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(bytes.Repeat([]byte("a"), 1000)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("write after close accepted")
		}
	}
	active, archives := files(t, dir)
	if len(active) != 2000 || len(archives) != 0 {
		t.Fatalf("active %d B, archives %v", len(active), archives)
	}
}

func TestOversizedRecordGetsItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Config{Dir: dir, MaxFileSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{"abc\n", strings.Repeat("b", 30) + "\n", "c\n"} {
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	active, archives := files(t, dir)
	if string(active) != "c\n" || len(archives) != 2 {
		t.Fatalf("active %q archives %v", active, archives)
	}
}
