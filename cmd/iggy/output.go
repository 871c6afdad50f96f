package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lodestream/lodestream/client"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// Output formats. Table is the default, as upstream; list prints one "|"-separated line per row;
// json prints the machine-readable form (the same fields, snake_case keys).
const (
	formatTable = "table"
	formatList  = "list"
	formatJSON  = "json"
	formatTOML  = "toml" // stats only, as upstream
)

// view is what a command prints: a JSON value and the same data as table rows.
type view struct {
	json    any
	headers []string
	rows    [][]string
}

// listCommand completes a listing command that takes no arguments: it
// resolves the output format (--output or -l/--list-mode), fetches the
// view with a logged-in client and prints it.
func (a *app) listCommand(cmd *cobra.Command, fetch func(ctx context.Context, c *client.Client) (view, error)) *cobra.Command {
	var mode string
	cmd.Args = noArgs
	cmd.RunE = func(cc *cobra.Command, _ []string) error {
		f, err := a.format(mode)
		if err != nil {
			return err
		}
		return a.withClient(cc, true, func(ctx context.Context, c *client.Client) error {
			v, err := fetch(ctx, c)
			if err != nil {
				return err
			}
			return writeView(a.stdout, f, v)
		})
	}
	listModeFlag(cmd, &mode)
	return cmd
}

// listModeFlag adds upstream's -l/--list-mode to a listing command.
func listModeFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVarP(dst, "list-mode", "l", formatTable, "list mode: table or list (--output json for JSON)")
}

// format resolves the output format: --output wins over a command's own -l/--list-mode.
func (a *app) format(local string, allowed ...string) (string, error) {
	f := strings.ToLower(a.globals.output)
	if f == "" {
		f = strings.ToLower(local)
	}
	if f == "" {
		f = formatTable
	}
	if len(allowed) == 0 {
		allowed = []string{formatTable, formatList, formatJSON}
	}
	for _, ok := range allowed {
		if f == ok {
			return f, nil
		}
	}
	return "", usagef("output format %q is not one of %s", f, strings.Join(allowed, ", "))
}

// emit prints v in the resolved format.
func (a *app) emit(local string, v view) error {
	f, err := a.format(local)
	if err != nil {
		return err
	}
	return writeView(a.stdout, f, v)
}

func writeView(w io.Writer, format string, v view) error {
	switch format {
	case formatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v.json)
	case formatList:
		for _, r := range v.rows {
			fmt.Fprintln(w, strings.Join(r, "|"))
		}
		return nil
	}
	writeTable(w, v.headers, v.rows)
	return nil
}

// writeTable draws a bordered table.
func writeTable(w io.Writer, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i := range min(len(r), len(widths)) {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	var sep strings.Builder
	sep.WriteString("+")
	for _, n := range widths {
		sep.WriteString(strings.Repeat("-", n+2) + "+")
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, n := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + c + strings.Repeat(" ", n-utf8.RuneCountInString(c)) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	fmt.Fprintln(w, sep.String())
	line(headers)
	fmt.Fprintln(w, sep.String())
	for _, r := range rows {
		line(r)
	}
	fmt.Fprintln(w, sep.String())
}

// propertyView is a single object shown as a two-column Property/Value table.
func propertyView(jsonValue any, pairs ...[2]string) view {
	rows := make([][]string, len(pairs))
	for i, p := range pairs {
		rows[i] = []string{p[0], p[1]}
	}
	return view{json: jsonValue, headers: []string{"Property", "Value"}, rows: rows}
}

// formatMicros renders a µs-since-epoch timestamp in UTC.
func formatMicros(us uint64) string {
	if us == 0 {
		return "-"
	}
	return time.UnixMicro(int64(us)).UTC().Format("2006-01-02 15:04:05")
}

// formatBytes renders a byte count with binary units.
func formatBytes(n uint64) string {
	if n == math.MaxUint64 {
		return "unlimited"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// formatExpiry renders a message expiry in µs.
func formatExpiry(us uint64) string {
	switch us {
	case math.MaxUint64:
		return "unlimited"
	case 0:
		return "server_default"
	}
	return (time.Duration(us) * time.Microsecond).String()
}

// formatDuration renders an uptime in µs.
func formatDuration(us uint64) string {
	return (time.Duration(us) * time.Microsecond).Truncate(time.Second).String()
}

func u64s(v uint64) string { return fmt.Sprintf("%d", v) }
