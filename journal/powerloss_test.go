package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/vfs"
	"github.com/lodestream/lodestream/vfs/vfstest"
)

// Power-loss tests: the journal's files on a vfs.Mem, driven by a seeded
// workload, with the power cut at a random operation (so inside a Write,
// a Sync, a rename...), faults drawn from the seed, then Crash and a
// reopen checked against a model of what was written and what was
// promised durable. Seeds are chosen as vfstest.ForSeeds says.
func forSeeds(t *testing.T, body func(seed uint64, cov map[string]int) error) {
	t.Helper()
	vfstest.ForSeeds(t, "./journal/", body)
}

func addStats(cov map[string]int, st vfs.MemStats) { vfstest.AddMemStats(cov, st) }

func prepKey(p *consensus.Prepare) string { return string(appendEntry(nil, p)) }

func samePrepare(a, b consensus.Prepare) bool { return prepKey(&a) == prepKey(&b) }

// plRec is one record of the prepare WAL as the test wrote it.
type plRec struct {
	trunc bool
	from  uint64
	p     consensus.Prepare
}

// plReplay applies recs to a copy of base, keeping ops >= fromOp.
func plReplay(base map[uint64]consensus.Prepare, recs []plRec, fromOp uint64) map[uint64]consensus.Prepare {
	out := make(map[uint64]consensus.Prepare, len(base))
	for op, p := range base {
		if op >= fromOp {
			out[op] = p
		}
	}
	for _, r := range recs {
		if r.trunc {
			for op := range out {
				if op >= r.from {
					delete(out, op)
				}
			}
		} else if r.p.Header.Op >= fromOp {
			out[r.p.Header.Op] = r.p
		}
	}
	return out
}

func sameState(got []consensus.Prepare, want map[uint64]consensus.Prepare) bool {
	if len(got) != len(want) {
		return false
	}
	for _, p := range got {
		if w, ok := want[p.Header.Op]; !ok || !samePrepare(p, w) {
			return false
		}
	}
	return true
}

// pwalFiles lists the prepare WAL's files of dir in order.
func pwalFiles(m *vfs.Mem, dir string) []string {
	des, _ := m.ReadDir(dir)
	var out []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), prepareLogSuffix) {
			out = append(out, path.Join(dir, de.Name()))
		}
	}
	return out
}

// TestPowerLossPrepareLog: arbitrary Write (appends, truncate and
// re-append) / Sync / Reclaim / Close sequences, the power cut at a random
// operation, fsync failures and full-disk refusals drawn in some seeds,
// Crash, reopen, three rounds per seed. After every crash:
//   - every entry returned was written, byte for byte (so none fails its
//     checksum and none was made up), in op order, at or above fromOp;
//   - every entry live when the last successful Sync returned is returned
//     as it was, unless a later (unsynced) record superseded or truncated
//     it; nothing else comes back;
//   - with writes that reach the disk in order, the open reports no damage
//     (a torn tail is cut) and returns exactly the log after some prefix
//     of the records, at least the synced ones; damage is reported only
//     when unsynced data sat before the last file or a fsync failed;
//   - a fsync failure poisons the log: no later Write, Sync or Reclaim
//     succeeds.
func TestPowerLossPrepareLog(t *testing.T) {
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		rng := rand.New(rand.NewPCG(seed, 0x504C))
		m := vfs.NewMem(seed)
		ordered := rng.IntN(2) == 0
		m.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.3, Ordered: ordered})
		var faults vfs.Faults
		switch rng.IntN(4) {
		case 0:
			faults.SyncFail = 0.05
		case 1:
			faults.NoSpace = 0.02
		}
		const dir = "/wal"
		fromOp, head, view := uint64(0), uint64(0), uint32(1)
		base := map[uint64]consensus.Prepare{}
		written := map[string]bool{}
		l, got, err := OpenPrepareLog(dir, 0, WithFS(m))
		if err != nil || len(got) != 0 {
			return fmt.Errorf("fresh open: %v, %d entries", err, len(got))
		}
		for round := 0; round < 3; round++ {
			l.SetRotateBytes(4 << 10)
			m.SetFaults(faults)
			if rng.IntN(5) > 0 {
				m.PowerOffAfter(rng.IntN(150))
			}
			var recs []plRec
			synced := 0
			fsyncFailed := false
			var trace []string
			entries := func(from uint64, n int) []consensus.Prepare {
				es := make([]consensus.Prepare, n)
				for i := range es {
					es[i] = plPrep(from+uint64(i), view, rng.IntN(1500))
					written[prepKey(&es[i])] = true
				}
				return es
			}
			for step := 0; step < 60; step++ {
				var err error
				what := ""
				switch r := rng.IntN(20); {
				case r < 10:
					es := entries(head+1, 1+rng.IntN(4))
					what = fmt.Sprintf("write ops %d..%d", head+1, head+uint64(len(es)))
					err = l.Write(0, es)
					for _, p := range es {
						recs = append(recs, plRec{p: p})
					}
					head += uint64(len(es))
				case r < 12:
					// A view change: cut the suffix from `from` and re-append.
					from := head + 1
					if back := uint64(rng.IntN(6)); back < from {
						from -= back
					}
					from = max(from, fromOp+1)
					view++
					es := entries(from, rng.IntN(4))
					what = fmt.Sprintf("truncate from %d, re-append %d", from, len(es))
					err = l.Write(from, es)
					recs = append(recs, plRec{trunc: true, from: from})
					for _, p := range es {
						recs = append(recs, plRec{p: p})
					}
					head = from + uint64(len(es)) - 1
				case r < 17:
					what = "sync"
					if err = l.Sync(); err == nil {
						if fsyncFailed && l.poisoned == nil {
							cov["sync_ok_after_dir_fsync_failure"]++
						}
						synced = len(recs)
					}
				case r < 19:
					cp := fromOp + uint64(rng.IntN(int(head-fromOp)+1))
					what = fmt.Sprintf("reclaim %d", cp)
					// The caller reclaims once a durable checkpoint covers
					// cp: a restart opens from cp whatever Reclaim did.
					fromOp = cp
					err = l.Reclaim(cp)
				default:
					what = "close"
					err = l.Close()
				}
				if n := len(l.files); n > 0 {
					what += fmt.Sprintf(" (files %d..%d)", l.files[0].seq, l.files[n-1].seq)
				}
				trace = append(trace, fmt.Sprintf("%s -> %v", what, err))
				if err != nil {
					if errors.Is(err, vfs.ErrPoweredOff) {
						cov["power_cuts"]++
						break
					}
					if l.poisoned != nil {
						// A failed fsync: nothing may succeed after it.
						fsyncFailed = true
						cov["poisoned"]++
						if l.Write(0, entries(head+1, 1)) == nil || l.Sync() == nil || l.Reclaim(fromOp) == nil {
							return fmt.Errorf("round %d: %s failed (%v) and poisoned the log, yet a later call succeeded", round, what, err)
						}
						break
					}
					if strings.Contains(err.Error(), "fsync dir") {
						fsyncFailed = true // a directory fsync: retried by the next Sync
						continue
					}
					if errors.Is(err, syscall.ENOSPC) {
						cov["write_enospc"]++
						break
					}
					return fmt.Errorf("round %d: %s: %v", round, what, err)
				}
			}
			// Which files hold unsynced data (a file the log removed too: its
			// removal may not be durable), and which is last after the crash.
			unsynced := map[string]bool{}
			for _, p := range m.UnsyncedFiles() {
				unsynced[p] = true
			}
			anyUnsynced := len(unsynced) > 0
			m.Crash()
			m.SetFaults(vfs.Faults{})
			files := pwalFiles(m, dir)
			dirtyNonLast := false
			for i, p := range files {
				dirtyNonLast = dirtyNonLast || (i < len(files)-1 && unsynced[p])
			}
			l2, got, err := OpenPrepareLog(dir, fromOp, WithFS(m))
			if err != nil && !errors.Is(err, ErrPrepareLogDamaged) {
				return fmt.Errorf("round %d: reopen: %v", round, err)
			}
			damaged := err != nil
			if damaged {
				cov["reported_damage"]++
				if !(fsyncFailed || dirtyNonLast || (!ordered && anyUnsynced)) {
					return fmt.Errorf("round %d: reopen reports damage with only a torn tail to cut (ordered %v; files after the crash %v, unsynced before it %v): %v", round, ordered, files, unsynced, err)
				}
			}
			for i, p := range got {
				if !written[prepKey(&p)] {
					return fmt.Errorf("round %d: op %d view %d (%d bytes) was never written", round, p.Header.Op, p.Header.View, len(p.Body))
				}
				if p.Header.Op < fromOp || (i > 0 && got[i-1].Header.Op >= p.Header.Op) {
					return fmt.Errorf("round %d: entry %d (op %d) out of order or below fromOp %d", round, i, p.Header.Op, fromOp)
				}
			}
			// Durability: what the last successful Sync covered.
			want := plReplay(base, recs[:synced], fromOp)
			later := recs[synced:]
			byOp := map[uint64]consensus.Prepare{}
			for _, p := range got {
				byOp[p.Header.Op] = p
			}
			for op, w := range want {
				g, ok := byOp[op]
				if ok && samePrepare(g, w) {
					continue
				}
				explained := false
				for _, r := range later {
					explained = explained || (r.trunc && r.from <= op && !ok) || (!r.trunc && ok && samePrepare(r.p, g))
				}
				if !explained {
					return fmt.Errorf("round %d: synced op %d (view %d) lost or changed (returned %v view %d; %d of %d records synced, fromOp %d, ordered %v); calls:\n  %s",
						round, op, w.Header.View, ok, g.Header.View, synced, len(recs), fromOp, ordered, strings.Join(trace, "\n  "))
				}
			}
			for op, g := range byOp {
				if _, ok := want[op]; ok {
					continue
				}
				explained := false
				for _, r := range later {
					explained = explained || (!r.trunc && samePrepare(r.p, g))
				}
				if !explained {
					return fmt.Errorf("round %d: op %d (view %d) returned but neither synced nor written since", round, op, g.Header.View)
				}
			}
			if ordered && !fsyncFailed && !dirtyNonLast {
				prefix := false
				for k := len(recs); k >= synced && !prefix; k-- {
					prefix = sameState(got, plReplay(base, recs[:k], fromOp))
				}
				if !prefix {
					return fmt.Errorf("round %d: writes reached the disk in order, but the reopened log is no prefix of the records", round)
				}
			}
			if len(recs) > synced {
				cov["rounds_with_unsynced_records"]++
			}
			if damaged {
				// As the node does: set the damaged log aside, start empty.
				if err := m.Rename(dir, fmt.Sprintf("%s.damaged-%d", dir, round)); err != nil {
					return err
				}
				if l2, got, err = OpenPrepareLog(dir, fromOp, WithFS(m)); err != nil || len(got) != 0 {
					return fmt.Errorf("round %d: a fresh log after setting the damaged one aside: %v, %d entries", round, err, len(got))
				}
				byOp = map[uint64]consensus.Prepare{}
			}
			l, base = l2, byOp
			head = fromOp
			for op := range base {
				head = max(head, op)
			}
			view++
		}
		addStats(cov, m.Stats())
		return nil
	})
}

// walCall is one call on the metadata WAL as the test made it.
type walCall struct {
	kind   string // append, truncate-append, truncate, compact
	from   uint64
	es     []consensus.Prepare
	upTo   uint64
	needed bool // truncate-append: a tombstone group is written (all or nothing)
}

// walApply applies c (its first k entries) to a copy of state.
func walApply(state map[uint64]consensus.Prepare, c walCall, k int) map[uint64]consensus.Prepare {
	out := make(map[uint64]consensus.Prepare, len(state))
	for op, p := range state {
		out[op] = p
	}
	walApplyInPlace(out, c, k)
	return out
}

func walApplyInPlace(state map[uint64]consensus.Prepare, c walCall, k int) {
	if c.kind == "truncate" || c.kind == "truncate-append" {
		for op := range state {
			if op >= c.from {
				delete(state, op)
			}
		}
	}
	for _, p := range c.es[:k] {
		state[p.Header.Op] = p
	}
}

func aboveOp(state map[uint64]consensus.Prepare, floor uint64) map[uint64]consensus.Prepare {
	out := map[uint64]consensus.Prepare{}
	for op, p := range state {
		if op > floor {
			out[op] = p
		}
	}
	return out
}

// TestPowerLossMetadataWAL: Append (in order, and superseding), truncation
// with and without re-appended entries, Compact; segments roll over; the
// power is cut at a random operation (inside an append, between a write
// and its fdatasync, between a segment's creation and its directory
// fsync, inside a compaction), fsync failures and full-disk refusals are
// drawn in some seeds; Crash and reopen, three rounds per seed:
//   - every call that returned nil survives (entries above the compaction
//     point are exactly the model's); the call the power cut (or a fault
//     failed) left either nothing or its effect: an append a prefix of its
//     entries (a torn tail cut), a truncation group all or nothing;
//   - every entry returned was written, byte for byte;
//   - with writes that reach the disk in order the open never refuses.
//     When sectors of the interrupted append reach the disk out of order
//     (a hole, or a later record whole) the open refuses as the code says
//     (ErrWALCorrupt: a complete record that fails verification, or a
//     valid record after damage); then `check` agrees and `repair`
//     (TruncateWALAtDamage) cuts only the interrupted append: the reopened
//     log holds every synced entry.
//   - a failed fdatasync poisons the WAL (ErrWALPoisoned after it).
func TestPowerLossMetadataWAL(t *testing.T) {
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		rng := rand.New(rand.NewPCG(seed, 0x57414C))
		m := vfs.NewMem(seed)
		ordered := rng.IntN(2) == 0
		m.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.3, Ordered: ordered})
		var faults vfs.Faults
		switch rng.IntN(4) {
		case 0:
			faults.SyncFail = 0.01
		case 1:
			faults.NoSpace = 0.02
		}
		const dir = "/meta"
		durable := map[uint64]consensus.Prepare{}
		written := map[string]bool{}
		compacted, head, view := uint64(0), uint64(0), uint32(1)
		w, got, err := OpenWAL(dir, WithFS(m))
		if err != nil || len(got) != 0 {
			return fmt.Errorf("fresh open: %v, %d entries", err, len(got))
		}
		entries := func(from uint64, n int) []consensus.Prepare {
			es := make([]consensus.Prepare, n)
			for i := range es {
				es[i] = plPrep(from+uint64(i), view, rng.IntN(3000))
				written[prepKey(&es[i])] = true
			}
			return es
		}
		for round := 0; round < 4; round++ {
			m.SetFaults(faults)
			if rng.IntN(8) > 0 {
				m.PowerOffAfter(rng.IntN(200))
			}
			var inflight *walCall
			fsyncFailed := false
			for step := 0; step < 100; step++ {
				var c walCall
				switch r := rng.IntN(20); {
				case r < 13:
					c = walCall{kind: "append", es: entries(head+1, 1+rng.IntN(4))}
				case r < 14 && head > compacted:
					op := compacted + 1 + uint64(rng.IntN(int(head-compacted)))
					view++
					c = walCall{kind: "append", es: entries(op, 1)}
				case r < 17:
					from := head + 1
					if back := uint64(rng.IntN(6)); back < from {
						from -= back
					}
					from = max(from, compacted+1)
					view++
					c = walCall{kind: "truncate-append", from: from, es: entries(from, rng.IntN(4))}
					if rng.IntN(4) == 0 {
						c = walCall{kind: "truncate", from: from}
					}
					for _, s := range w.segs {
						c.needed = c.needed || (s.hasOps && s.maxOp >= from)
					}
				default:
					c = walCall{kind: "compact", upTo: compacted + uint64(rng.IntN(int(head-compacted)+1))}
				}
				switch c.kind {
				case "append":
					err = w.Append(c.es...)
				case "truncate-append":
					err = w.TruncateAndAppend(c.from, c.es)
				case "truncate":
					err = w.TruncateFrom(c.from)
				case "compact":
					err = w.Compact(c.upTo)
				}
				if err == nil {
					walApplyInPlace(durable, c, len(c.es))
					inflight = nil
					if c.kind == "compact" {
						compacted = c.upTo
					}
					for _, p := range c.es {
						head = max(head, p.Header.Op)
					}
					if c.kind != "append" && c.kind != "compact" {
						head = c.from + uint64(len(c.es)) - 1
					}
					continue
				}
				inflight = &c
				if errors.Is(err, vfs.ErrPoweredOff) {
					cov["power_cuts"]++
					break
				}
				if w.poisoned {
					fsyncFailed = true
					cov["poisoned"]++
					if err := w.Append(entries(head+1, 1)...); !errors.Is(err, ErrWALPoisoned) {
						return fmt.Errorf("round %d: %s failed (%v) and poisoned the WAL, yet the next append returned %v", round, c.kind, err, err)
					}
					break
				}
				if errors.Is(err, syscall.ENOSPC) {
					cov["append_enospc"]++
					continue // cut back, not poisoned: the WAL goes on
				}
				return fmt.Errorf("round %d: %s: %v", round, c.kind, err)
			}
			m.Crash()
			m.SetFaults(vfs.Faults{})
			floor := compacted
			if inflight != nil && inflight.kind == "compact" {
				floor = max(floor, inflight.upTo)
			}
			// What the reopened log may hold above floor.
			alts := []map[uint64]consensus.Prepare{aboveOp(durable, floor)}
			if c := inflight; c != nil && c.kind != "compact" {
				switch {
				case c.kind == "append" || (c.kind == "truncate-append" && !c.needed):
					for k := 0; k <= len(c.es); k++ {
						alts = append(alts, aboveOp(walApply(durable, *c, k), floor))
					}
				default:
					alts = append(alts, aboveOp(walApply(durable, *c, len(c.es)), floor))
				}
			}
			check := func(got []consensus.Prepare, what string) error {
				state := map[uint64]consensus.Prepare{}
				for i, p := range got {
					if !written[prepKey(&p)] {
						return fmt.Errorf("round %d (%s): op %d view %d was never written", round, what, p.Header.Op, p.Header.View)
					}
					if i > 0 && got[i-1].Header.Op >= p.Header.Op {
						return fmt.Errorf("round %d (%s): entries out of op order at %d", round, what, i)
					}
					state[p.Header.Op] = p
				}
				above := aboveOp(state, floor)
				for _, alt := range alts {
					if len(alt) != len(above) {
						continue
					}
					same := true
					for op, p := range alt {
						g, ok := above[op]
						same = same && ok && samePrepare(g, p)
					}
					if same {
						return nil
					}
				}
				ks := make([]uint64, 0, len(above))
				for op := range above {
					ks = append(ks, op)
				}
				sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
				return fmt.Errorf("round %d (%s): reopened WAL holds ops %v above %d: not the synced log (%d ops) nor it with the interrupted %v (ordered %v)",
					round, what, ks, floor, len(alts[0]), inflight != nil, ordered)
			}
			w2, got, err := OpenWAL(dir, WithFS(m))
			if err != nil {
				refusable := inflight != nil && inflight.kind != "compact" && (!ordered || fsyncFailed)
				if !errors.Is(err, ErrWALCorrupt) || !refusable {
					return fmt.Errorf("round %d: reopen (interrupted %+v, ordered %v): %v", round, inflight, ordered, err)
				}
				switch {
				case strings.Contains(err.Error(), "is complete but fails verification"):
					cov["refused_torn_append_complete_record"]++ // a hole inside the record, its last sector kept
				case strings.Contains(err.Error(), "interior corruption"):
					cov["refused_torn_append_valid_record_after"]++ // a later record of the append whole
				default:
					cov["refused_torn_append_other"]++
				}
				if len(CheckMetadata(dir, WithFS(m))) == 0 {
					return fmt.Errorf("round %d: the open refuses (%v) but check finds nothing", round, err)
				}
				if _, err := TruncateWALAtDamage(dir, WithFS(m)); err != nil {
					return fmt.Errorf("round %d: repair: %v", round, err)
				}
				if w2, got, err = OpenWAL(dir, WithFS(m)); err != nil {
					return fmt.Errorf("round %d: reopen after repair: %v", round, err)
				}
				if err := check(got, "after repair"); err != nil {
					return err
				}
			} else if err := check(got, "reopen"); err != nil {
				return err
			}
			if _, n := w2.TornTail(); n > 0 {
				cov["torn_tails_cut"]++
			}
			w, durable = w2, map[uint64]consensus.Prepare{}
			compacted = floor
			head = compacted
			for _, p := range got {
				durable[p.Header.Op] = p
				head = max(head, p.Header.Op)
			}
			view++
		}
		cov["segments_at_end"] += w.Segments()
		addStats(cov, m.Stats())
		return nil
	})
}

// TestPowerLossSuperblock: Write cut at every kind of point (the temp
// file's write, its fsync, the rename, the directory fsync), fsync
// failures drawn in some seeds, Crash, reopen: the superblock always
// opens, with the state of the last Write that returned nil or of the
// one cut short, never an older one. Then a flipped byte in the older
// copy still opens with the newer state, and in the newer copy refuses
// rather than fall back to the older.
func TestPowerLossSuperblock(t *testing.T) {
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		rng := rand.New(rand.NewPCG(seed, 0x53424C4B))
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.3, Ordered: rng.IntN(2) == 0})
		var faults vfs.Faults
		if rng.IntN(3) == 0 {
			faults.SyncFail = 0.1
		}
		const dir = "/meta"
		sb, last, err := OpenSuperblock(dir, testIdentity, WithFS(m))
		if err != nil || last != nil {
			return fmt.Errorf("fresh open: %v %v", last, err)
		}
		for i := 0; i < 24; i++ {
			next := sbState(uint32(i+1), uint64(10*i))
			if rng.IntN(3) == 0 {
				next.ViewHeaders = viewHeadersFor(uint64(10*i+5), 1+rng.IntN(40))
			}
			m.SetFaults(faults)
			if rng.IntN(3) > 0 {
				m.PowerOffAfter(rng.IntN(10))
			}
			werr := sb.Write(next)
			m.PowerOffAfter(-1)
			if werr == nil && !m.PoweredOff() && rng.IntN(3) > 0 {
				last = &next
				continue
			}
			if werr != nil {
				cov["writes_failed"]++
			}
			m.Crash()
			m.SetFaults(vfs.Faults{})
			sb2, got, err := OpenSuperblock(dir, testIdentity, WithFS(m))
			if err != nil {
				return fmt.Errorf("write %d (err %v): reopen: %v", i, werr, err)
			}
			switch {
			case got != nil && reflect.DeepEqual(*got, next):
				cov["new_state"]++
			case werr != nil && ((last == nil && got == nil) || (last != nil && got != nil && reflect.DeepEqual(*got, *last))):
				cov["old_state"]++
			default:
				return fmt.Errorf("write %d (err %v): reopened state view %v, want the new one (view %d) or, the write having failed, the old one", i, werr, got, next.View)
			}
			sb, last = sb2, got
		}
		// A flipped byte: in the older copy, booted past; in the newer, refused.
		if sb.newest < 0 {
			return nil
		}
		older := path.Join(dir, slotNames[1-sb.newest])
		newer := path.Join(dir, slotNames[sb.newest])
		if st, err := m.Stat(older); err == nil && st.Size() > 0 {
			// Mostly in the payload past view and commit, where the copy is
			// provably the older one.
			at := rng.Int64N(st.Size())
			if rng.IntN(4) > 0 {
				at = superblockHeaderBytes + 34 + rng.Int64N(st.Size()-superblockHeaderBytes-34)
			}
			if err := m.FlipByte(older, at); err != nil {
				return err
			}
			// Booted from the newer copy, or refused where the flip hit a
			// field (sequence, view, commit) that could make it the newer.
			sb2, got, err := OpenSuperblock(dir, testIdentity, WithFS(m))
			switch {
			case errors.Is(err, ErrSuperblockUnreadable):
				cov["older_copy_flipped_refused"]++
			case err != nil:
				return fmt.Errorf("older copy %s damaged: %v", older, err)
			case got == nil || !reflect.DeepEqual(*got, *last) || sb2.OlderCopyDamage() == "":
				return fmt.Errorf("older copy damaged: opened view %v (older-copy note %q)", got, sb2.OlderCopyDamage())
			default:
				cov["older_copy_flipped_booted"]++
			}
		}
		st, err := m.Stat(newer)
		if err != nil {
			return err
		}
		if err := m.FlipByte(newer, rng.Int64N(st.Size())); err != nil {
			return err
		}
		if _, got, err := OpenSuperblock(dir, testIdentity, WithFS(m)); !errors.Is(err, ErrSuperblockUnreadable) {
			return fmt.Errorf("newer copy damaged: opened (%v, view %v) instead of refusing", err, got)
		}
		cov["newer_copy_flipped"]++
		addStats(cov, m.Stats())
		return nil
	})
}

// TestPowerLossSnapshotFile: WriteSnapshot cut at every kind of point,
// fsync failures drawn: after the crash ReadSnapshot returns the last
// snapshot written without error or the one cut short, never an error.
func TestPowerLossSnapshotFile(t *testing.T) {
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		rng := rand.New(rand.NewPCG(seed, 0x534E50))
		m := vfs.NewMem(seed)
		m.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.3, Ordered: rng.IntN(2) == 0})
		var faults vfs.Faults
		if rng.IntN(3) == 0 {
			faults.SyncFail = 0.1
		}
		const dir = "/snap"
		var last *consensus.Snapshot
		for i := 0; i < 12; i++ {
			next := snap(uint64(i+1), strings.Repeat(fmt.Sprintf("state %d;", i), 1+rng.IntN(400)))
			m.SetFaults(faults)
			if rng.IntN(3) > 0 {
				m.PowerOffAfter(rng.IntN(10))
			}
			werr := WriteSnapshot(dir, next, WithFS(m))
			m.PowerOffAfter(-1)
			if werr == nil && !m.PoweredOff() && rng.IntN(2) > 0 {
				last = &next
				continue
			}
			m.Crash()
			m.SetFaults(vfs.Faults{})
			got, err := ReadSnapshot(dir, WithFS(m))
			if err != nil {
				return fmt.Errorf("snapshot %d (err %v): read back: %v", i, werr, err)
			}
			switch {
			case got != nil && reflect.DeepEqual(*got, next):
				cov["new"]++
			case werr != nil && ((last == nil && got == nil) || (last != nil && got != nil && reflect.DeepEqual(*got, *last))):
				cov["old"]++
			default:
				return fmt.Errorf("snapshot %d (err %v): read back op %v, want %d or, the write having failed, the one before", i, werr, got, next.Op)
			}
			last = got
		}
		addStats(cov, m.Stats())
		return nil
	})
}

// TestPowerLossSuperblockLog: batches of group states appended to the
// node's superblock log (one write, one fdatasync each), compactions
// (temp file, fsync, rename, directory fsync) as the file passes its
// bound, the power cut at a random operation, fsync failures drawn in
// some seeds; Crash and reopen, three rounds per seed:
//   - every group's newest state is the one of the last batch that
//     returned nil for it, or of the batch the cut interrupted;
//     ReadSuperblockLog agrees;
//   - with in-order sectors the open never refuses; out of order (or
//     after a failed fsync, whose dropped pages come back any way), it
//     may refuse (ErrSuperblockLogDamaged) only after an interrupted batch;
//   - a failed fdatasync poisons the log (ErrSuperblockLogPoisoned).
func TestPowerLossSuperblockLog(t *testing.T) {
	type version struct {
		seq  uint64
		view uint32
	}
	forSeeds(t, func(seed uint64, cov map[string]int) error {
		rng := rand.New(rand.NewPCG(seed, 0x53424C52))
		m := vfs.NewMem(seed)
		defer func() { addStats(cov, m.Stats()) }()
		ordered := rng.IntN(2) == 0
		m.SetCrashModel(vfs.CrashModel{Keep: 0.4, Torn: 0.3, Ordered: ordered})
		var faults vfs.Faults
		if rng.IntN(4) == 0 {
			faults.SyncFail = 0.02
		}
		const dir, keys = "/groups", 24
		durable := map[int]version{}
		next := map[int]version{}
		state := func(i int, v version) SuperblockLogEntry {
			st := SuperblockState{Identity: sbLogID, OffsetFrontier: uint64(i),
				VsrState: consensus.VsrState{View: v.view, LogView: v.view, CommitMax: uint64(v.view) * 3,
					ViewHeaders: viewHeadersFor(uint64(v.view)*10, 1+int(v.view)%40)}}
			return SuperblockLogEntry{Key: sbKey(i), Sequence: v.seq, State: st}
		}
		l, err := OpenSuperblockLog(dir, sbLogID, 0, nil, WithFS(m))
		if err != nil {
			return fmt.Errorf("fresh open: %v", err)
		}
		for round := 0; round < 3; round++ {
			m.SetFaults(faults)
			if rng.IntN(5) > 0 {
				m.PowerOffAfter(rng.IntN(300))
			}
			var inflight map[int]version
			var lastErr error
			syncFailed := false
			for step := 0; step < 100; step++ {
				batch := map[int]version{}
				var entries []SuperblockLogEntry
				for _, i := range rng.Perm(keys)[:1+rng.IntN(6)] {
					v := version{seq: next[i].seq + 1, view: next[i].view + 1 + uint32(rng.IntN(3))}
					next[i], batch[i] = v, v
					entries = append(entries, state(i, v))
				}
				failures, size := m.Stats().SyncFailures, l.Size()
				err := l.Append(entries)
				if l.Size() < size {
					cov["compactions"]++
				}
				if err == nil && m.PoweredOff() {
					cov["cut_inside_compaction"]++ // the batch was synced: Append says nil
				}
				if err == nil {
					for i, v := range batch {
						durable[i] = v
					}
					continue
				}
				inflight, lastErr = batch, err
				syncFailed = m.Stats().SyncFailures > failures
				switch {
				case m.PoweredOff():
					cov["power_cuts"]++
				case errors.Is(err, ErrSuperblockLogPoisoned) && syncFailed:
					cov["poisoned_by_fsync_failure"]++
					if err := l.Append([]SuperblockLogEntry{state(0, version{seq: next[0].seq + 1, view: next[0].view + 1})}); !errors.Is(err, ErrSuperblockLogPoisoned) {
						return fmt.Errorf("round %d: append after a failed sync: %v", round, err)
					}
				default:
					return fmt.Errorf("round %d: append: %v", round, err)
				}
				break
			}
			m.Crash()
			m.SetFaults(vfs.Faults{})
			l2, err := OpenSuperblockLog(dir, sbLogID, 0, nil, WithFS(m))
			if err != nil {
				if !errors.Is(err, ErrSuperblockLogDamaged) || inflight == nil || (ordered && !syncFailed) {
					return fmt.Errorf("round %d: reopen (interrupted batch %v by %v, ordered %v): %v", round, inflight != nil, lastErr, ordered, err)
				}
				cov["refused_torn_batch"]++
				return nil // the node refuses to boot here; nothing more to check in this seed
			}
			states, damage, err := ReadSuperblockLog(dir, WithFS(m))
			if err != nil || damage != "" {
				return fmt.Errorf("round %d: ReadSuperblockLog: %v %q", round, err, damage)
			}
			for i := 0; i < keys; i++ {
				seq, st, ok, err := l2.Latest(sbKey(i))
				if err != nil {
					return fmt.Errorf("round %d: key %d: %v", round, i, err)
				}
				got := version{}
				if ok {
					got = version{seq, st.View}
					if st.OffsetFrontier != uint64(i) || len(st.ViewHeaders) != 1+int(st.View)%40 {
						return fmt.Errorf("round %d: key %d: a record of another key or state", round, i)
					}
					if rs := states[sbKey(i)]; rs == nil || rs.View != st.View {
						return fmt.Errorf("round %d: key %d: ReadSuperblockLog says %v, Latest view %d", round, i, rs, st.View)
					}
				}
				want, in := durable[i], inflight[i]
				if got != want && (inflight == nil || got != in) {
					return fmt.Errorf("round %d: key %d: seq %d view %d after the crash, want the synced seq %d view %d or the interrupted %+v",
						round, i, got.seq, got.view, want.seq, want.view, in)
				}
				if inflight != nil && got == in && in != want {
					cov["interrupted_records_kept"]++
				}
				durable[i], next[i] = got, version{seq: max(got.seq, next[i].seq), view: max(got.view, next[i].view)}
			}
			l = l2
		}
		cov["bytes_at_end"] += int(l.Size())
		return nil
	})
}
