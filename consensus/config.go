package consensus

import "fmt"

// Bounds on configuration and on protocol structures.
const (
	replicaCountMax        = 32  // ack and nack bitsets are sized for 32 replicas
	prepareQueueDepthMax   = 127 // pipeline depth upper bound (spec §3.1)
	dvcSuffixHeadersMax    = 128 // DoViewChange / StartView suffix bound (spec §3.5 step 3)
	repairGapDebounceFloor = 50  // ticks; 500 ms floor from the docs
	repairChunkMaxLimit    = 1024
	messagesPerReadyMax    = 8192 // outbox cap per Ready; overflow is dropped (retransmit covers it)
	stateChunkBytesMax     = 256 << 10
	transferStallRetries   = 5
)

// ViewHeadersMax bounds VsrState.ViewHeaders (the StartView suffix kept
// durable with log_view): the same bound as a DVC / StartView suffix.
const ViewHeadersMax = dvcSuffixHeadersMax

// DefaultConfig returns a Config with the documented defaults (spec §3.3, §6.1)
// for the given replica. Seed and Incarnation are left for the caller.
func DefaultConfig(replicaID, replicaCount uint8) Config {
	return Config{
		ReplicaID:                 replicaID,
		ReplicaCount:              replicaCount,
		PrepareRetransmitTicks:    25,
		CommitBroadcastTicks:      50,
		HeartbeatTimeoutTicks:     500,
		ViewChangeRetransmitTicks: 50,
		ViewChangeStatusTicks:     500,
		RequestStartViewTicks:     100,
		ViewProbeAttemptsMax:      5,
		RepairRetryTicks:          100,
		RepairGapDebounceTicks:    100,
		RepairChunkMax:            128,
		PrepareQueueDepth:         32,
		JournalSlots:              1024,
	}
}

// Validate reports the first configuration rule cfg breaks.
func (cfg *Config) Validate() error {
	if cfg.ReplicaCount < 1 || cfg.ReplicaCount > replicaCountMax {
		return fmt.Errorf("consensus config: replica_count %d must be 1..%d", cfg.ReplicaCount, replicaCountMax)
	}
	if cfg.ReplicaID >= cfg.ReplicaCount {
		return fmt.Errorf("consensus config: replica_id %d must be < replica_count %d", cfg.ReplicaID, cfg.ReplicaCount)
	}
	ticks := []struct {
		name  string
		value uint32
	}{
		{"prepare_retransmit_ticks", cfg.PrepareRetransmitTicks},
		{"commit_broadcast_ticks", cfg.CommitBroadcastTicks},
		{"heartbeat_timeout_ticks", cfg.HeartbeatTimeoutTicks},
		{"view_change_retransmit_ticks", cfg.ViewChangeRetransmitTicks},
		{"view_change_status_ticks", cfg.ViewChangeStatusTicks},
		{"request_start_view_ticks", cfg.RequestStartViewTicks},
		{"repair_retry_ticks", cfg.RepairRetryTicks},
		{"repair_gap_debounce_ticks", cfg.RepairGapDebounceTicks},
	}
	for _, t := range ticks {
		if t.value == 0 {
			return fmt.Errorf("consensus config: %s must be > 0", t.name)
		}
	}
	if cfg.HeartbeatTimeoutTicks <= cfg.CommitBroadcastTicks {
		return fmt.Errorf("consensus config: heartbeat_timeout_ticks %d must exceed commit_broadcast_ticks %d",
			cfg.HeartbeatTimeoutTicks, cfg.CommitBroadcastTicks)
	}
	if cfg.ViewProbeAttemptsMax < 1 || cfg.ViewProbeAttemptsMax > 100 {
		return fmt.Errorf("consensus config: view_probe_attempts_max %d must be 1..100", cfg.ViewProbeAttemptsMax)
	}
	if cfg.RepairChunkMax < 1 || cfg.RepairChunkMax > repairChunkMaxLimit {
		return fmt.Errorf("consensus config: repair_chunk_max %d must be 1..%d", cfg.RepairChunkMax, repairChunkMaxLimit)
	}
	if cfg.PrepareQueueDepth < 1 || cfg.PrepareQueueDepth > prepareQueueDepthMax {
		return fmt.Errorf("consensus config: prepare_queue_depth %d must be 1..%d", cfg.PrepareQueueDepth, prepareQueueDepthMax)
	}
	if cfg.JournalSlots < 2*cfg.PrepareQueueDepth {
		return fmt.Errorf("consensus config: journal_slots %d must be >= 2 x prepare_queue_depth (%d)",
			cfg.JournalSlots, 2*cfg.PrepareQueueDepth)
	}
	if cfg.ClientTableMax == 1 || cfg.ClientTableMax > 65536 {
		return fmt.Errorf("consensus config: client_table_max %d must be 0 (disabled) or 2..65536", cfg.ClientTableMax)
	}
	if cfg.TestingReplicationQuorum > cfg.ReplicaCount {
		return fmt.Errorf("consensus config: testing replication quorum %d exceeds replica_count %d",
			cfg.TestingReplicationQuorum, cfg.ReplicaCount)
	}
	return nil
}

// ReplicationQuorum is the number of replicas (primary included) that must
// hold a prepare before it commits: 2 when n = 2, else min(ceil(n/2), 3).
func ReplicationQuorum(n int) int {
	if n == 2 {
		return 2
	}
	return min((n+1)/2, 3)
}

// ViewChangeQuorum is the number of DoViewChange messages (and of nacks) the
// new primary needs: 2 when n = 2, else n - ReplicationQuorum(n) + 1. Any
// view-change quorum intersects any replication quorum.
func ViewChangeQuorum(n int) int {
	if n == 2 {
		return 2
	}
	return n - ReplicationQuorum(n) + 1
}

// primaryIndex is the primary of view v: v mod n, the same for every group.
func primaryIndex(view uint32, n uint8) uint8 {
	return uint8(view % uint32(n))
}
