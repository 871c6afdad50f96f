package node

import "testing"

// Regression: each retention turn restarted from the first topic, so with
// more than retentionTopicsPerTurn topics the later ones were never reached.
func TestRetentionTurnsReachEveryTopic(t *testing.T) {
	const count, limit = 2500, 1024
	seen := make([]int, count)
	cursor := 0
	turns := (count + limit - 1) / limit
	for range turns {
		var turn []int
		turn, cursor = retentionTurn(count, cursor, limit)
		if len(turn) != limit {
			t.Fatalf("a turn examined %d topics, want %d", len(turn), limit)
		}
		for _, i := range turn {
			seen[i]++
		}
	}
	for i, n := range seen {
		if n == 0 {
			t.Fatalf("topic %d (of %d) never examined in %d turns", i, count, turns)
		}
	}
}

func TestRetentionTurnSmallAndShrinkingLists(t *testing.T) {
	turn, next := retentionTurn(3, 0, 1024)
	if len(turn) != 3 || next != 0 {
		t.Fatalf("3 topics: turn %v next %d", turn, next)
	}
	if turn, next = retentionTurn(0, 5, 1024); turn != nil || next != 0 {
		t.Fatalf("no topics: turn %v next %d", turn, next)
	}
	// Topics deleted since the cursor was set: restart from the first.
	if turn, _ = retentionTurn(4, 900, 2); turn[0] != 0 || turn[1] != 1 {
		t.Fatalf("cursor past the end: turn %v", turn)
	}
}
