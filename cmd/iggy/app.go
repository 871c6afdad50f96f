package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
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
)

// globals are the options every command accepts.
type globals struct {
	transport              string
	tcpServerAddress       string
	quicServerAddress      string
	websocketServerAddress string
	tcpTLS                 bool // --tcp-tls-enabled: TLS on TCP (certificate not verified)
	username               string
	password               string
	token                  string
	quiet                  bool
	output                 string // "", table, list or json
	generate               string // shell name for --generate
}

// app holds one invocation's streams and options.
type app struct {
	globals globals
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
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
}

// expandGlobalShorthands rewrites -u/-p/-t/-q that precede the first subcommand name to their long
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
	case "transport", "tcp-server-address", "quic-server-address", "websocket-server-address",
		"username", "password", "token", "output", "generate":
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
	pf.StringVar(&g.transport, "transport", "tcp", "transport to use: tcp, quic or ws (http is not available yet)")
	pf.StringVar(&g.tcpServerAddress, "tcp-server-address", defaultTCPServerAddress, "server address for the TCP transport")
	pf.StringVar(&g.quicServerAddress, "quic-server-address", defaultQUICServerAddress, "server address for the QUIC transport")
	pf.StringVar(&g.websocketServerAddress, "websocket-server-address", defaultWebSocketServerAddress, "server address for the WebSocket transport")
	pf.BoolVar(&g.tcpTLS, "tcp-tls-enabled", false, "TLS on the tcp transport (the server certificate is not verified)")
	pf.StringVar(&g.username, "username", "", "user name (short -u before the command); IGGY_USERNAME when unset")
	pf.StringVar(&g.password, "password", "", "password (short -p before the command); read from stdin when -u is given without it")
	pf.StringVar(&g.token, "token", "", "personal access token (short -t before the command)")
	pf.BoolVar(&g.quiet, "quiet", false, "quiet mode: print nothing on success (short -q before the command)")
	pf.StringVar(&g.output, "output", "", "output format: table, list or json")
	root.Flags().StringVar(&g.generate, "generate", "", "print shell completion code for bash, zsh, fish or powershell")
	root.AddCommand(
		a.pingCommand(), a.meCommand(), a.statsCommand(), a.clusterCommand(),
		a.streamCommand(), a.topicCommand(), a.messageCommand(),
		a.partitionCommand(), a.consumerGroupCommand(), a.patCommand(), a.userCommand(),
	)
	root.InitDefaultCompletionCmd()
	return root
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
// address and dial options; http is refused until it lands.
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
		return "", nil, usagef("--transport http is not available yet: Lodestream does not serve the HTTP API; use --transport tcp, quic or ws")
	}
	return "", nil, usagef("--transport %q is not a transport; valid values are tcp, quic, ws and http (http is not available yet)", g.transport)
}

// connect dials the server and, when login is true, logs in with the resolved credentials.
func (a *app) connect(ctx context.Context, login bool) (*client.Client, error) {
	addr, transportOpts, err := a.globals.dialTarget()
	if err != nil {
		return nil, err
	}
	var creds credentials
	if login {
		var err error
		if creds, err = a.resolveCredentials(); err != nil {
			return nil, err
		}
	}
	c, err := client.Dial(ctx, addr, append(transportOpts, client.WithDialTimeout(5*time.Second), client.WithSDK("iggy-cli", "lodestream"))...)
	if err != nil {
		return nil, err
	}
	if !login {
		return c, nil
	}
	if creds.token != "" {
		_, err = c.LoginWithPersonalAccessToken(ctx, creds.token)
	} else {
		_, err = c.LoginUser(ctx, creds.username, creds.password)
	}
	if err != nil {
		c.Close()
		return nil, &loginError{username: creds.username, err: err}
	}
	return c, nil
}

type credentials struct {
	username, password, token string
}

// loginError wraps a failed login with who tried.
type loginError struct {
	username string
	err      error
}

func (e *loginError) Error() string {
	if e.username == "" {
		return "login with personal access token failed: " + e.err.Error()
	}
	return fmt.Sprintf("login as %q failed: %v", e.username, e.err)
}

func (e *loginError) Unwrap() error { return e.err }

// resolveCredentials follows upstream's order: --token, then --username (with --password, or the
// password read from stdin), then IGGY_USERNAME and IGGY_PASSWORD.
func (a *app) resolveCredentials() (credentials, error) {
	g := &a.globals
	switch {
	case g.token != "" && g.username != "":
		return credentials{}, usagef("--token and --username cannot be used together")
	case g.token != "":
		return credentials{token: g.token}, nil
	case g.username != "":
		if g.password != "" {
			return credentials{username: g.username, password: g.password}, nil
		}
		pw, err := a.readPassword()
		if err != nil {
			return credentials{}, err
		}
		return credentials{username: g.username, password: pw}, nil
	}
	u, p := a.getenv(envUsername), a.getenv(envPassword)
	if u != "" && p != "" {
		return credentials{username: u, password: p}, nil
	}
	return credentials{}, usagef("missing credentials: pass -u USERNAME -p PASSWORD (or -t TOKEN) before the command, or set %s and %s",
		envUsername, envPassword)
}

// readPassword reads one line from stdin, as upstream does when -u comes without -p.
func (a *app) readPassword() (string, error) {
	if f, ok := a.stdin.(*os.File); ok && isTerminal(f) {
		fmt.Fprint(a.stderr, "Password: ")
	}
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usagef("--username given without --password and no password on stdin")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
