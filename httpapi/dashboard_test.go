package httpapi

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

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
	for _, m := range names {
		name := strings.TrimSuffix(m[1], "_bucket")
		name = strings.TrimSuffix(name, "_total")
		if !strings.Contains(scrape, "# TYPE "+name+" ") && !strings.Contains(scrape, "# TYPE "+name+"_total ") {
			t.Errorf("dashboard queries %s, /metrics has no such metric", m[1])
		}
	}
}
