package node

import (
	"slices"
	"testing"
)

// Partition groups are reported in aggregate plus the PartitionLagTopN that lag most.
func TestObservePartitionsBoundedSeries(t *testing.T) {
	var o Observation
	for i := range 20 {
		e := &partitionEntry{key: partitionKey{stream: 1, topic: 2, partition: uint32(i)}}
		e.pubNormal.Store(i != 3)
		e.pubView.Store(uint32(i % 5))
		e.pubCommitMin.Store(100)
		e.pubCommitMax.Store(100 + uint64(i)) // partition i lags i ops
		o.observePartition(e)
	}
	if o.PartitionViewChanges != 1 || o.PartitionViewMax != 4 || o.PartitionLagMax != 19 || o.PartitionLagSum != 190 {
		t.Fatalf("aggregates: %+v", o)
	}
	if len(o.PartitionLagging) != PartitionLagTopN {
		t.Fatalf("%d lagging groups named, want %d", len(o.PartitionLagging), PartitionLagTopN)
	}
	var parts []uint32
	for _, p := range o.PartitionLagging {
		if p.LagOps != uint64(p.Partition) {
			t.Errorf("partition %d lag %d", p.Partition, p.LagOps)
		}
		parts = append(parts, p.Partition)
	}
	slices.Sort(parts)
	if !slices.Equal(parts, []uint32{12, 13, 14, 15, 16, 17, 18, 19}) {
		t.Fatalf("named %v, want the 8 that lag most", parts)
	}
}
