package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// A metadata write that cannot be made durable (a full disk, an I/O error)
// no longer stops the process at once (issue 15 point 8, issue 9 point 6):
// the driver fences the group. The Ready that failed stays un-advanced and
// is retried every storageRetryInterval; meanwhile new metadata writes are
// answered 58 at once (retryable: nothing entered the pipeline) and the
// ones already admitted wait as before (57 when their wait ends: they
// commit once the write goes through, and a retry is deduplicated). Reads
// never pass through the driver and keep being served. When the write
// succeeds the fence lifts. When it keeps failing for
// [cluster] superblock_wedged_fatal_timeout (unless 0/disabled) the driver
// stops with errStorageWedged, and the process exits with
// ExitStorageWedged.

// ExitStorageWedged is the exit status of a process whose metadata storage,
// or a partition's (partition_fence.go), stayed unwritable for
// superblock_wedged_fatal_timeout.
const ExitStorageWedged = 4

const storageRetryInterval = time.Second

// errMetadataFenced answers metadata writes while the storage is fenced.
var errMetadataFenced = errors.New("metadata storage is failing (full disk?): writes are fenced, retry later")

// wedgedError stops the node when the fence outlived the timeout.
type wedgedError struct {
	scope   string // what is wedged; "" = the metadata storage
	since   time.Duration
	lastErr error
}

func (e *wedgedError) Error() string {
	scope := e.scope
	if scope == "" {
		scope = "metadata storage"
	}
	return fmt.Sprintf("%s wedged: writes have failed for %s (superblock_wedged_fatal_timeout), last error: %v",
		scope, e.since.Round(time.Second), e.lastErr)
}
func (e *wedgedError) Unwrap() error { return e.lastErr }

// ExitCode makes the process exit with ExitStorageWedged.
func (e *wedgedError) ExitCode() int { return ExitStorageWedged }

// storageFence is the driver's fence state (driver goroutine only).
type storageFence struct {
	timeout time.Duration // 0: never exit
	since   time.Time     // zero: not fenced
	retryAt time.Time
	lastErr error
}

func (f *storageFence) fenced() bool { return !f.since.IsZero() }

// fail records a failed storage step; it returns the wedged error once the
// fence outlived the timeout.
func (d *driver) storageFailed(err error) error {
	now := time.UnixMicro(int64(d.clock.NowMicros()))
	f := &d.fence
	if !f.fenced() {
		f.since = now
		d.fenced.Store(true)
		d.log.Error("metadata storage failed: writes are fenced (retryable errors) until it succeeds again; reads are served",
			"err", err, "wedged_fatal_timeout", f.timeout)
	}
	f.lastErr, f.retryAt = err, now.Add(storageRetryInterval)
	if f.timeout > 0 && now.Sub(f.since) >= f.timeout {
		return &wedgedError{since: now.Sub(f.since), lastErr: err}
	}
	return nil
}

// storageRecovered lifts the fence after a storage step succeeded.
func (d *driver) storageRecovered() {
	if d.fence.fenced() {
		d.log.Info("metadata storage writes again: fence lifted",
			"fenced_for", time.UnixMicro(int64(d.clock.NowMicros())).Sub(d.fence.since))
		d.fence = storageFence{timeout: d.fence.timeout}
		d.fenced.Store(false)
	}
}

// mayRetryStorage: not fenced, or the retry time has come.
func (d *driver) mayRetryStorage() bool {
	return !d.fence.fenced() || !time.UnixMicro(int64(d.clock.NowMicros())).Before(d.fence.retryAt)
}

// refuseFenced answers a proposal made while fenced.
func refuseFenced(p *proposal) {
	p.done <- outcome{kind: consensus.ReplyNotAccepted, err: errMetadataFenced}
}

// noteWedged tells the caller of Run (Options.OnWedged) that storage is
// wedged, before a shutdown that may wait on it.
func noteWedged(onWedged func(error), err error) {
	var w *wedgedError
	if onWedged != nil && errors.As(err, &w) {
		onWedged(err)
	}
}
