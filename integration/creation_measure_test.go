package integration

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestMeasureCreateTopicCost (issue 15 point 9; a measurement, asserts no
// timing): CreateTopic latency (10 partitions each) as partitions
// accumulate. LODESTREAM_MEASURE_PARTITIONS sets the total (default 12000).
//
//	LODESTREAM_MEASURE=1 go test -count=1 -v -run TestMeasureCreateTopicCost -timeout 30m ./integration/
func TestMeasureCreateTopicCost(t *testing.T) {
	measureEnabled(t)
	total := 12000
	if v, err := strconv.Atoi(os.Getenv("LODESTREAM_MEASURE_PARTITIONS")); err == nil && v > 0 {
		total = v
	}
	srv := startServer(t, "", "IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=0")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	_, err := c.CreateStream(ctx, "s")
	must(t, err)
	var window []time.Duration
	for i := 0; i < total/10; i++ {
		start := time.Now()
		_, err := c.CreateTopic(ctx, id(0), fmt.Sprintf("t%d", i), 10)
		must(t, err)
		window = append(window, time.Since(start))
		if len(window) == 100 {
			var sum time.Duration
			for _, d := range window {
				sum += d
			}
			t.Logf("partitions %5d: mean CreateTopic %v", (i+1)*10, sum/100)
			window = window[:0]
		}
	}
}
