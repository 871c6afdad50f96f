package bus

import (
	"syscall"
	"testing"
	"time"

	"github.com/lodestream/lodestream/consensus"
)

// BenchmarkBusBroadcastPrepare: replica 0 broadcasts 1 MiB prepares to
// replicas 1 and 2 over loopback TCP (SendShared, as a partition primary
// does); each op is one prepare received by both. Besides ns/op it reports
// the whole process's CPU per broadcast GB (sender and both receivers:
// encode, socket writes and reads, decode), which is what the cluster's
// per-GB cost sees and is steadier than wall time on a shared machine.
func BenchmarkBusBroadcastPrepare(b *testing.B) {
	c := newCluster(b, 3, func(_ uint8, o *Options) {
		o.MessageBus.MaxMessageSize = 2 << 20
		o.MessageBus.PeerQueueCapacity = 64
	})
	waitFor(b, "connections", c.allConnected)
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	p := consensus.Prepare{Header: consensus.PrepareHeader{Op: 1, Checksum: 1}, Body: body}
	m := consensus.Message{Kind: consensus.MsgPrepare, Group: 1, From: 0, View: 1, Prepare: &p}
	recv := func(id int) {
		select {
		case <-c.nodes[id].inbox:
		case <-time.After(5 * time.Second):
			b.Fatalf("replica %d received nothing", id)
		}
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	const window = 8 // prepares in flight, as a shard's pipelines keep
	sent := 0
	for i := 0; i < b.N; i++ {
		for sent < b.N && sent-i < window {
			c.nodes[0].bus.SendShared([]uint8{1, 2}, &m)
			sent++
		}
		recv(1)
		recv(2)
	}
	b.StopTimer()
	b.ReportMetric((processCPU()-cpu0).Seconds()/(float64(b.N)*float64(len(body))/1e9), "cpu-s/GB")
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
