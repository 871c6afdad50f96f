package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/config"
)

// Exit codes of iggy-server.
const (
	exitOK = 0
	// exitRunFailed: the node started and then failed.
	exitRunFailed = 1
	// exitConfigRefused: bad flags, configuration or boot checks; nothing ran.
	exitConfigRefused = 2
)

// Boot is what the node's run function receives once every check passed.
type Boot struct {
	Config *config.Config
	// ReplicaID is this node's replica id (0 for a single node).
	ReplicaID uint8
	// Node is this node's roster entry; nil when the cluster is disabled.
	Node *config.NodeConfig
	// RootUsername / RootPassword are set only when FirstBoot is true: the
	// credentials of the root user to create (possibly generated).
	RootUsername string
	RootPassword string
	// FirstBoot is true when system.path held no metadata/ directory.
	FirstBoot bool
	Logger    *slog.Logger
}

// runFunc starts the node and blocks until ctx is cancelled (SIGINT/SIGTERM)
// or the node fails. An error implementing ExitCode() int chooses the exit
// code; any other error exits 1.
type runFunc func(ctx context.Context, boot Boot) error

// unservedTransports are client transports this build does not serve yet;
// enabling one refuses boot. Remove a name when its listener lands.
var unservedTransports []string // every client transport is served

// execute runs the iggy-server command with the process environment and
// streams; main is `os.Exit(execute(os.Args[1:], runNode))`.
func execute(args []string, run runFunc) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore default handling so a second
		// SIGINT kills a shutdown that hangs.
		<-ctx.Done()
		stop()
	}()
	return executeWith(ctx, invocation{
		args:   args,
		env:    config.EnvFromList(os.Environ()),
		stdout: os.Stdout,
		stderr: os.Stderr,
		run:    run,
	})
}

// invocation is one run of the command, with everything external injected.
type invocation struct {
	args   []string
	env    config.Env
	stdout io.Writer
	stderr io.Writer
	run    runFunc
}

// flags are the parsed command-line options.
type flags struct {
	replicaID                  uint8
	replicaIDSet               bool
	withDefaultRootCredentials bool
	fresh                      bool
}

// refusal marks errors that mean "configuration or boot refused" (exit 2).
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

func executeWith(ctx context.Context, inv invocation) int {
	var parsed flags
	ran := false
	command := &cobra.Command{
		Use:   "iggy-server",
		Short: "Apache-Iggy-compatible, VSR-replicated message-streaming server",
		Long: `Apache-Iggy-compatible, VSR-replicated message-streaming server.

Configuration: embedded defaults < the TOML file named by IGGY_CONFIG_PATH <
IGGY_* environment variables (IGGY_TCP_ADDRESS sets [tcp] address; roster
entries use IGGY_CLUSTER_NODES_<i>_<FIELD>). See config.toml for every key.
Root user on first boot: IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD (both or
neither; mandatory for a cluster's first boot).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ran = true
			parsed.replicaIDSet = cmd.Flags().Changed("replica-id")
			return start(ctx, inv, parsed)
		},
	}
	// cobra falls back to os.Args when given nil; the caller's args are the truth.
	command.SetArgs(append([]string{}, inv.args...))
	command.SetOut(inv.stdout)
	command.SetErr(inv.stderr)
	command.Flags().Uint8Var(&parsed.replicaID, "replica-id", 0,
		"this node's cluster.nodes replica_id (required when cluster.enabled)")
	command.Flags().BoolVar(&parsed.withDefaultRootCredentials, "with-default-root-credentials", false,
		"set IGGY_ROOT_USERNAME/IGGY_ROOT_PASSWORD to iggy/iggy unless already set (INSECURE, development only)")
	command.Flags().BoolVarP(&parsed.fresh, "fresh", "f", false,
		"delete system.path before boot (DELETES ALL DATA of this node; a cluster replica refills by state transfer)")

	command.AddCommand(offlineCommands(inv, &ran)...)

	err := command.Execute()
	if err == nil {
		return exitOK
	}
	// Joined errors span lines; prefix each so every line is attributable.
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(inv.stderr, "iggy-server: %s\n", line)
	}
	if !ran {
		// Flag or argument parsing failed before anything ran.
		return exitConfigRefused
	}
	var refused refusal
	if errors.As(err, &refused) {
		return exitConfigRefused
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) && coded.ExitCode() != 0 {
		return coded.ExitCode()
	}
	return exitRunFailed
}

// start loads and checks the configuration, prepares the data directory and
// hands over to the node.
func start(ctx context.Context, inv invocation, parsed flags) error {
	cwd, err := os.Getwd()
	if err != nil {
		return refusal{fmt.Errorf("reading the current directory: %w", err)}
	}
	env, err := config.WithDotEnv(inv.env, cwd)
	if err != nil {
		return refusal{err}
	}
	if parsed.withDefaultRootCredentials {
		env = withDefaultRootCredentials(env)
	}
	cfg, warnings, err := config.Load(env)
	if err != nil {
		return refusal{fmt.Errorf("configuration: %w", err)}
	}
	// An invalid level falls back to info here; Validate reports it.
	logger := newLogger(inv.stderr, cfg.System.Logging.Level)
	for _, warning := range append(warnings, cfg.Warnings()...) {
		logger.Warn("configuration", "warning", warning.String())
	}
	if err := cfg.Validate(); err != nil {
		return refusal{fmt.Errorf("invalid configuration:\n%w", err)}
	}
	if parsed.fresh {
		if err := wipeSystemPath(cfg.System.Path, os.RemoveAll); err != nil {
			return refusal{err}
		}
		logger.Warn("--fresh: deleted the data directory", "path", cfg.System.Path)
	}
	metadataExists, err := config.MetadataDirExists(cfg.System.Path)
	if err != nil {
		return refusal{err}
	}
	plan, err := config.CheckBoot(cfg, bootInput(env, parsed, metadataExists))
	if err != nil {
		return refusal{err}
	}
	if cfg.System.Logging.FileEnabled {
		file, err := openLogFile(cfg, inv.stderr)
		if err != nil {
			return refusal{err}
		}
		defer func() {
			if err := file.Close(); err != nil {
				fmt.Fprintf(inv.stderr, "iggy-server: %v\n", err)
			}
		}()
		// stderr first: a failing file never hides a line from stderr.
		logger = newLogger(io.MultiWriter(inv.stderr, file), cfg.System.Logging.Level)
		logger.Info("logging to file", "path", file.Path(), "max_file_size", cfg.System.Logging.MaxFileSize.String(),
			"max_total_size", cfg.System.Logging.MaxTotalSize.String(), "retention", cfg.System.Logging.Retention.String())
	}
	for _, warning := range plan.Warnings {
		logger.Warn("boot", "warning", warning.String())
	}
	if parsed.withDefaultRootCredentials && plan.FirstBoot {
		logger.Warn("--with-default-root-credentials: the new root user uses well-known credentials; INSECURE outside development")
	}
	boot := Boot{
		Config:       cfg,
		ReplicaID:    plan.ReplicaID,
		Node:         plan.Node,
		RootUsername: plan.RootUsername,
		RootPassword: plan.RootPassword,
		FirstBoot:    plan.FirstBoot,
		Logger:       logger,
	}
	if plan.GenerateRootPassword {
		password, err := generateRootPassword()
		if err != nil {
			return fmt.Errorf("generating the root password: %w", err)
		}
		boot.RootPassword = password
		// The only time the operator can read it, as upstream does.
		logger.Warn("no IGGY_ROOT_USERNAME/IGGY_ROOT_PASSWORD: generated a root password for the new root user",
			"username", plan.RootUsername, "password", password)
	}
	tcpAddress := cfg.TCP.Address
	if plan.Node != nil {
		// In cluster mode the roster's port is the listener port.
		if port, ok := plan.Node.Ports.Get(config.TransportTCP); ok {
			if host, _, err := net.SplitHostPort(cfg.TCP.Address); err == nil {
				tcpAddress = net.JoinHostPort(host, strconv.Itoa(int(port)))
			}
		}
	}
	logger.Info("starting iggy-server",
		"cluster", cfg.Cluster.Enabled, "replica_id", boot.ReplicaID, "first_boot", boot.FirstBoot,
		"system_path", cfg.System.Path, "tcp", tcpAddress)
	if text, err := config.EncodeTOML(cfg.Redacted()); err == nil {
		logger.Debug("effective configuration", "toml", text)
	}
	if err := inv.run(ctx, boot); err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
		return fmt.Errorf("server stopped: %w", err)
	}
	logger.Info("iggy-server stopped")
	return nil
}
