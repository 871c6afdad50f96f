package httpapi

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// describedNames are the metric names the registry can serve.
func describedNames(m *Metrics) map[string]bool {
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		for _, c := range m.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	out := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		if m := re.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// conditional metrics are served only when there is something to report:
// the replica bus (clusters), lagging partition groups, fsync kinds once
// one happened.
var conditional = map[string]bool{
	"iggy_replica_bus_queue_frames": true, "iggy_replica_bus_frames_dropped": true, "iggy_replica_bus_frames_sent": true,
	"iggy_replica_bus_frames_received": true, "iggy_replica_bus_frames_invalid": true, "iggy_partition_commit_lag_ops": true,
	"iggy_fsync_duration_seconds": true,
}

// TestDashboardUsesServedMetrics: every series the Grafana dashboard
// queries is one /metrics serves.
func TestDashboardUsesServedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	scrape := string(expect(t, ts.do("GET", "/metrics", tok, nil), 200, "").body)
	names := regexp.MustCompile(`([a-z_]+)\{instance`).FindAllStringSubmatch(string(raw), -1)
	if len(names) < 10 {
		t.Fatalf("found only %d queried series", len(names))
	}
	described := describedNames(NewMetrics())
	for _, m := range names {
		name := strings.TrimSuffix(m[1], "_bucket")
		name = strings.TrimSuffix(name, "_total")
		if !described[name] && !described[name+"_total"] {
			t.Errorf("dashboard queries %s, the registry has no such metric", m[1])
			continue
		}
		if conditional[name] {
			continue
		}
		if !strings.Contains(scrape, "# TYPE "+name+" ") && !strings.Contains(scrape, "# TYPE "+name+"_total ") {
			t.Errorf("dashboard queries %s, /metrics of a single node has no such metric", m[1])
		}
	}
}
