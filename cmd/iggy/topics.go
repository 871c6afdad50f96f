package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

const serverDefault = "server_default"

type partitionJSON struct {
	ID            uint32 `json:"id"`
	CreatedAt     uint64 `json:"created_at"`
	SegmentsCount uint32 `json:"segments_count"`
	CurrentOffset uint64 `json:"current_offset"`
	SizeBytes     uint64 `json:"size_bytes"`
	MessagesCount uint64 `json:"messages_count"`
}

type topicJSON struct {
	ID                  uint32          `json:"id"`
	CreatedAt           uint64          `json:"created_at"`
	Name                string          `json:"name"`
	SizeBytes           uint64          `json:"size_bytes"`
	MessageExpiryMicros uint64          `json:"message_expiry"`
	CompressionAlgo     string          `json:"compression_algorithm"`
	MaxTopicSizeBytes   uint64          `json:"max_topic_size"`
	MessagesCount       uint64          `json:"messages_count"`
	PartitionsCount     uint32          `json:"partitions_count"`
	Partitions          []partitionJSON `json:"partitions,omitempty"`
}

func compressionName(c uint8) string {
	switch c {
	case wire.CompressionNone:
		return "none"
	case wire.CompressionGzip:
		return "gzip"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

func toTopicJSON(t *wire.TopicHeader) topicJSON {
	return topicJSON{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, SizeBytes: t.SizeBytes,
		MessageExpiryMicros: t.MessageExpiry, CompressionAlgo: compressionName(t.Compression),
		MaxTopicSizeBytes: t.MaxTopicSize, MessagesCount: t.MessagesCount, PartitionsCount: t.PartitionsCount}
}

func topicsView(topics []wire.TopicHeader) view {
	j := make([]topicJSON, 0, len(topics))
	var rows [][]string
	for i := range topics {
		t := toTopicJSON(&topics[i])
		j = append(j, t)
		rows = append(rows, []string{fmt.Sprint(t.ID), formatMicros(t.CreatedAt), t.Name, formatBytes(t.SizeBytes),
			formatBytes(t.MaxTopicSizeBytes), formatExpiry(t.MessageExpiryMicros), u64s(t.MessagesCount), fmt.Sprint(t.PartitionsCount)})
	}
	return view{json: j, headers: []string{"ID", "Created", "Name", "Size", "Max Topic Size", "Message Expiry", "Messages", "Partitions"}, rows: rows}
}

func topicDetailsView(d *wire.TopicDetails) view {
	j := toTopicJSON(&d.TopicHeader)
	j.Partitions = []partitionJSON{}
	for _, p := range d.Partitions {
		j.Partitions = append(j.Partitions, partitionJSON{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, SizeBytes: p.SizeBytes, MessagesCount: p.MessagesCount})
	}
	j.PartitionsCount = uint32(len(d.Partitions))
	pairs := [][2]string{
		{"Topic id", fmt.Sprint(j.ID)},
		{"Created", formatMicros(j.CreatedAt)},
		{"Topic name", j.Name},
		{"Topic size", formatBytes(j.SizeBytes)},
		{"Compression", j.CompressionAlgo},
		{"Message expiry", formatExpiry(j.MessageExpiryMicros)},
		{"Max topic size", formatBytes(j.MaxTopicSizeBytes)},
		{"Topic message count", u64s(j.MessagesCount)},
		{"Partitions count", fmt.Sprint(j.PartitionsCount)},
	}
	for _, p := range j.Partitions {
		pairs = append(pairs, [2]string{fmt.Sprintf("Partition %d", p.ID),
			fmt.Sprintf("offset %d, %d messages, %s, %d segments", p.CurrentOffset, p.MessagesCount, formatBytes(p.SizeBytes), p.SegmentsCount)})
	}
	return propertyView(j, pairs...)
}

// topicOptions turns upstream's positional compression and expiry words and -m into topic options.
// "server_default" (or no expiry words) leaves the key out, so the server keeps its default on
// create and the current value on update.
func topicOptions(compression string, expiry []string, maxTopicSize string) ([]wire.Option, error) {
	var opts []wire.Option
	switch c := strings.ToLower(compression); c {
	case "none", "gzip":
		opts = append(opts, wire.OptionString(wire.OptCompressionAlgorithm, c))
	default:
		return nil, usagef("compression algorithm %q: use none or gzip", compression)
	}
	if e := strings.TrimSpace(strings.Join(expiry, " ")); e != "" && !strings.EqualFold(e, serverDefault) {
		opts = append(opts, wire.OptionString(wire.OptMessageExpiry, e))
	}
	if m := strings.TrimSpace(maxTopicSize); m != "" && !strings.EqualFold(m, serverDefault) {
		opts = append(opts, wire.OptionString(wire.OptMaxTopicSize, m))
	}
	return opts, nil
}

// parseSetOptions parses repeatable --set KEY=VALUE pairs.
func parseSetOptions(pairs []string) ([]wire.Option, error) {
	var out []wire.Option
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, usagef("--set %q: expected non-empty KEY=VALUE", p)
		}
		if len(k) > 255 || len(v) > 255 {
			return nil, usagef("--set %q: key and value are at most 255 bytes", p)
		}
		out = append(out, wire.OptionString(k, v))
	}
	return out, nil
}

func (a *app) topicCommand() *cobra.Command {
	var (
		topicID      uint32
		maxTopicSize string
		sets         []string
	)
	create := &cobra.Command{
		Use:     "create STREAM_ID NAME PARTITIONS_COUNT COMPRESSION_ALGORITHM [MESSAGE_EXPIRY...]",
		Aliases: []string{"c"},
		Short:   "Create topic with given name, number of partitions, compression algorithm and expiry time",
		Example: "  iggy topic create 1 sensor1 2 gzip 15days\n  iggy topic create prod sensor2 2 none\n" +
			"  iggy topic create test debugs 2 gzip 1day 1hour 1min 1sec\n  iggy topic create prod t 1 none unlimited -m 10GB",
		Args: rangeArgs(4, -1, "STREAM_ID", "NAME", "PARTITIONS_COUNT", "COMPRESSION_ALGORITHM"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseExplicitID(cmd, "topic-id", "topic"); err != nil {
				return err
			}
			stream, err := parseIdentifier("stream ID", args[0])
			if err != nil {
				return err
			}
			partitions, err := strconv.ParseUint(args[2], 10, 32)
			if err != nil {
				return usagef("PARTITIONS_COUNT %q is not a whole number", args[2])
			}
			opts, err := topicOptions(args[3], args[4:], maxTopicSize)
			if err != nil {
				return err
			}
			extra, err := parseSetOptions(sets)
			if err != nil {
				return err
			}
			opts = append(opts, extra...)
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				t, err := c.CreateTopic(ctx, stream, args[1], uint32(partitions), opts...)
				if err != nil {
					return err
				}
				a.say("Topic with name: %s, ID: %d, partitions count: %d, compression algorithm: %s, message expiry: %s, max topic size: %s created in stream with ID: %s",
					t.Name, t.ID, len(t.Partitions), compressionName(t.Compression), formatExpiry(t.MessageExpiry), formatBytes(t.MaxTopicSize), args[0])
				return nil
			})
		},
	}
	create.Flags().Uint32VarP(&topicID, "topic-id", "t", 0, "topic ID to create (not supported: the server assigns IDs)")
	create.Flags().StringVarP(&maxTopicSize, "max-topic-size", "m", serverDefault, "max topic size like \"unlimited\" or \"15GB\"")
	create.Flags().StringArrayVar(&sets, "set", nil, "additional topic option KEY=VALUE, repeatable (e.g. --set segment_size=128MiB)")

	var updMax string
	update := &cobra.Command{
		Use:     "update STREAM_ID TOPIC_ID NAME COMPRESSION_ALGORITHM [MESSAGE_EXPIRY...]",
		Aliases: []string{"u"},
		Short:   "Update topic name, compression algorithm and message expiry time",
		Example: "  iggy topic update 1 1 sensor3 none\n  iggy topic update test debugs ready gzip 15days",
		Args:    rangeArgs(4, -1, "STREAM_ID", "TOPIC_ID", "NAME", "COMPRESSION_ALGORITHM"),
		RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, args []string) error {
			opts, err := topicOptions(args[3], args[4:], updMax)
			if err != nil {
				return err
			}
			if err := c.UpdateTopic(ctx, s, t, args[2], opts...); err != nil {
				return err
			}
			a.say("Topic with ID: %s in stream with ID: %s updated name to: %s", args[1], args[0], args[2])
			return nil
		}),
	}
	update.Flags().StringVarP(&updMax, "max-topic-size", "m", serverDefault, "new max topic size like \"unlimited\" or \"15GB\"")

	get := &cobra.Command{
		Use:     "get STREAM_ID TOPIC_ID",
		Aliases: []string{"g"},
		Short:   "Get topic detail for given topic ID and stream ID",
		Args:    exactArgs(2, "STREAM_ID", "TOPIC_ID"),
		RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, _ []string) error {
			d, err := c.GetTopic(ctx, s, t)
			if err != nil {
				return err
			}
			return a.emit("", topicDetailsView(d))
		}),
	}

	var mode string
	list := &cobra.Command{
		Use:     "list STREAM_ID",
		Aliases: []string{"l"},
		Short:   "List all topics in given stream ID",
		Args:    exactArgs(1, "STREAM_ID"),
		RunE: a.streamAction(func(ctx context.Context, c *client.Client, s wire.Identifier, _ []string) error {
			f, err := a.format(mode)
			if err != nil {
				return err
			}
			topics, err := c.GetTopics(ctx, s)
			if err != nil {
				return err
			}
			return writeView(a.stdout, f, topicsView(topics))
		}),
	}
	listModeFlag(list, &mode)

	del := &cobra.Command{
		Use:     "delete STREAM_ID TOPIC_ID",
		Aliases: []string{"d"},
		Short:   "Delete topic with given ID in given stream ID",
		Args:    exactArgs(2, "STREAM_ID", "TOPIC_ID"),
		RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, args []string) error {
			if err := c.DeleteTopic(ctx, s, t); err != nil {
				return err
			}
			a.say("Topic with ID: %s in stream with ID: %s deleted", args[1], args[0])
			return nil
		}),
	}
	purge := &cobra.Command{
		Use:     "purge STREAM_ID TOPIC_ID",
		Aliases: []string{"p"},
		Short:   "Purge topic with given ID in given stream ID (removes all messages)",
		Args:    exactArgs(2, "STREAM_ID", "TOPIC_ID"),
		RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, args []string) error {
			if err := c.PurgeTopic(ctx, s, t); err != nil {
				return err
			}
			a.say("Topic with ID: %s in stream with ID: %s purged", args[1], args[0])
			return nil
		}),
	}
	return group("topic", "t", "topic operations", create, del, update, get, list, purge)
}

// topicAction parses the leading STREAM_ID TOPIC_ID and runs fn logged in.
func (a *app) topicAction(fn func(context.Context, *client.Client, wire.Identifier, wire.Identifier, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ids, err := parseIdentifiers(args, "stream ID", "topic ID")
		if err != nil {
			return err
		}
		return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
			return fn(ctx, c, ids[0], ids[1], args)
		})
	}
}
