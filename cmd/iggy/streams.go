package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// parseIdentifier reads a stream, topic, user or group identifier as upstream does: a number is a
// numeric ID, anything else a name.
func parseIdentifier(what, s string) (wire.Identifier, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), nil
	}
	id := wire.NamedID(s)
	if err := id.Validate(); err != nil {
		return wire.Identifier{}, usagef("invalid %s %q: a %s is a numeric ID or a name of 1..255 bytes", what, s, what)
	}
	return id, nil
}

// parseIdentifiers parses positional identifiers named by whats.
func parseIdentifiers(args []string, whats ...string) ([]wire.Identifier, error) {
	out := make([]wire.Identifier, len(whats))
	for i, w := range whats {
		id, err := parseIdentifier(w, args[i])
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// group is a command that only holds subcommands.
func group(use, alias, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	if alias != "" {
		cmd.Aliases = []string{alias}
	}
	cmd.AddCommand(subs...)
	return cmd
}

// refuseExplicitID rejects upstream's -s/-t "ID to create": Lodestream always assigns IDs.
func refuseExplicitID(cmd *cobra.Command, flag, what string) error {
	if cmd.Flags().Changed(flag) {
		return usagef("--%s: this server assigns %s IDs itself and does not accept one on create; omit the option", flag, what)
	}
	return nil
}

type streamJSON struct {
	ID            uint32      `json:"id"`
	CreatedAt     uint64      `json:"created_at"`
	Name          string      `json:"name"`
	SizeBytes     uint64      `json:"size_bytes"`
	MessagesCount uint64      `json:"messages_count"`
	TopicsCount   uint32      `json:"topics_count"`
	Topics        []topicJSON `json:"topics,omitempty"`
}

func toStreamJSON(s *wire.Stream) streamJSON {
	return streamJSON{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, SizeBytes: s.SizeBytes,
		MessagesCount: s.MessagesCount, TopicsCount: s.TopicsCount}
}

func streamsView(streams []wire.Stream) view {
	j := make([]streamJSON, 0, len(streams))
	var rows [][]string
	for i := range streams {
		s := toStreamJSON(&streams[i])
		j = append(j, s)
		rows = append(rows, []string{fmt.Sprint(s.ID), formatMicros(s.CreatedAt), s.Name, formatBytes(s.SizeBytes),
			u64s(s.MessagesCount), fmt.Sprint(s.TopicsCount)})
	}
	return view{json: j, headers: []string{"ID", "Created", "Name", "Size", "Messages", "Topics"}, rows: rows}
}

func streamDetailsView(d *wire.StreamDetails) view {
	j := toStreamJSON(&d.Stream)
	j.Topics = []topicJSON{}
	for i := range d.Topics {
		j.Topics = append(j.Topics, toTopicJSON(&d.Topics[i]))
	}
	return propertyView(j,
		[2]string{"Stream ID", fmt.Sprint(j.ID)},
		[2]string{"Created", formatMicros(j.CreatedAt)},
		[2]string{"Stream name", j.Name},
		[2]string{"Stream size", formatBytes(j.SizeBytes)},
		[2]string{"Stream message count", u64s(j.MessagesCount)},
		[2]string{"Stream topics count", fmt.Sprint(j.TopicsCount)})
}

func (a *app) streamCommand() *cobra.Command {
	var streamID uint32
	create := &cobra.Command{
		Use:     "create [-s STREAM_ID] NAME",
		Aliases: []string{"c"},
		Short:   "Create stream with given name",
		Example: "  iggy stream create prod",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseExplicitID(cmd, "stream-id", "stream"); err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				s, err := c.CreateStream(ctx, args[0])
				if err != nil {
					return err
				}
				a.say("Stream with name: %s and ID: %d created", s.Name, s.ID)
				return nil
			})
		},
	}
	create.Flags().Uint32VarP(&streamID, "stream-id", "s", 0, "stream ID to create (not supported: the server assigns IDs)")

	get := &cobra.Command{
		Use:     "get STREAM_ID",
		Aliases: []string{"g"},
		Short:   "Get details of a single stream with given ID (a number or a name)",
		Example: "  iggy stream get 1\n  iggy stream get prod",
		Args:    exactArgs(1, "STREAM_ID"),
		RunE: a.streamAction(func(ctx context.Context, c *client.Client, id wire.Identifier, _ []string) error {
			d, err := c.GetStream(ctx, id)
			if err != nil {
				return err
			}
			return a.emit("", streamDetailsView(d))
		}),
	}

	list := a.listCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"l"},
		Short:   "List all streams",
		Example: "  iggy stream list\n  iggy stream list -l list\n  iggy --output json stream list",
	}, func(ctx context.Context, c *client.Client) (view, error) {
		streams, err := c.GetStreams(ctx)
		if err != nil {
			return view{}, err
		}
		return streamsView(streams), nil
	})

	update := &cobra.Command{
		Use:     "update STREAM_ID NAME",
		Aliases: []string{"u"},
		Short:   "Update stream name for given stream ID",
		Example: "  iggy stream update 1 production",
		Args:    exactArgs(2, "STREAM_ID", "NAME"),
		RunE: a.streamAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.UpdateStream(ctx, id, args[1]); err != nil {
				return err
			}
			a.say("Stream with ID: %s updated name to: %s", args[0], args[1])
			return nil
		}),
	}
	del := &cobra.Command{
		Use:     "delete STREAM_ID",
		Aliases: []string{"d"},
		Short:   "Delete stream with given ID",
		Args:    exactArgs(1, "STREAM_ID"),
		RunE: a.streamAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.DeleteStream(ctx, id); err != nil {
				return err
			}
			a.say("Stream with ID: %s deleted", args[0])
			return nil
		}),
	}
	purge := &cobra.Command{
		Use:     "purge STREAM_ID",
		Aliases: []string{"p"},
		Short:   "Purge all topics in given stream ID (removes all messages)",
		Args:    exactArgs(1, "STREAM_ID"),
		RunE: a.streamAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.PurgeStream(ctx, id); err != nil {
				return err
			}
			a.say("Stream with ID: %s purged", args[0])
			return nil
		}),
	}
	return group("stream", "s", "stream operations", create, del, update, get, list, purge)
}

// streamAction parses the leading STREAM_ID and runs fn logged in.
func (a *app) streamAction(fn func(context.Context, *client.Client, wire.Identifier, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := parseIdentifier("stream ID", args[0])
		if err != nil {
			return err
		}
		return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
			return fn(ctx, c, id, args)
		})
	}
}
