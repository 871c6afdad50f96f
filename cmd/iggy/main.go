// Command iggy is the operator and user command-line tool for Lodestream. Its command names,
// positional argument order and global flags follow the upstream Apache Iggy CLI, so scripts written
// for that tool run unchanged against the commands implemented here (docs/cli.md lists them).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one invocation and returns the process exit status: 0 on success (an interrupted
// follow-mode poll included), 1 when the command failed, 2 for a usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runApp(ctx, newApp(stdin, stdout, stderr), args)
}

// runApp is run with a prepared app (tests replace its environment).
func runApp(ctx context.Context, app *app, args []string) int {
	root := app.rootCommand()
	root.SetArgs(expandGlobalShorthands(args))
	err := root.ExecuteContext(ctx)
	app.debugf("finished: %v", err)
	app.close()
	if err == nil {
		return 0
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return 0 // interrupted by SIGINT/SIGTERM: a clean stop, not a failure
	}
	fmt.Fprintln(app.stderr, "Error:", describeError(err, app.globals.tcpServerAddress))
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
