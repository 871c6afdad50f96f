package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/bench"
	"github.com/lodestream/lodestream/client"
)

// Exit codes: 0 success, 1 run or setup failure, 2 bad flags.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks a flag problem (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// flags are the raw command-line values before they become a bench.Config.
type flags struct {
	cfg         bench.Config
	transports  string // --transport: one name or a comma list
	addresses   map[client.Transport]*string
	totalData   string
	jsonOutput  bool
	noProgress  bool
	workloadArg string
}

// Default server addresses per transport (upstream's).
const (
	defaultQUICAddress      = "127.0.0.1:8080"
	defaultWebSocketAddress = "127.0.0.1:8092"
	defaultHTTPAddress      = "127.0.0.1:3000"
)

// newCommand builds the cobra command; run receives one validated config
// per transport named by --transport, in order.
func newCommand(run func(cmd *cobra.Command, cfgs []bench.Config, jsonOutput, progress bool) error) *cobra.Command {
	f := &flags{cfg: bench.DefaultConfig(bench.PinnedProducer)}
	names := make([]string, len(bench.Workloads))
	for i, w := range bench.Workloads {
		names[i] = string(w)
	}
	cmd := &cobra.Command{
		Use:   "iggy-bench [flags] <workload>",
		Short: "Load generator for Iggy-compatible servers",
		Long: "iggy-bench runs one workload against a server on loopback and reports msgs/s, MB/s and\n" +
			"p50/p90/p99/p999 per-batch latency. Workloads: " + strings.Join(names, ", ") + ".\n\n" +
			"pinned: one stream per producer (bench-1..bench-N, 1 partition each); consumer j reads stream j.\n" +
			"balanced: one stream with many partitions (default 24); the server balances batches, consumers\n" +
			"split the partitions. Consumer-only workloads read what a previous --keep run left.",
		Example: "  iggy-bench pinned-producer-and-consumer\n" +
			"  iggy-bench --total-data 1GB --json balanced-producer\n" +
			"  iggy-bench --rate-limit 250 pinned-producer\n" +
			"  iggy-bench --transport tcp,quic,websocket pinned-producer-and-consumer",
		Args:          cobra.ExactArgs(1),
		ValidArgs:     names,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.workloadArg = args[0]
			cfgs, err := f.configs(cmd)
			if err != nil {
				return usageError{err}
			}
			return run(cmd, cfgs, f.jsonOutput, !f.noProgress)
		},
	}
	c := &f.cfg
	fl := cmd.Flags()
	fl.StringVar(&c.Address, "address", bench.DefaultAddress, "server TCP address (loopback only unless --allow-remote)")
	fl.StringVar(&f.transports, "transport", "tcp", "tcp, quic, websocket or http, or a comma list run one after another with a throughput comparison")
	f.addresses = map[client.Transport]*string{client.TransportTCP: &c.Address,
		client.TransportQUIC:      fl.String("quic-address", defaultQUICAddress, "server QUIC address"),
		client.TransportWebSocket: fl.String("websocket-address", defaultWebSocketAddress, "server WebSocket address"),
		client.TransportHTTP:      fl.String("http-address", defaultHTTPAddress, "server HTTP API address (host:port; the REST API)")}
	fl.BoolVar(&c.AllowRemote, "allow-remote", false, "allow a non-loopback --address")
	fl.StringVar(&c.Username, "username", "iggy", "user to sign in as")
	fl.StringVar(&c.Password, "password", "iggy", "password")
	fl.IntVar(&c.Producers, "producers", bench.DefaultActors, "producer actors (one connection each)")
	fl.IntVar(&c.Consumers, "consumers", bench.DefaultActors, "consumer actors (one connection each)")
	fl.IntVar(&c.Streams, "streams", 0, "streams (default: pinned = max(producers, consumers), balanced = 1)")
	fl.IntVar(&c.Partitions, "partitions", 0, "partitions per topic (default: pinned = 1, balanced = 24)")
	fl.IntVar(&c.MessageSizeBytes, "message-size", bench.DefaultMessageSizeBytes, "payload bytes per message")
	fl.IntVar(&c.MessagesPerBatch, "messages-per-batch", bench.DefaultMessagesPerBatch, "messages per batch (and per poll)")
	fl.IntVar(&c.MessageBatches, "message-batches", 0, fmt.Sprintf("batches per producer (default %d; exclusive with --total-data)", bench.DefaultMessageBatches))
	fl.StringVar(&f.totalData, "total-data", "", "payload bytes across all producers, e.g. 1GB, 512MiB (sets --message-batches)")
	fl.Float64Var(&c.RateLimitMBps, "rate-limit", 0, "aggregate producer payload rate in MB/s (0 = unlimited)")
	fl.StringVar(&c.Durability, "durability", bench.DurabilityReplicated, "topic durability: replicated or persisted")
	fl.DurationVar(&c.Warmup, "warmup", bench.DefaultWarmup, "leading time excluded from the figures")
	fl.DurationVar(&c.DurationMax, "duration-max", bench.DefaultDurationMax, "stop every actor after this long")
	fl.BoolVar(&c.Keep, "keep", false, "keep the bench streams after the run (for a later consumer-only run)")
	fl.BoolVar(&c.Recreate, "recreate", false, "delete leftover bench-<n> streams before a producer workload")
	fl.BoolVar(&c.Verify, "verify", false, "consumers verify every polled batch checksum, offset and payload size")
	fl.BoolVar(&f.jsonOutput, "json", false, "print the summary as JSON")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no live progress line on stderr")
	return cmd
}

// configs is one normalised config per transport of --transport.
func (f *flags) configs(cmd *cobra.Command) ([]bench.Config, error) {
	var out []bench.Config
	for _, name := range strings.Split(f.transports, ",") {
		t, err := client.ParseTransport(name)
		if err != nil {
			return nil, fmt.Errorf("--transport: %w", err)
		}
		f.cfg.Transport = t
		base := f.cfg.Address
		f.cfg.Address = *f.addresses[t]
		cfg, err := f.config(cmd)
		f.cfg.Address = base
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	return out, nil
}

// config turns the flags into a normalised bench.Config.
func (f *flags) config(cmd *cobra.Command) (bench.Config, error) {
	w, err := bench.ParseWorkload(f.workloadArg)
	if err != nil {
		return bench.Config{}, err
	}
	cfg := f.cfg
	cfg.Workload = w
	if f.totalData != "" {
		if cmd.Flags().Changed("message-batches") {
			return bench.Config{}, errors.New("--message-batches and --total-data are exclusive: give one")
		}
		n, err := bench.ParseByteSize(f.totalData)
		if err != nil {
			return bench.Config{}, fmt.Errorf("--total-data: %w", err)
		}
		cfg.TotalDataBytes = n
	}
	if err := cfg.Normalize(); err != nil {
		return bench.Config{}, err
	}
	return cfg, nil
}

// execute runs the command line and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cmd := newCommand(func(cmd *cobra.Command, cfgs []bench.Config, jsonOutput, progress bool) error {
		out := bench.Output{Logger: logger}
		if progress {
			out.Progress = stderr
			if f, ok := stderr.(*os.File); ok {
				out.ProgressTerminal = bench.IsTerminal(f)
			}
		}
		var runs []*bench.Summary
		for _, cfg := range cfgs {
			summary, err := runOne(ctx, cfg, out, stdout, jsonOutput)
			if err != nil {
				return err
			}
			runs = append(runs, summary)
		}
		if jsonOutput {
			return nil
		}
		return bench.WriteComparison(stdout, runs)
	})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetContext(ctx)
	err := cmd.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "iggy-bench:", err)
	var ue usageError
	if errors.As(err, &ue) || strings.Contains(err.Error(), "accepts 1 arg") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "invalid argument") {
		return exitUsage
	}
	return exitFailure
}

// runOne runs one workload over one transport and prints its summary.
func runOne(ctx context.Context, cfg bench.Config, out bench.Output, stdout io.Writer, jsonOutput bool) (*bench.Summary, error) {
	started := time.Now()
	summary, err := bench.Run(ctx, cfg, out)
	if summary != nil {
		var werr error
		if jsonOutput {
			werr = summary.WriteJSON(stdout)
		} else {
			werr = summary.WriteText(stdout)
		}
		if werr != nil {
			return nil, werr
		}
	}
	if errors.Is(err, bench.ErrDurabilityUnsupported) {
		return nil, fmt.Errorf("%w\nthe server refused --durability %s; it does not support that durability yet", err, cfg.Durability)
	}
	if err != nil {
		return nil, fmt.Errorf("iggy-bench %s over %s (after %s): %w", cfg.Workload, cfg.Transport, time.Since(started).Round(time.Millisecond), err)
	}
	if !summary.Complete {
		return nil, fmt.Errorf("iggy-bench %s over %s: incomplete run: %s", cfg.Workload, cfg.Transport, summary.StopReason)
	}
	return summary, nil
}
