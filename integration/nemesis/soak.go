package nemesis

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sample is one soak measurement: client throughput and latency over the
// last interval, and each server process's resources from /proc.
type Sample struct {
	Elapsed    time.Duration
	MsgsPerSec float64
	SendsPerS  float64
	P99        time.Duration
	Faults     int
	RSSMiB     []float64 // per node; 0 while down
	FDs        []int
	CPUPct     []float64 // of one core over the interval
}

// Soak collects samples every interval and appends them to a CSV file.
type Soak struct {
	interval time.Duration
	csvPath  string

	mu      sync.Mutex
	samples []Sample
}

// NewSoak writes its CSV to csvPath.
func NewSoak(interval time.Duration, csvPath string) *Soak {
	return &Soak{interval: interval, csvPath: csvPath}
}

// Samples returns what was collected.
func (s *Soak) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}

// Sampler is a Config.Sampler.
func (s *Soak) Sampler() func(ctx context.Context, c *Cluster, h *History, faults func() int) {
	return func(ctx context.Context, c *Cluster, h *History, faults func() int) {
		f, err := os.Create(s.csvPath)
		if err != nil {
			h.Violate("soak: %v", err)
			return
		}
		defer f.Close()
		w := csv.NewWriter(f)
		header := []string{"elapsed_s", "acked_msgs_per_s", "acked_sends_per_s", "p99_send_ms", "faults"}
		for i := 0; i < c.N; i++ {
			header = append(header, fmt.Sprintf("rss_mib_%d", i), fmt.Sprintf("fds_%d", i), fmt.Sprintf("cpu_pct_%d", i))
		}
		_ = w.Write(header)
		w.Flush()
		start := time.Now()
		last := start
		h.Drain()
		prevCPU := make([]uint64, c.N)
		prevPid := make([]int, c.N)
		tick := time.NewTicker(s.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now := time.Now()
			secs := now.Sub(last).Seconds()
			last = now
			msgs, p99, sends := h.Drain()
			smp := Sample{Elapsed: now.Sub(start), MsgsPerSec: float64(msgs) / secs, SendsPerS: float64(sends) / secs, P99: p99, Faults: faults()}
			row := []string{fmt.Sprintf("%.1f", smp.Elapsed.Seconds()), fmt.Sprintf("%.1f", smp.MsgsPerSec),
				fmt.Sprintf("%.1f", smp.SendsPerS), fmt.Sprintf("%.2f", float64(p99.Microseconds())/1000), strconv.Itoa(smp.Faults)}
			for i, n := range c.Nodes {
				pid := n.Pid()
				rss, fds, cpu := procStats(pid)
				pct := 0.0
				if pid != 0 && pid == prevPid[i] && cpu >= prevCPU[i] {
					pct = float64(cpu-prevCPU[i]) / clockTicks / secs * 100
				}
				prevPid[i], prevCPU[i] = pid, cpu
				smp.RSSMiB = append(smp.RSSMiB, rss)
				smp.FDs = append(smp.FDs, fds)
				smp.CPUPct = append(smp.CPUPct, pct)
				row = append(row, fmt.Sprintf("%.1f", rss), strconv.Itoa(fds), fmt.Sprintf("%.1f", pct))
			}
			_ = w.Write(row)
			w.Flush()
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
		}
	}
}

// clockTicks is USER_HZ (/proc/<pid>/stat's unit), 100 on Linux.
const clockTicks = 100

// procStats reads RSS (MiB), open descriptors and utime+stime (ticks) of
// pid; zeros when the process is gone.
func procStats(pid int) (rssMiB float64, fds int, cpu uint64) {
	if pid == 0 {
		return 0, 0, 0
	}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					kb, _ := strconv.ParseFloat(fields[0], 64)
					rssMiB = kb / 1024
				}
			}
		}
		f.Close()
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		fds = len(ents)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the parenthesised command: state is field 3; utime 14, stime 15.
		if k := strings.LastIndexByte(string(b), ')'); k >= 0 {
			fields := strings.Fields(string(b[k+1:]))
			if len(fields) > 13 {
				u, _ := strconv.ParseUint(fields[11], 10, 64)
				s, _ := strconv.ParseUint(fields[12], 10, 64)
				cpu = u + s
			}
		}
	}
	return
}

// Plot writes the samples as a PNG of four stacked charts: throughput, p99
// send latency, RSS per node and open descriptors per node.
func (s *Soak) Plot(path, title string) error {
	samples := s.Samples()
	if len(samples) == 0 {
		return fmt.Errorf("soak plot: no samples")
	}
	xs := make([]float64, len(samples))
	thr := make([]float64, len(samples))
	p99 := make([]float64, len(samples))
	nodes := len(samples[0].RSSMiB)
	rss := make([][]float64, nodes)
	fds := make([][]float64, nodes)
	for i, smp := range samples {
		xs[i] = smp.Elapsed.Minutes()
		thr[i] = smp.MsgsPerSec
		p99[i] = float64(smp.P99.Microseconds()) / 1000
		for n := 0; n < nodes && n < len(smp.RSSMiB); n++ {
			rss[n] = append(rss[n], smp.RSSMiB[n])
			fds[n] = append(fds[n], float64(smp.FDs[n]))
		}
	}
	ch := newChart(1000, 4, title)
	ch.panel(0, "ACKED MESSAGES/S", xs, [][]float64{thr})
	ch.panel(1, "P99 SEND LATENCY MS", xs, [][]float64{p99})
	ch.panel(2, "RSS MIB PER NODE", xs, rss)
	ch.panel(3, "OPEN FDS PER NODE", xs, fds)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return ch.writePNG(path)
}

// SummarizeSoak compares the first and last fifth of the run: a leak or a
// slowdown shows as a rise in RSS, descriptors or p99, or a fall in
// throughput.
func SummarizeSoak(samples []Sample) string {
	if len(samples) < 5 {
		return "soak: too few samples"
	}
	k := len(samples) / 5
	first, last := samples[:k], samples[len(samples)-k:]
	avg := func(ss []Sample, f func(Sample) float64) float64 {
		t := 0.0
		for _, s := range ss {
			t += f(s)
		}
		return t / float64(len(ss))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "samples=%d over %s; first fifth vs last fifth (means):\n", len(samples), samples[len(samples)-1].Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "  acked msgs/s      %10.1f -> %10.1f\n", avg(first, func(s Sample) float64 { return s.MsgsPerSec }), avg(last, func(s Sample) float64 { return s.MsgsPerSec }))
	fmt.Fprintf(&b, "  p99 send ms       %10.1f -> %10.1f\n", avg(first, func(s Sample) float64 { return float64(s.P99.Microseconds()) / 1000 }), avg(last, func(s Sample) float64 { return float64(s.P99.Microseconds()) / 1000 }))
	for n := range samples[0].RSSMiB {
		maxRSS, maxFD := 0.0, 0
		for _, s := range samples {
			maxRSS = max(maxRSS, s.RSSMiB[n])
			maxFD = max(maxFD, s.FDs[n])
		}
		fmt.Fprintf(&b, "  node %d RSS MiB    %10.1f -> %10.1f (max %.1f); fds %6.1f -> %6.1f (max %d); cpu %% %5.1f -> %5.1f\n", n,
			avg(first, func(s Sample) float64 { return s.RSSMiB[n] }), avg(last, func(s Sample) float64 { return s.RSSMiB[n] }), maxRSS,
			avg(first, func(s Sample) float64 { return float64(s.FDs[n]) }), avg(last, func(s Sample) float64 { return float64(s.FDs[n]) }), maxFD,
			avg(first, func(s Sample) float64 { return s.CPUPct[n] }), avg(last, func(s Sample) float64 { return s.CPUPct[n] }))
	}
	return b.String()
}

// LoadSoakCSV reads a soak.csv back (to plot it again).
func LoadSoakCSV(path string) (*Soak, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := &Soak{csvPath: path}
	if len(rows) < 2 {
		return s, nil
	}
	nodes := (len(rows[0]) - 5) / 3
	num := func(v string) float64 {
		x, _ := strconv.ParseFloat(v, 64)
		return x
	}
	for _, r := range rows[1:] {
		if len(r) != 5+3*nodes {
			continue
		}
		smp := Sample{Elapsed: time.Duration(num(r[0]) * float64(time.Second)), MsgsPerSec: num(r[1]), SendsPerS: num(r[2]),
			P99: time.Duration(num(r[3]) * float64(time.Millisecond)), Faults: int(num(r[4]))}
		for n := 0; n < nodes; n++ {
			smp.RSSMiB = append(smp.RSSMiB, num(r[5+3*n]))
			smp.FDs = append(smp.FDs, int(num(r[6+3*n])))
			smp.CPUPct = append(smp.CPUPct, num(r[7+3*n]))
		}
		s.samples = append(s.samples, smp)
	}
	return s, nil
}
