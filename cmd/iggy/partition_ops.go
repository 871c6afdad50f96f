package main

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// segmentsCountMax is upstream's bound on segment delete's count.
const segmentsCountMax = 100_000

// parsePartitionTarget reads the leading STREAM_ID TOPIC_ID PARTITION_ID of args.
func parsePartitionTarget(args []string) ([]wire.Identifier, uint32, error) {
	ids, err := parseIdentifiers(args, "stream ID", "topic ID")
	if err != nil {
		return nil, 0, err
	}
	partition, err := parsePartitionID(args[2])
	return ids, partition, err
}

func (a *app) segmentCommand() *cobra.Command {
	del := &cobra.Command{
		Use:     "delete STREAM_ID TOPIC_ID PARTITION_ID SEGMENTS_COUNT",
		Aliases: []string{"d"},
		Short:   "Delete the oldest SEGMENTS_COUNT segments of a partition",
		Example: "  iggy segment delete 1 1 1 10\n  iggy segment delete prod sensors 2 2",
		Args:    exactArgs(4, "STREAM_ID", "TOPIC_ID", "PARTITION_ID", "SEGMENTS_COUNT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, partition, err := parsePartitionTarget(args)
			if err != nil {
				return err
			}
			count, err := strconv.ParseUint(args[3], 10, 32)
			if err != nil || count < 1 || count > segmentsCountMax {
				return usagef("SEGMENTS_COUNT %q must be a number within 1..%d", args[3], segmentsCountMax)
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				if err := c.DeleteSegments(ctx, ids[0], ids[1], partition, uint32(count)); err != nil {
					return err
				}
				a.say("Deleted %d segment(s) from partition with ID: %d of topic with ID: %s in stream with ID: %s", count, partition, args[1], args[0])
				return nil
			})
		},
	}
	return group("segment", "seg", "segments operations", del)
}

func (a *app) flushCommand() *cobra.Command {
	var fsync bool
	cmd := &cobra.Command{
		Use:     "flush STREAM_ID TOPIC_ID PARTITION_ID",
		Aliases: []string{"f"},
		Short:   "Flush the unsaved buffer of a partition to disk (upstream servers)",
		Long: "Ask the server to write a partition's unsaved buffer to disk (with -f/--fsync, and fsync it).\n" +
			"Lodestream keeps no unsaved buffer (a topic's durability policy decides when a message is\n" +
			"acknowledged), so it answers FeatureUnavailable; the command exists so upstream scripts run.",
		Example: "  iggy message flush 1 2 1\n  iggy message flush --fsync prod sensors 0",
		Args:    exactArgs(3, "STREAM_ID", "TOPIC_ID", "PARTITION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, partition, err := parsePartitionTarget(args)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				req := wire.FlushUnsavedBufferRequest{Stream: ids[0], Topic: ids[1], PartitionID: partition, Fsync: fsync}
				if err := c.FlushUnsavedBuffer(ctx, req); err != nil {
					return err
				}
				a.say("Flushed messages of partition with ID: %d of topic with ID: %s in stream with ID: %s", partition, args[1], args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&fsync, "fsync", "f", false, "fsync the flushed data")
	return cmd
}
