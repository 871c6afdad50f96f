package nemesis

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	flagDuration    = flag.Duration("nemesis.duration", 0, "faulty phase of each run (0: the CI slice, 35 s on 3 nodes and 25 s on 5)")
	flagNodes       = flag.String("nemesis.nodes", "3,5", "cluster sizes to run, comma-separated")
	flagSeed        = flag.Int64("nemesis.seed", 0, "fault schedule seed (0: from the clock, printed)")
	flagOut         = flag.String("nemesis.out", "", "keep data, node logs and the schedule here (default: a temp dir, removed when the run passes)")
	flagExactlyOnce = flag.Bool("nemesis.exactly-once", false, "a second stored copy of a leader-aware producer's batch is a violation")
	flagVerbose     = flag.Bool("nemesis.v", false, "log every fault and client warning")
	flagDurability  = flag.String("nemesis.durability", "auto", "topic durability: replicated, persisted, or auto (persisted on 3 nodes, replicated on 5)")
	flagFaults      = flag.String("nemesis.faults", "", "comma-separated fault kinds to schedule (default: every kind the durability covers; restart-all = SIGKILL of every node needs persisted)")
)

func durabilityFor(nodes int) string {
	if *flagDurability != "auto" {
		return *flagDurability
	}
	if nodes == 3 {
		return "persisted"
	}
	return "replicated"
}

func faultsFlag(t *testing.T) []string {
	if *flagFaults == "" {
		return nil // every kind the durability covers (the CI slice too)
	}
	known := map[string]bool{}
	for _, k := range FaultKinds() {
		known[k] = true
	}
	var out []string
	for _, k := range strings.Split(*flagFaults, ",") {
		k = strings.TrimSpace(k)
		if !known[k] {
			t.Fatalf("-nemesis.faults: unknown kind %q (known: %v)", k, FaultKinds())
		}
		out = append(out, k)
	}
	return out
}

var serverBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "lodestream-nemesis-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	if testing.Short() {
		os.RemoveAll(dir)
		os.Exit(m.Run())
	}
	serverBinary, err = BuildServer(context.Background(), "../..", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testLogger(t *testing.T) *slog.Logger {
	level := slog.LevelError
	if *flagVerbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fromRepo resolves a relative path flag against the repository root (go
// test runs in the package directory).
func fromRepo(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join("..", "..", p)
}

func runDir(t *testing.T, name string) (string, func(passed bool)) {
	if *flagOut != "" {
		dir := filepath.Join(fromRepo(*flagOut), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir, func(bool) {}
	}
	dir, err := os.MkdirTemp("", "lodestream-nemesis-")
	if err != nil {
		t.Fatal(err)
	}
	return dir, func(passed bool) {
		if passed {
			os.RemoveAll(dir)
		} else {
			t.Logf("data, node logs and schedule kept in %s", dir)
		}
	}
}

func seedOf() int64 {
	if *flagSeed != 0 {
		return *flagSeed
	}
	return time.Now().UnixNano() % 1_000_000_000
}

// TestNemesis runs the workload under the nemesis on 3 and 5 real nodes
// and checks the history. The default is the CI slice; `make nemesis
// DURATION=10m` runs it longer.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes under faults: not in -short")
	}
	sizes := *flagNodes
	if raceEnabled && *flagDuration == 0 && sizes == "3,5" {
		// make test runs the package twice; under -race only the test
		// process (clients, proxies, checkers) is checked, and 3 nodes
		// exercise all of it.
		sizes = "3"
	}
	for i, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 3 {
			t.Fatalf("-nemesis.nodes: %q", s)
		}
		d := *flagDuration
		if d == 0 {
			d = 35 * time.Second
			if n > 3 {
				d = 25 * time.Second
			}
		}
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			seed := seedOf() + int64(i)
			dir, done := runDir(t, fmt.Sprintf("nodes-%d-seed-%d", n, seed))
			wl := DefaultWorkload(n)
			wl.Durability = durabilityFor(n)
			cfg := Config{Nodes: n, Duration: d, Seed: seed, Dir: dir, Binary: serverBinary,
				IP: fmt.Sprintf("127.0.1.%d", 10+n), ExactlyOnce: *flagExactlyOnce,
				Workload: wl, Faults: faultsFlag(t), Log: testLogger(t)}
			passed := runAndReport(t, cfg, dir)
			done(passed)
		})
	}
}

// runAndReport runs cfg, writes the report and schedule into dir, logs
// them, and fails the test on any violation. It returns whether it passed.
func runAndReport(t *testing.T, cfg Config, dir string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+15*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	report := res.Report()
	_ = os.WriteFile(filepath.Join(dir, "report.txt"), []byte(report), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "schedule.txt"), []byte(res.Schedule()), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(strings.Join(res.Violations, "\n")+"\n"), 0o644)
	t.Log("\n" + report)
	faults := ""
	if len(cfg.Faults) > 0 {
		faults = " -nemesis.faults=" + strings.Join(cfg.Faults, ",")
	}
	repro := fmt.Sprintf("go test ./integration/nemesis/ -run 'TestNemesis/nodes=%d' -nemesis.nodes=%d -nemesis.seed=%d -nemesis.duration=%s -nemesis.durability=%s%s -v",
		cfg.Nodes, cfg.Nodes, cfg.Seed, cfg.Duration, cfg.Workload.Durability, faults)
	if err != nil {
		t.Errorf("run: %v\nrepro: %s", err, repro)
		return false
	}
	if len(res.Violations) > 0 {
		t.Errorf("%d violations (schedule below)\nrepro (the schedule is seeded; timing is not): %s\n%s", len(res.Violations), repro, res.Schedule())
		return false
	}
	if res.Summary.AckedBatches == 0 {
		t.Errorf("no send was acknowledged: the run checked nothing\nrepro: %s", repro)
		return false
	}
	return true
}

var (
	flagSoakDuration = flag.Duration("soak.duration", 0, "run TestSoak for this long (0: skipped)")
	flagSoakOut      = flag.String("soak.out", "", "write soak.csv, soak.png and soak-summary.txt here (default: the run directory)")
	flagSoakNodes    = flag.Int("soak.nodes", 3, "cluster size of the soak")
	flagSoakInterval = flag.Duration("soak.interval", 5*time.Second, "sampling interval")
	flagSoakReplot   = flag.String("soak.replot", "", "plot this soak.csv again (next to it, as soak.png) and exit; -soak.title names it")
	flagSoakTitle    = flag.String("soak.title", "soak", "the replotted chart's title")
)

// TestSoakReplot draws a soak.csv again (after a change to the chart).
func TestSoakReplot(t *testing.T) {
	if *flagSoakReplot == "" {
		t.Skip("set -soak.replot=path/to/soak.csv")
	}
	path := fromRepo(*flagSoakReplot)
	s, err := LoadSoakCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Plot(filepath.Join(filepath.Dir(path), "soak.png"), *flagSoakTitle); err != nil {
		t.Fatal(err)
	}
}

// TestSoak runs the mixed workload under the nemesis for -soak.duration,
// sampling throughput, p99 send latency, and RSS, open descriptors and CPU
// of every server process into a CSV and a PNG, then checks the history as
// TestNemesis does. `make soak DURATION=1h`.
func TestSoak(t *testing.T) {
	if *flagSoakDuration == 0 {
		t.Skip("soak: set -soak.duration (make soak DURATION=1h)")
	}
	seed := seedOf()
	n := *flagSoakNodes
	dir, done := runDir(t, fmt.Sprintf("soak-nodes-%d-seed-%d", n, seed))
	out := fromRepo(*flagSoakOut)
	if out == "" {
		out = dir
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	soak := NewSoak(*flagSoakInterval, filepath.Join(out, "soak.csv"))
	wl := DefaultWorkload(n)
	wl.Durability = durabilityFor(n)
	cfg := Config{Nodes: n, Duration: *flagSoakDuration, Seed: seed, Dir: dir, Binary: serverBinary,
		IP: fmt.Sprintf("127.0.1.%d", 30+n), ExactlyOnce: *flagExactlyOnce,
		Workload: wl, Faults: faultsFlag(t), Log: testLogger(t), Sampler: soak.Sampler()}
	passed := runAndReport(t, cfg, dir)
	title := fmt.Sprintf("soak: %d nodes, %s, seed %d, %s under the nemesis (x: minutes)", n, wl.Durability, seed, cfg.Duration)
	if err := soak.Plot(filepath.Join(out, "soak.png"), title); err != nil {
		t.Error(err)
	}
	summary := SummarizeSoak(soak.Samples())
	report, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	_ = os.WriteFile(filepath.Join(out, "soak-summary.txt"), []byte(title+"\n"+summary+"\n"+string(report)), 0o644)
	t.Log("\n" + summary)
	done(passed)
}
