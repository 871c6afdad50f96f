package sim

import (
	"fmt"

	"github.com/lodestream/lodestream/consensus"
)

// Coverage counts how often the faults and protocol paths a sweep is
// meant to exercise actually happened.
type Coverage struct {
	CrashesMidPersist uint64 // crash with a Ready partly durable
	TornRecords       uint64 // journal records left torn by a crash
	CrashesMidSend    uint64
	Restarts          uint64
	StateTransfers    uint64 // snapshots installed from Ready.Snapshot
	Checkpoints       uint64
	Partitions        uint64
	Clogs             uint64
	Filters           uint64
	Dropped           uint64 // packets lost (loss, partition, filter)
	Duplicated        uint64
	Evicted           uint64 // packets evicted from full links
	CachedReplies     uint64 // deduplicated retries answered from the reply ring
	Abandoned         uint64 // client requests given up (eviction, response budget)
	Truncations       uint64 // Ready.Truncate: a divergent suffix removed
	HeldReadys        uint64 // Readys persisted and held before their Advance (async profile)
	OutdatedDropped   uint64 // messages of held Readys dropped at send: the replica had moved on
	SkippedTicks      uint64 // replica ticks skipped until a timer was due (skip profile)
	PowerLosses       uint64 // nodes that lost their page cache (powerloss profile)
	RackPowerLosses   uint64 // power losses of every node at once
	PageCachesLost    uint64 // journals that lost unsynced records to a power loss
	AmnesiacRestarts  uint64 // replicas restarted with Restored.Amnesia
	LostOps           uint64 // committed ops a rack power loss dropped (excused)
	// The storagelost profiles (storagelost.go).
	StorageLosses              uint64     // crashes that lost storage (one or more of the node's groups)
	StorageLostReplicas        uint64     // replicas (node, group) whose storage was lost
	StorageWipes               uint64     // of those, wiped (superblock and snapshot gone too)
	StorageLossesRefused       uint64     // losses not drawn: more than f replicas of a group would be lost
	StorageLossesOverTolerance uint64     // losses that left more than f replicas of a group lost (unbounded seeds)
	StorageLostRestarts        uint64     // restarts with Restored.StorageLost
	StorageLostRejoins         uint64     // lost replicas that rejoined (the marker cleared)
	StorageOverToleranceRuns   uint64     // runs with more than f replicas of a group still lost at the heal
	Delivered                  [32]uint64 // replica messages delivered, by kind
}

func (c *Coverage) add(o Coverage) {
	c.CrashesMidPersist += o.CrashesMidPersist
	c.TornRecords += o.TornRecords
	c.CrashesMidSend += o.CrashesMidSend
	c.Restarts += o.Restarts
	c.StateTransfers += o.StateTransfers
	c.Checkpoints += o.Checkpoints
	c.Partitions += o.Partitions
	c.Clogs += o.Clogs
	c.Filters += o.Filters
	c.Dropped += o.Dropped
	c.Duplicated += o.Duplicated
	c.Evicted += o.Evicted
	c.CachedReplies += o.CachedReplies
	c.Abandoned += o.Abandoned
	c.Truncations += o.Truncations
	c.HeldReadys += o.HeldReadys
	c.OutdatedDropped += o.OutdatedDropped
	c.SkippedTicks += o.SkippedTicks
	c.PowerLosses += o.PowerLosses
	c.RackPowerLosses += o.RackPowerLosses
	c.PageCachesLost += o.PageCachesLost
	c.AmnesiacRestarts += o.AmnesiacRestarts
	c.LostOps += o.LostOps
	c.StorageLosses += o.StorageLosses
	c.StorageLostReplicas += o.StorageLostReplicas
	c.StorageWipes += o.StorageWipes
	c.StorageLossesRefused += o.StorageLossesRefused
	c.StorageLossesOverTolerance += o.StorageLossesOverTolerance
	c.StorageLostRestarts += o.StorageLostRestarts
	c.StorageLostRejoins += o.StorageLostRejoins
	c.StorageOverToleranceRuns += o.StorageOverToleranceRuns
	for i := range c.Delivered {
		c.Delivered[i] += o.Delivered[i]
	}
}

// deliveredString lists the message kinds delivered, e.g.
// "Prepare:120 PrepareOk:118 ...".
func (c *Coverage) deliveredString() string {
	var b []byte
	for k, n := range c.Delivered {
		if n == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, "%s:%d", messageKindName(consensus.MessageKind(k)), n)
	}
	return string(b)
}

// Result summarises one run.
type Result struct {
	Seed         uint64
	Scenario     Scenario
	Ticks        uint64
	CommittedOps uint64 // over both groups
	ViewChanges  uint64 // highest view reached, summed over groups
	Crashes      uint64
	Coverage     Coverage
	Acks         uint64
	Events       uint64
	TraceHash    uint64
	Violations   []Violation
}
