package partitions

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sort"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/vfs/vfstest"
	"github.com/lodestream/lodestream/wire"
)

// plDir is the partition directory on the simulated disk.
const plDir = "/data/streams/1/topics/1/partitions/1"

// plRun is one seed of TestPowerLossPartitionLog.
type plRun struct {
	t       *testing.T
	rng     *rand.Rand
	mem     *vfs.Mem
	opts    Options
	replica bool // a cluster replica (SyncedBelow, quarantine) rather than a single node (reservation)
	boot    int
	l       *Log
	m       *plModel
	cov     map[string]int
	now     uint64
	faults  vfs.Faults
	// syncFailures: the file system's failed fsyncs when the round began.
	syncFailures int
}

// TestPowerLossPartitionLog: random appends (some synced, as a persisted topic; some not, as a
// replicated one), consumer-offset stores and deletes, retention and purges, with the power cut at a
// random operation and faults drawn from the seed; after each Crash, process crash or clean close the
// log is reopened and checked:
//   - every batch whose Sync returned is there, byte-identical (unless retention removed it);
//   - every batch served is one the test wrote at that offset, byte-identical (a torn tail is cut,
//     never served);
//   - a single node never hands out an offset twice: after a reboot (a new boot id) the next offset is
//     at or above every offset acknowledged before the crash; after a process crash or a clean close
//     it is exactly where the log stopped;
//   - a consumer offset whose store returned with SyncOffsets is the value found;
//   - a byte flipped in synced data (FlipByte) is reported (quarantine, a refused range), never cut
//     silently nor served.
func TestPowerLossPartitionLog(t *testing.T) {
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		r := &plRun{t: t, rng: rand.New(rand.NewPCG(seed, 0x9a71)), mem: vfs.NewMem(seed), m: newPLModel(), cov: cov,
			now: 1_000_000}
		return r.run()
	})
}

func (r *plRun) run() error {
	r.replica = r.rng.IntN(3) == 0
	defer func() { r.tracef("options %+v replica %v", r.opts, r.replica) }()
	r.opts = Options{
		FS:                 r.mem,
		SegmentSizeBytes:   segmentSizeBytesMin << r.rng.IntN(3),
		IndexIntervalBytes: uint64(256 << r.rng.IntN(4)),
		SyncOffsets:        r.rng.IntN(2) == 0,
		SyncOnEvict:        r.rng.IntN(2) == 0,
		Logger:             quietLogger,
		ReserveOffsets:     !r.replica,
		ServeAroundDamage:  !r.replica,
	}
	if r.rng.IntN(3) == 0 {
		r.mem.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.4, Ordered: true})
	}
	switch r.rng.IntN(5) {
	case 0:
		r.faults = vfs.Faults{SyncFail: 0.03}
	case 1:
		r.faults = vfs.Faults{NoSpace: 0.03}
	}
	if !r.replica && r.rng.IntN(3) == 0 {
		// A single node's replicated topic: acknowledged from the page cache, never synced but by a
		// roll or a clean close; a power loss's torn tail is cut, never refused (unsynced_tail_test.go).
		r.opts.AckBeforeSync, r.opts.SyncOnEvict = true, false
		r.cov["ack_before_sync_runs"]++
	}
	// The node creates a partition's directory durably before it opens the log (partition_reconcile.go).
	if err := r.mem.MkdirAll(plDir, 0o755); err != nil {
		return err
	}
	for d := plDir; d != "/"; d = path.Dir(d) {
		if err := r.mem.SyncDir(path.Dir(d)); err != nil {
			return err
		}
	}
	if err := r.newBoot(); err != nil {
		return err
	}
	r.mem.SetFaults(r.faults)
	if err := r.open("first open"); err != nil {
		return err
	}
	for round := 0; round < 6; round++ {
		r.mem.PowerOffAfter(r.rng.IntN(300))
		r.syncFailures = r.mem.Stats().SyncFailures
		r.workload(10 + r.rng.IntN(80))
		if err := r.restart(); err != nil {
			return fmt.Errorf("round %d (boot %d): %w", round, r.boot, err)
		}
	}
	addMemStats(r.cov, r.mem.Stats())
	return nil
}

// newBoot gives the machine its boot id (the kernel's file: no fault).
func (r *plRun) newBoot() error {
	r.mem.SetFaults(vfs.Faults{})
	defer r.mem.SetFaults(r.faults)
	return writeBootID(r.mem, r.boot)
}

// open opens the log with a fresh open-file cache (a new process); on a quarantine of damage the
// model allows it sets the damage aside (SetAsideDamage, as a cluster replica does) and opens again.
func (r *plRun) open(why string) error {
	for attempt := 0; ; attempt++ {
		opts := r.opts
		opts.Files = NewFileCache(OpenFilesMin, quietLogger)
		if r.replica {
			opts.SyncedBelow = r.m.synced
		}
		l, err := r.openRetrying(opts)
		var q *QuarantineError
		if !errors.As(err, &q) || attempt == 5 {
			if err != nil {
				return fmt.Errorf("%s: %w", why, err)
			}
			r.tracef("opened: %+v, damaged %+v, findings %q, sync failures %d", l.Stats(), l.DamagedRanges(), l.Findings(), r.mem.Stats().SyncFailures)
			r.l = l
			return nil
		}
		if err := r.quarantineAllowed(q); err != nil {
			return fmt.Errorf("%s: %w", why, err)
		}
		r.cov["quarantined"]++
		r.tracef("quarantined: %v", q)
		r.m.dropFrom(q.Offset)
		if err := SetAsideDamage(q); err != nil {
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("%s: set aside %v: %w", why, q, err)
			}
			// Half done: the verified prefix may be set aside with the rest (a replica refills it).
			r.cov["set_aside_failed_by_a_fault"]++
			start, _ := parseSegmentName(q.File, logSuffix)
			r.m.dropFrom(start)
			if errors.Is(err, syscall.EIO) { // the prefix copy's fsync: as after a failed Sync
				r.m.limbo = append(r.m.limbo, [2]uint64{start, 1 << 63})
			}
		}
	}
}

// openRetrying opens the log, again when an injected fault (EIO, ENOSPC) failed the open: a restart
// tries again.
func (r *plRun) openRetrying(opts Options) (*Log, error) {
	l, err := Open(plDir, opts)
	for try := 0; try < 10 && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC)); try++ {
		r.cov["open_failed_by_a_fault"]++
		r.tracef("open failed: %v", err)
		if errors.Is(err, syscall.EIO) { // the fsync recovery runs after a cut: as a failed Sync
			r.m.limbo = append(r.m.limbo, [2]uint64{r.m.synced, max(r.m.handedOut, r.m.synced+1<<20)})
		}
		l, err = Open(plDir, opts)
	}
	return l, err
}

// quarantineAllowed: a replica quarantines damage in data it never synced (a tail torn with holes)
// or in a batch the test damaged; never synced data it did not damage.
func (r *plRun) quarantineAllowed(q *QuarantineError) error {
	if !r.replica {
		return fmt.Errorf("a single node quarantined (it serves around damage): %v", q)
	}
	if q.Offset < r.m.synced && !r.m.flippedAt(q.Offset) && !r.m.inLimbo(q.Offset) {
		return fmt.Errorf("synced data below %d quarantined: %v", r.m.synced, q)
	}
	return nil
}

// workload runs up to steps random operations, stopping at the power cut or when the log refuses
// writes (a failed fsync fences a partition until a restart, as the node does).
func (r *plRun) workload(steps int) {
	for i := 0; i < steps && !r.mem.PoweredOff(); i++ {
		var err error
		switch p := r.rng.IntN(100); {
		case p < 55:
			err = r.appendBatch()
		case p < 70 && r.opts.AckBeforeSync:
			err = r.appendBatch()
		case p < 70:
			err = r.sync()
		case p < 82:
			err = r.storeOffset()
		case p < 86:
			err = r.deleteOffset()
		case p < 98:
			err = r.deleteSegments()
		default:
			err = r.purge()
		}
		r.tracef("step %d: %v", i, err)
		if err != nil {
			r.cov["stopped_by_"+errClass(err)]++
			return
		}
	}
}

// tracef logs a step when one seed is replayed with -v.
func (r *plRun) tracef(format string, args ...any) {
	if vfstest.OneSeed() && testing.Verbose() {
		r.t.Logf(format, args...)
	}
}

func errClass(err error) string {
	switch {
	case errors.Is(err, vfs.ErrPoweredOff):
		return "power_cut"
	case errors.Is(err, ErrFailed):
		return "failed_log"
	default:
		return "error"
	}
}

func (r *plRun) appendBatch() error {
	base := r.l.NextOffset()
	r.now += uint64(1 + r.rng.IntN(50))
	batch := makeBatch(r.t, base, 1+r.rng.IntN(4), 8+r.rng.IntN(900), r.now)
	r.m.attempt(base, batch)
	loc, err := r.l.Append(batch)
	r.tracef("append at %d (%d bytes): %+v %v (sync failures so far %d)", base, len(batch), loc, err,
		r.mem.Stats().SyncFailures)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrFailed) {
			r.cov["append_enospc_rolled_back"]++
			return nil // rolled back exactly: the log takes appends again
		}
		return err
	}
	h, _ := wire.DecodeBatchHeader(batch)
	r.m.ack(base, batch, h.MessageCount, loc)
	r.cov["appends"]++
	return nil
}

func (r *plRun) sync() error {
	upTo := r.m.handedOut
	err := r.l.Sync()
	r.tracef("sync up to %d: %v (unsynced files after: %v)", upTo, err, r.mem.UnsyncedFiles())
	if err != nil {
		r.m.limbo = append(r.m.limbo, [2]uint64{r.m.synced, r.m.handedOut})
		r.cov["sync_failed"]++
		return err
	}
	r.m.synced = max(r.m.synced, upTo)
	r.cov["syncs"]++
	return nil
}

func (r *plRun) consumer() offsetKey {
	return offsetKey{wire.ConsumerKind(1 + r.rng.IntN(2)), uint32(1 + r.rng.IntN(3))}
}

func (r *plRun) storeOffset() error {
	k := r.consumer()
	v := r.rng.Uint64N(r.m.handedOut + 1)
	err := r.l.StoreConsumerOffset(k.kind, k.id, v)
	r.tracef("store offset %v = %d: %v", k, v, err)
	if err == nil && r.opts.SyncOffsets {
		r.m.offsetIs(k, v)
		r.cov["offsets_stored_durably"]++
		return nil
	}
	r.m.offsetMay(k, v)
	if err != nil {
		r.m.offsetUnsettled[k] = true
	}
	// Unsynced, the replacement's rename may outlive its content: the file reads short, is set
	// aside as corrupt at open, and the consumer has no offset (it re-reads: at-least-once).
	r.m.offsetMay(k, plAbsent)
	if err != nil && errors.Is(err, vfs.ErrPoweredOff) {
		return err
	}
	return nil // a failed store keeps the partition serving
}

func (r *plRun) deleteOffset() error {
	k := r.consumer()
	if _, ok := r.l.ConsumerOffset(k.kind, k.id); !ok {
		return nil
	}
	err := r.l.DeleteConsumerOffset(k.kind, k.id)
	r.tracef("delete offset %v: %v", k, err)
	if err == nil && r.opts.SyncOffsets {
		r.m.offsetIs(k, plAbsent)
		return nil
	}
	r.m.offsetMay(k, plAbsent)
	if err != nil {
		r.m.offsetUnsettled[k] = true
	}
	if err != nil && errors.Is(err, vfs.ErrPoweredOff) {
		return err
	}
	return nil
}

// deleteSegments removes the oldest sealed segment (retention); batches below its end may be gone
// from then on, whether or not the call returned.
func (r *plRun) deleteSegments() error {
	if r.l.Stats().SegmentsCount < 2 {
		return nil
	}
	r.m.floor = max(r.m.floor, r.l.SegmentEndOffset(1))
	_, err := r.l.DeleteSegments(1)
	r.tracef("delete the oldest segment (floor %d): %v", r.m.floor, err)
	if err != nil {
		r.m.removalUnsure = true
		return err
	}
	r.cov["segments_deleted"]++
	return nil
}

func (r *plRun) purge() error {
	_, err := r.l.Purge()
	r.tracef("purge: %v", err)
	if err != nil {
		r.m.purgeUnsure = true
		for k := range r.m.offsets {
			r.m.offsetMay(k, plAbsent)
		}
		return err
	}
	r.m.purged()
	r.cov["purges"]++
	return nil
}

// restart ends the round with a power loss (the power was cut, or is cut now), a process crash (the
// page cache survives) or a clean close, then reopens and checks.
func (r *plRun) restart() error {
	powerLoss := r.mem.PoweredOff()
	r.mem.PowerOffAfter(-1)
	clean := false
	if !powerLoss {
		switch r.rng.IntN(3) {
		case 0:
			powerLoss = true
		case 1:
			if err := r.l.Close(); err == nil {
				clean = true
			} else { // its Sync failed: as a failed Sync, then a process restart
				r.m.limbo = append(r.m.limbo, [2]uint64{r.m.synced, r.m.handedOut})
			}
		}
	}
	if !powerLoss && r.mem.Stats().SyncFailures > r.syncFailures {
		// An fsync failed this round (some not reported yet: a roll's, an eviction's); the restarted
		// process serves what it dropped from the page cache, which no later fsync writes.
		r.m.limbo = append(r.m.limbo, [2]uint64{r.m.synced, r.m.handedOut})
	}
	kind := "process_crash"
	var flipped uint64 = plAbsent
	settled := 0
	if powerLoss {
		kind = "power_loss"
		r.mem.Crash()
		settled = len(r.m.limbo) // checked at this reopen, then forgotten (the reopen may add more)
		r.boot++
		if err := r.newBoot(); err != nil {
			return err
		}
		if r.rng.IntN(6) == 0 {
			flipped = r.flipSyncedByte()
		}
	} else if clean {
		kind = "clean_close"
	}
	r.cov[kind]++
	if vfstest.OneSeed() {
		des, _ := r.mem.ReadDir(plDir)
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		r.tracef("restart: %s (flipped %d), files %v", kind, flipped, names)
	}
	r.m.flipped = flipped
	if err := r.open(kind); err != nil {
		return err
	}
	if err := r.check(kind, powerLoss, clean); err != nil {
		return err
	}
	r.m.limbo = r.m.limbo[settled:] // the power loss settled what the failed fsyncs before it left
	return nil
}

// flipSyncedByte flips a byte of a synced, still stored batch (damage a later read or the open must
// report); it returns the batch's base offset, or plAbsent when there is none.
func (r *plRun) flipSyncedByte() uint64 {
	var bases []uint64
	for base, b := range r.m.acked {
		h, _ := wire.DecodeBatchHeader(b)
		if base >= r.m.floor && base+uint64(h.MessageCount) <= r.m.synced && !r.m.purgeUnsure {
			bases = append(bases, base)
		}
	}
	if len(bases) == 0 {
		return plAbsent
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	base := bases[r.rng.IntN(len(bases))]
	loc, ok := r.m.locs[base]
	if !ok {
		return plAbsent
	}
	off := int64(loc.Position) + r.rng.Int64N(int64(loc.Length))
	if err := r.mem.FlipByte(segmentLogPath(plDir, loc.SegmentStartOffset), off); err != nil {
		return plAbsent // the segment went with retention after all
	}
	r.cov["synced_byte_flipped"]++
	return base
}

// check compares the reopened log with the model, then makes the model what the log now holds.
func (r *plRun) check(kind string, powerLoss, clean bool) error {
	m := r.m
	st := r.l.Stats()
	sc, err := scanLog(r.l, m)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	refused := sc.refused
	for _, d := range r.l.DamagedRanges() {
		refused = append(refused, [2]uint64{d.FirstOffset, d.EndOffset})
	}
	var flipRanges [][2]uint64 // refused ranges holding the damaged batch
	for _, rg := range refused {
		if m.flippedIn(rg[0], rg[1]) {
			flipRanges = append(flipRanges, rg)
			continue
		}
		if r.opts.AckBeforeSync && r.faults == (vfs.Faults{}) && !m.wasRefused(rg[0]) && !m.purgeUnsure {
			return fmt.Errorf("%s: offsets %d..%d refused, but nothing synced was damaged: an unsynced tail is cut (damaged ranges %+v)",
				kind, rg[0], rg[1]-1, r.l.DamagedRanges())
		}
		if rg[0] < m.synced && !m.wasRefused(rg[0]) && !m.inLimbo(rg[0]) && !m.purgeUnsure {
			return fmt.Errorf("%s: offsets %d..%d refused below the synced offset %d (damaged ranges %+v)", kind, rg[0],
				rg[1]-1, m.synced, r.l.DamagedRanges())
		}
	}
	if !m.purgeUnsure {
		if err := r.checkPromises(kind, st, sc, powerLoss, clean, flipRanges); err != nil {
			return err
		}
	}
	if err := r.checkOffsets(kind); err != nil {
		return err
	}
	r.rebuild(st, sc, refused, powerLoss || clean, powerLoss)
	return nil
}

func (r *plRun) checkPromises(kind string, st Stats, sc plScan, powerLoss, clean bool, flipRanges [][2]uint64) error {
	m := r.m
	switch {
	case clean && st.NextOffset != m.handedOut:
		return fmt.Errorf("%s: next offset %d, the log stopped at %d", kind, st.NextOffset, m.handedOut)
	case !powerLoss && st.NextOffset < m.handedOut:
		return fmt.Errorf("%s: next offset %d below the acknowledged %d (the page cache survived)", kind,
			st.NextOffset, m.handedOut)
	case powerLoss && r.opts.ReserveOffsets && st.NextOffset < m.handedOut:
		return fmt.Errorf("%s: next offset %d re-issues offsets up to the acknowledged %d", kind, st.NextOffset,
			m.handedOut)
	case st.NextOffset < m.synced && m.flipped == plAbsent && !m.inLimbo(st.NextOffset):
		// (In limbo: a failed fsync dropped those pages, then a Close found nothing left to sync.)
		return fmt.Errorf("%s: next offset %d below the synced %d", kind, st.NextOffset, m.synced)
	}
	for base, want := range m.acked {
		h, _ := wire.DecodeBatchHeader(want)
		if base < m.floor || base+uint64(h.MessageCount) > m.synced || m.inLimbo(base) {
			continue
		}
		if inRanges(flipRanges, base) {
			r.cov["flip_reported"]++ // refused with the damaged batch (the range may hold more)
			continue
		}
		if m.flippedAt(base) {
			if _, served := sc.found[base]; !served && !r.replica && sc.end <= base && st.NextOffset >= m.handedOut {
				// Documented limit: a single node does not know its synced frontier, so a synced batch
				// whose framing is damaged, last in the log once the crash took the unsynced ones after
				// it, is cut as a torn tail (its offsets are skipped by the reservation).
				r.cov["flip_tail_cut"]++
				continue
			}
			return fmt.Errorf("%s: the damaged synced batch at %d was neither reported nor refused", kind, base)
		}
		got, ok := sc.found[base]
		if !ok {
			return fmt.Errorf("%s: synced batch at %d (below %d) is gone (log %d..%d)", kind, base, m.synced,
				st.FirstOffset, st.NextOffset)
		}
		if string(got) != string(want) {
			return fmt.Errorf("%s: synced batch at %d differs", kind, base)
		}
	}
	return nil
}

func (r *plRun) checkOffsets(kind string) error {
	for _, e := range r.l.ConsumerOffsets() {
		k := offsetKey{e.Kind, e.ID}
		if may := r.m.offsets[k]; may == nil || !may[e.Offset] {
			return fmt.Errorf("%s: consumer %d/%d has offset %d, never stored or since replaced durably (may: %v)",
				kind, k.kind, k.id, e.Offset, may)
		}
	}
	for k, may := range r.m.offsets {
		if _, ok := r.l.ConsumerOffset(k.kind, k.id); !ok && !may[plAbsent] {
			return fmt.Errorf("%s: consumer %d/%d lost its durably stored offset (may: %v)", kind, k.kind, k.id, may)
		}
	}
	return nil
}

// rebuild makes the model what the reopened log holds; durable says the log's data is all durable
// (after a power loss or a clean close), offsetsDurable the same of the consumer offsets (a clean
// close does not sync offsets stored without SyncOffsets).
func (r *plRun) rebuild(st Stats, sc plScan, refused [][2]uint64, durable, offsetsDurable bool) {
	m := r.m
	acked, locs, candidates := map[uint64][]byte{}, map[uint64]BatchLocation{}, map[uint64][][]byte{}
	for base, b := range sc.found {
		acked[base], candidates[base] = b, [][]byte{b}
		if string(m.acked[base]) == string(b) {
			if loc, ok := m.locs[base]; ok {
				locs[base] = loc
			}
		}
	}
	// An interrupted purge is settled by a power loss only: until then its undurable removals may
	// still be undone, bringing old-generation batches and offsets back.
	keepOld := m.purgeUnsure && !offsetsDurable
	if (m.purgeUnsure || m.removalUnsure) && !offsetsDurable {
		for base, cs := range m.candidates {
			candidates[base] = append(candidates[base], cs...)
		}
	}
	m.acked, m.locs, m.candidates = acked, locs, candidates
	m.handedOut = st.NextOffset
	if durable {
		m.synced = sc.end
	}
	m.synced = min(m.synced, st.NextOffset)
	m.refused = append(m.refused, refused...)
	m.purgeUnsure, m.flipped = keepOld, plAbsent
	m.removalUnsure = m.removalUnsure && !offsetsDurable

	for k := range m.offsets {
		v, ok := r.l.ConsumerOffset(k.kind, k.id)
		if !ok {
			v = plAbsent
		}
		if offsetsDurable || (r.opts.SyncOffsets && !keepOld && !m.offsetUnsettled[k]) {
			m.offsetIs(k, v)
		} else {
			m.offsetMay(k, v)
		}
	}
}

func inRanges(ranges [][2]uint64, offset uint64) bool {
	for _, rg := range ranges {
		if offset >= rg[0] && offset < rg[1] {
			return true
		}
	}
	return false
}
