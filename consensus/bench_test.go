package consensus

import (
	"testing"
	"time"
)

// benchCluster wires replicas in-process with no I/O: the cost measured is
// the state machine's own (prepare, checksum, journal, acks, commit).
type benchCluster struct {
	replicas  []*Replica
	queue     []Message
	next      []Message
	committed int
}

func newBenchCluster(b *testing.B, n int, slots uint32) *benchCluster {
	c := &benchCluster{}
	for i := 0; i < n; i++ {
		cfg := DefaultConfig(uint8(i), uint8(n))
		cfg.Incarnation = Uint128{Lo: uint64(i) + 1}
		cfg.JournalSlots = slots
		r, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.replicas = append(c.replicas, r)
	}
	return c
}

func (c *benchCluster) drain(i int) {
	r := c.replicas[i]
	for r.HasReady() {
		rd := r.Ready()
		c.queue = append(c.queue, rd.Messages...)
		if i == 0 {
			c.committed += len(rd.Committed)
		}
		r.Advance(rd)
		if i == 0 && len(rd.Committed) > 0 && r.NeedsCheckpoint() {
			r.Checkpoint(Snapshot{Op: r.CommitMin(), Checksum: SnapshotChecksum(nil)})
		}
	}
}

func (c *benchCluster) deliver() {
	for len(c.queue) > 0 {
		c.queue, c.next = c.next[:0], c.queue
		for _, m := range c.next {
			c.replicas[m.To].Step(m)
			c.drain(int(m.To))
		}
	}
}

func benchCommit(b *testing.B, n int) { benchCommitBody(b, n, 128, 4096) }

func benchCommitBody(b *testing.B, n, size int, slots uint32) {
	c := newBenchCluster(b, n, slots)
	body := make([]byte, size)
	depth := int(c.replicas[0].cfg.PrepareQueueDepth)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for rounds := 0; c.committed < b.N; rounds++ {
		if rounds > 4*b.N+100 {
			b.Fatalf("no progress: %d of %d committed", c.committed, b.N)
		}
		for k := 0; k < depth && c.committed+k < b.N; k++ {
			c.replicas[0].Propose(Request{Body: body, Tag: uint64(k)})
		}
		c.drain(0)
		c.deliver()
		c.drain(0)
		if n > 1 {
			// Backups checkpoint too, so their journals keep room.
			for i := 1; i < n; i++ {
				if c.replicas[i].NeedsCheckpoint() {
					c.replicas[i].Checkpoint(Snapshot{Op: c.replicas[i].CommitMin(), Checksum: SnapshotChecksum(nil)})
				}
			}
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(c.committed)/elapsed.Seconds(), "ops/s")
}

// BenchmarkCommitN1: a single replica commits on its own persisted prepare.
func BenchmarkCommitN1(b *testing.B) { benchCommit(b, 1) }

// BenchmarkCommitN3: three replicas, direct fan-out, quorum 2.
func BenchmarkCommitN3(b *testing.B) { benchCommit(b, 3) }

// BenchmarkCommitN3Body1MiB: BenchmarkCommitN3 with the 1 MiB bodies of a
// partition batch, delivered without a copy as the bus delivers its own
// fresh frames: bytes/op shows what the replicas copy (Propose's copy on
// the primary; a backup journals the received body as it is).
// (128 journal slots, where the bench loop keeps committing: the retained
// bodies stay within about 128 MiB per replica.)
func BenchmarkCommitN3Body1MiB(b *testing.B) { benchCommitBody(b, 3, 1<<20, 128) }
