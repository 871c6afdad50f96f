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

// parseConsumerKind reads upstream's -k/--kind: consumer or consumer-group (consumer_group too).
func parseConsumerKind(s string) (wire.ConsumerKind, error) {
	switch strings.ReplaceAll(strings.ToLower(s), "_", "-") {
	case "consumer":
		return wire.ConsumerKindSingle, nil
	case "consumer-group":
		return wire.ConsumerKindGroup, nil
	}
	return 0, usagef("--kind %q: use consumer or consumer-group", s)
}

// parsePartitionID reads a PARTITION_ID argument.
func parsePartitionID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, usagef("PARTITION_ID %q is not a whole number", s)
	}
	return uint32(n), nil
}

// offsetTarget is the parsed CONSUMER_ID STREAM_ID TOPIC_ID PARTITION_ID of a consumer-offset
// command.
type offsetTarget struct {
	consumer      wire.Consumer
	stream, topic wire.Identifier
	partition     uint32
}

func parseOffsetTarget(args []string, kind string) (offsetTarget, error) {
	k, err := parseConsumerKind(kind)
	if err != nil {
		return offsetTarget{}, err
	}
	consumer, err := parseIdentifier("consumer ID", args[0])
	if err != nil {
		return offsetTarget{}, err
	}
	ids, p, err := parsePartitionTarget(args[1:])
	if err != nil {
		return offsetTarget{}, err
	}
	return offsetTarget{consumer: wire.Consumer{Kind: k, ID: consumer}, stream: ids[0], topic: ids[1], partition: p}, nil
}

type consumerOffsetJSON struct {
	Consumer      string `json:"consumer"`
	Stream        string `json:"stream"`
	Topic         string `json:"topic"`
	PartitionID   uint32 `json:"partition_id"`
	CurrentOffset uint64 `json:"current_offset"`
	StoredOffset  uint64 `json:"stored_offset"`
}

func (a *app) consumerOffsetCommand() *cobra.Command {
	var getKind, setKind string
	get := &cobra.Command{
		Use:     "get CONSUMER_ID STREAM_ID TOPIC_ID PARTITION_ID",
		Aliases: []string{"g"},
		Short:   "Retrieve the offset of a consumer for a given partition from the server",
		Example: "  iggy consumer-offset get 1 3 5 1\n  iggy consumer-offset get cg-1 prod sensors 1 --kind consumer-group",
		Args:    exactArgs(4, "CONSUMER_ID", "STREAM_ID", "TOPIC_ID", "PARTITION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseOffsetTarget(args, getKind)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				o, err := c.GetConsumerOffset(ctx, t.consumer, t.stream, t.topic, wire.SomePartition(t.partition))
				if err != nil {
					return err
				}
				if o == nil {
					return fmt.Errorf("no offset stored for consumer %s on partition %d of topic %s in stream %s", args[0], t.partition, args[2], args[1])
				}
				j := consumerOffsetJSON{Consumer: args[0], Stream: args[1], Topic: args[2], PartitionID: o.PartitionID,
					CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset}
				return a.emit("", propertyView(j,
					[2]string{"Consumer ID", j.Consumer}, [2]string{"Stream ID", j.Stream}, [2]string{"Topic ID", j.Topic},
					[2]string{"Partition ID", fmt.Sprint(j.PartitionID)}, [2]string{"Current offset", u64s(j.CurrentOffset)},
					[2]string{"Stored offset", u64s(j.StoredOffset)}, [2]string{"Offset lag", u64s(j.CurrentOffset - min(j.StoredOffset, j.CurrentOffset))}))
			})
		},
	}
	get.Flags().StringVarP(&getKind, "kind", "k", "consumer", "consumer kind: consumer or consumer-group")
	set := &cobra.Command{
		Use:     "set CONSUMER_ID STREAM_ID TOPIC_ID PARTITION_ID OFFSET",
		Aliases: []string{"s"},
		Short:   "Set the offset of a consumer for a given partition on the server",
		Example: "  iggy consumer-offset set 1 3 5 1 100\n  iggy consumer-offset set consumer prod sensors 1 100",
		Args:    exactArgs(5, "CONSUMER_ID", "STREAM_ID", "TOPIC_ID", "PARTITION_ID", "OFFSET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseOffsetTarget(args, setKind)
			if err != nil {
				return err
			}
			offset, err := strconv.ParseUint(args[4], 10, 64)
			if err != nil {
				return usagef("OFFSET %q is not a whole number", args[4])
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				if err := c.StoreConsumerOffset(ctx, t.consumer, t.stream, t.topic, wire.SomePartition(t.partition), offset); err != nil {
					return err
				}
				a.say("Consumer offset for consumer with ID: %s and partition with ID: %d set to %d", args[0], t.partition, offset)
				return nil
			})
		},
	}
	set.Flags().StringVarP(&setKind, "kind", "k", "consumer", "consumer kind: consumer or consumer-group")
	return group("consumer-offset", "o", "consumer offset operations", get, set)
}
