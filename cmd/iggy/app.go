package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/encryption"
)

// Environment variables read when no credentials are given on the command line (as upstream).
const (
	envUsername = "IGGY_USERNAME"
	envPassword = "IGGY_PASSWORD"
)

// Default server addresses per transport (upstream's CLI defaults).
const (
	defaultTCPServerAddress       = "127.0.0.1:8090"
	defaultQUICServerAddress      = "127.0.0.1:8080"
	defaultWebSocketServerAddress = "127.0.0.1:8092"
	defaultHTTPAPIURL             = "http://localhost:3000"
)

// globals are the options every command accepts.
type globals struct {
	transport              string
	tcpServerAddress       string
	quicServerAddress      string
	websocketServerAddress string
	httpAPIURL             string // --http-api-url: base URL of the REST API (--transport http)
	httpRetries            int    // --http-retries: re-sends of a request that could not be sent
	tcpTLS                 bool   // --tcp-tls-enabled: TLS on TCP (certificate not verified)
	username               string
	password               string
	token                  string
	quiet                  bool
	output                 string // "", table, list or json
	generate               string // shell name for --generate
	tokenName              string // -n: a PAT stored with 'pat create --store-token'
	debug                  string // -d: file that receives a debug log
	encryptionKey          string // base64 AES-256 key for client-side payload encryption
}

// app holds one invocation's streams and options.
type app struct {
	globals globals
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string

	cipher         *encryption.Cipher // set by --encryption-key
	logger         *slog.Logger       // debug log (-d), discarding by default
	debugFile      *os.File
	preferExplicit bool // the command (login) uses given credentials before a stored session
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, logger: slog.New(slog.DiscardHandler)}
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// globalShorthands are the upstream one-letter global options. Upstream accepts them before the
// subcommand; here they are rewritten to their long names there, so subcommands keep their own
// one-letter options (message send -p is a partition, not a password).
var globalShorthands = map[string]struct {
	long  string
	value bool
}{
	"u": {"username", true},
	"p": {"password", true},
	"t": {"token", true},
	"q": {"quiet", false},
	"n": {"token-name", true},
	"d": {"debug", true},
}

// expandGlobalShorthands rewrites -u/-p/-t/-q/-n/-d that precede the first subcommand name to their long
// forms. Anything after the subcommand name is left to that subcommand.
func expandGlobalShorthands(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "--") {
			out = append(out, a)
			name := strings.TrimPrefix(a, "--")
			if !strings.Contains(name, "=") && longTakesValue(name) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		letter, rest := a[1:2], a[2:]
		g, ok := globalShorthands[letter]
		if !ok {
			out = append(out, a) // cobra reports it
			continue
		}
		switch {
		case !g.value:
			out = append(out, "--"+g.long)
			if rest != "" {
				out = append(out, "-"+rest)
			}
		case strings.HasPrefix(rest, "="):
			out = append(out, "--"+g.long+rest)
		case rest != "":
			out = append(out, "--"+g.long+"="+rest)
		case i+1 < len(args):
			i++
			out = append(out, "--"+g.long+"="+args[i])
		default:
			out = append(out, "--"+g.long)
		}
	}
	return out
}

// longTakesValue reports whether a global long option consumes the next argument.
func longTakesValue(name string) bool {
	switch name {
	case "transport", "tcp-server-address", "quic-server-address", "websocket-server-address", "http-api-url", "http-retries",
		"username", "password", "token", "output", "generate",
		"token-name", "debug", "encryption-key":
		return true
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "iggy",
		Short: "Lodestream (Apache Iggy-compatible) command-line tool",
		Long: "iggy manages streams, topics and messages on a Lodestream server.\n\n" +
			"Global options go before the command, as with the upstream iggy CLI:\n" +
			"  iggy -u iggy -p iggy stream list\n" +
			"Credentials may also come from the IGGY_USERNAME and IGGY_PASSWORD environment variables.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.globals.generate != "" {
				return a.generateCompletion(cmd.Root(), a.globals.generate)
			}
			return cmd.Help()
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	pf := root.PersistentFlags()
	g := &a.globals
	pf.StringVar(&g.transport, "transport", "tcp", "transport to use: tcp, quic, ws or http")
	pf.StringVar(&g.tcpServerAddress, "tcp-server-address", defaultTCPServerAddress, "server address for the TCP transport")
	pf.StringVar(&g.quicServerAddress, "quic-server-address", defaultQUICServerAddress, "server address for the QUIC transport")
	pf.StringVar(&g.websocketServerAddress, "websocket-server-address", defaultWebSocketServerAddress, "server address for the WebSocket transport")
	pf.StringVar(&g.httpAPIURL, "http-api-url", defaultHTTPAPIURL, "base URL of the HTTP API for the http transport (https:// for TLS)")
	pf.IntVar(&g.httpRetries, "http-retries", client.DefaultHTTPRetries, "http transport: how often a request that could not be sent is re-sent")
	pf.BoolVar(&g.tcpTLS, "tcp-tls-enabled", false, "TLS on the tcp transport (the server certificate is not verified)")
	pf.StringVar(&g.username, "username", "", "user name (short -u before the command); IGGY_USERNAME when unset")
	pf.StringVar(&g.password, "password", "", "password (short -p before the command); read from stdin when -u is given without it")
	pf.StringVar(&g.token, "token", "", "personal access token (short -t before the command)")
	pf.BoolVar(&g.quiet, "quiet", false, "quiet mode: print nothing on success (short -q before the command)")
	pf.StringVar(&g.output, "output", "", "output format: table, list or json")
	pf.StringVar(&g.tokenName, "token-name", "", "log in with the personal access token stored under this name by 'pat create --store-token' (short -n before the command)")
	pf.StringVar(&g.debug, "debug", "", "append a debug log to this file (short -d before the command)")
	pf.StringVar(&g.encryptionKey, "encryption-key", "", "base64 AES-256 key: encrypt sent payloads and headers, decrypt polled ones (client side)")
	root.Flags().StringVar(&g.generate, "generate", "", "print shell completion code for bash, zsh, fish or powershell")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return a.prepare(cmd) }
	root.AddCommand(
		a.pingCommand(), a.meCommand(), a.statsCommand(), a.clusterCommand(),
		a.streamCommand(), a.topicCommand(), a.messageCommand(),
		a.partitionCommand(), a.consumerGroupCommand(), a.patCommand(), a.userCommand(),
		a.clientCommand(), a.consumerOffsetCommand(), a.segmentCommand(), a.snapshotCommand(),
		a.optionsCommand(), a.contextCommand(), a.loginCommand(), a.logoutCommand(), a.sessionCommand(),
	)
	root.InitDefaultCompletionCmd()
	return root
}

// prepare runs before every command: the active context fills the options not given, then the
// encryption key and the debug log are set up.
func (a *app) prepare(cmd *cobra.Command) error {
	if err := a.applyActiveContext(cmd); err != nil {
		return err
	}
	if err := a.loadCipher(); err != nil {
		return err
	}
	if a.globals.debug == "" {
		return nil
	}
	f, err := os.OpenFile(a.globals.debug, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open debug file: %w", err)
	}
	a.debugFile = f
	a.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The command only: arguments and options may hold passwords and tokens.
	a.debugf("executing %s", cmd.CommandPath())
	return nil
}

// debugf writes one line to the debug log (-d); a no-op without it.
func (a *app) debugf(format string, args ...any) {
	a.logger.Debug(fmt.Sprintf(format, args...))
}

// close releases what prepare opened.
func (a *app) close() {
	if a.debugFile != nil {
		a.debugFile.Close()
	}
}

// noArgs and friends wrap cobra's argument checks so a wrong count is a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q for %q; see '%s --help'", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

func exactArgs(n int, names ...string) cobra.PositionalArgs {
	return rangeArgs(n, n, names...)
}

func rangeArgs(lo, hi int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo {
			missing := names[len(args):min(lo, len(names))]
			return usagef("%s: missing %s; usage: %s", cmd.CommandPath(), strings.Join(missing, ", "), cmd.UseLine())
		}
		if hi >= 0 && len(args) > hi {
			return usagef("%s: too many arguments (%d, at most %d); usage: %s", cmd.CommandPath(), len(args), hi, cmd.UseLine())
		}
		return nil
	}
}

// dialTarget resolves --transport to a client transport, its server
// address and dial options.
func (g *globals) dialTarget() (string, []client.Option, error) {
	switch strings.ToLower(g.transport) {
	case "tcp":
		opts := []client.Option{client.WithTransport(client.TransportTCP)}
		if g.tcpTLS {
			opts = append(opts, client.WithTLS(&tls.Config{InsecureSkipVerify: true}))
		}
		return g.tcpServerAddress, opts, nil
	case "quic":
		return g.quicServerAddress, []client.Option{client.WithTransport(client.TransportQUIC)}, nil
	case "ws", "websocket":
		return g.websocketServerAddress, []client.Option{client.WithTransport(client.TransportWebSocket)}, nil
	case "http":
		if g.httpRetries < 0 {
			return "", nil, usagef("--http-retries %d: must be 0 or more", g.httpRetries)
		}
		return g.httpAPIURL, []client.Option{client.WithTransport(client.TransportHTTP), client.WithHTTPRetries(g.httpRetries)}, nil
	}
	return "", nil, usagef("--transport %q is not a transport; valid values are tcp, quic, ws and http", g.transport)
}

// withClient runs fn with a connected (and, when login is true, logged-in) client.
func (a *app) withClient(cmd *cobra.Command, login bool, fn func(context.Context, *client.Client) error) error {
	ctx := cmd.Context()
	c, err := a.connect(ctx, login)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// say prints a confirmation line unless --quiet.
func (a *app) say(format string, args ...any) {
	if !a.globals.quiet {
		fmt.Fprintf(a.stdout, format+"\n", args...)
	}
}
