// Package logfile is the server's log file: an io.Writer appending to
// <dir>/iggy-server.log that rotates by size and keeps a bounded set of
// archives, as upstream's file logging does (core/server_common/src/log:
// rotation at max_file_size, archives deleted past retention and, oldest
// first, past max_total_size, checked every rotation_check_interval).
// Stdlib only: rotation is a rename and an open.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileName is the active log file; archives are FileName + "." + a UTC
// timestamp (sortable, unique within the process).
const FileName = "iggy-server.log"

// archiveTimeLayout names archives; lexical order is rotation order.
const archiveTimeLayout = "20060102T150405.000000000Z"

// Config is the [system.logging] file settings, resolved.
type Config struct {
	// Dir holds the active file and the archives (created when missing).
	Dir string
	// MaxFileSize rotates the active file before a write would take it past
	// this many bytes; 0 never rotates.
	MaxFileSize uint64
	// MaxTotalSize bounds the archives' total bytes (the oldest go first);
	// 0 = no bound.
	MaxTotalSize uint64
	// Retention deletes archives last modified longer ago; 0 keeps them.
	Retention time.Duration
	// CheckInterval is how often retention runs besides after each
	// rotation; 0 only after rotations.
	CheckInterval time.Duration
	// OnError reports a rotation or cleanup failure (logging cannot log
	// about itself); nil discards it. Writing carries on in the current file.
	OnError func(error)
	// now is the clock (tests).
	now func() time.Time
}

// Writer is the active log file. It is safe for concurrent use.
type Writer struct {
	cfg  Config
	mu   sync.Mutex
	file *os.File
	size uint64
	last string // last archive name, to keep names unique
	// pruneMu serialises retention runs (after a rotation, periodic sweep).
	pruneMu sync.Mutex
	stop    chan struct{}
	done    chan struct{}
}

// Open creates Dir, opens (appends to) the active file and starts the
// periodic retention sweep.
func Open(cfg Config) (*Writer, error) {
	if cfg.Dir == "" {
		return nil, errors.New("log file: no directory")
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("log file: creating %s: %w", cfg.Dir, err)
	}
	w := &Writer{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	if err := w.openActive(); err != nil {
		return nil, err
	}
	w.prune()
	go w.sweep()
	return w, nil
}

// Path is the active file's path.
func (w *Writer) Path() string { return filepath.Join(w.cfg.Dir, FileName) }

func (w *Writer) openActive() error {
	f, err := os.OpenFile(w.Path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log file: opening %s: %w", w.Path(), err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	w.file, w.size = f, uint64(info.Size())
	return nil
}

// Write appends p, rotating first when p would take a non-empty file past
// MaxFileSize (a single record larger than the limit gets a file of its own).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return 0, errors.New("log file: closed")
	}
	if w.cfg.MaxFileSize > 0 && w.size > 0 && w.size+uint64(len(p)) > w.cfg.MaxFileSize {
		if err := w.rotateLocked(); err != nil {
			w.report(err)
		}
	}
	n, err := w.file.Write(p)
	w.size += uint64(n)
	return n, err
}

// rotateLocked renames the active file to an archive and opens a new one.
func (w *Writer) rotateLocked() error {
	name := FileName + "." + w.cfg.now().UTC().Format(archiveTimeLayout)
	if name <= w.last {
		// Same clock reading (or a clock step back): keep names ordered.
		name = w.last + "0"
	}
	if err := w.file.Close(); err != nil {
		w.report(fmt.Errorf("log file: closing for rotation: %w", err))
	}
	w.file = nil
	renameErr := os.Rename(w.Path(), filepath.Join(w.cfg.Dir, name))
	if renameErr == nil {
		w.last = name
	}
	if err := w.openActive(); err != nil {
		return errors.Join(renameErr, err)
	}
	if renameErr != nil {
		return fmt.Errorf("log file: rotating: %w", renameErr)
	}
	w.prune()
	return nil
}

func (w *Writer) report(err error) {
	if w.cfg.OnError != nil {
		w.cfg.OnError(err)
	}
}

func (w *Writer) sweep() {
	defer close(w.done)
	if w.cfg.CheckInterval <= 0 {
		<-w.stop
		return
	}
	t := time.NewTicker(w.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.prune()
		}
	}
}

type archive struct {
	name    string
	size    uint64
	modTime time.Time
}

// archives lists the rotated files, oldest first.
func (w *Writer) archives() ([]archive, error) {
	entries, err := os.ReadDir(w.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var out []archive
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), FileName+".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, archive{name: e.Name(), size: uint64(info.Size()), modTime: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// prune deletes archives past Retention, then the oldest while the
// archives exceed MaxTotalSize. The active file is never deleted.
func (w *Writer) prune() {
	w.pruneMu.Lock()
	defer w.pruneMu.Unlock()
	list, err := w.archives()
	if err != nil {
		w.report(fmt.Errorf("log file: listing %s: %w", w.cfg.Dir, err))
		return
	}
	var kept []archive
	cutoff := w.cfg.now().Add(-w.cfg.Retention)
	for _, a := range list {
		if w.cfg.Retention > 0 && a.modTime.Before(cutoff) {
			w.remove(a.name)
			continue
		}
		kept = append(kept, a)
	}
	if w.cfg.MaxTotalSize == 0 {
		return
	}
	var total uint64
	for _, a := range kept {
		total += a.size
	}
	for _, a := range kept {
		if total <= w.cfg.MaxTotalSize {
			break
		}
		w.remove(a.name)
		total -= a.size
	}
}

func (w *Writer) remove(name string) {
	if err := os.Remove(filepath.Join(w.cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.report(fmt.Errorf("log file: deleting archive: %w", err))
	}
}

// Close stops the sweep and closes the active file.
func (w *Writer) Close() error {
	w.mu.Lock()
	f := w.file
	w.file = nil
	w.mu.Unlock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	if f == nil {
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	return nil
}
