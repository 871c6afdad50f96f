package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteComparison prints, for runs of one workload over several
// transports, each run's producer and consumer throughput and its ratio
// to the first run's (TCP when it was named first).
func WriteComparison(w io.Writer, runs []*Summary) error {
	if len(runs) < 2 {
		return nil
	}
	base := runs[0]
	mbps := func(k *KindSummary) float64 {
		if k == nil {
			return 0
		}
		return k.MBPerSecond
	}
	ratio := func(v, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v/b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "transport comparison (%s, ratios to %s):\n", base.Workload, base.Transport)
	fmt.Fprintf(&b, "  %-10s %12s %7s %12s %7s\n", "transport", "produce MB/s", "ratio", "poll MB/s", "ratio")
	for _, r := range runs {
		p, c := mbps(r.Producers), mbps(r.Consumers)
		fmt.Fprintf(&b, "  %-10s %12.2f %7s %12.2f %7s\n", r.Transport, p, ratio(p, mbps(base.Producers)),
			c, ratio(c, mbps(base.Consumers)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
