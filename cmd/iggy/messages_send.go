package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Batching of stdin and file input: a send carries at most this many messages or payload bytes.
const (
	sendBatchMessagesMax = 1000
	sendBatchBytesMax    = 1 << 20
)

// partitioning builds the send partitioning from -p and -m (at most one of them).
func partitioning(cmd *cobra.Command, partition uint32, key string) (wire.Partitioning, error) {
	p, m := cmd.Flags().Changed("partition-id"), cmd.Flags().Changed("message-key")
	switch {
	case p && m:
		return wire.Partitioning{}, usagef("--partition-id and --message-key cannot be used together")
	case p:
		return wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: partition}, nil
	case m:
		if len(key) == 0 || len(key) > 255 {
			return wire.Partitioning{}, usagef("--message-key must be 1..255 bytes")
		}
		return wire.Partitioning{Kind: wire.PartitioningMessagesKey, Key: []byte(key)}, nil
	}
	return wire.Partitioning{Kind: wire.PartitioningBalanced}, nil
}

// newMessage stamps a payload with a random 128-bit ID (the server never mints IDs) and the
// current time.
func newMessage(payload []byte) wire.BatchMessageInput {
	m := wire.BatchMessageInput{OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: payload}
	_, _ = rand.Read(m.ID[:])
	return m
}

// sendBatcher groups messages into sends bounded by sendBatchMessagesMax and sendBatchBytesMax.
type sendBatcher struct {
	send  func([]wire.BatchMessageInput) error
	batch []wire.BatchMessageInput
	size  int
	total int // messages handed to send
}

func (b *sendBatcher) add(m wire.BatchMessageInput) error {
	b.batch = append(b.batch, m)
	b.size += len(m.Payload) + len(m.UserHeaders)
	if len(b.batch) >= sendBatchMessagesMax || b.size >= sendBatchBytesMax {
		return b.flush()
	}
	return nil
}

func (b *sendBatcher) flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	err := b.send(b.batch)
	b.total += len(b.batch)
	b.batch, b.size = nil, 0
	return err
}

// readLineBatches reads r one message per line (empty lines skipped) and calls fn with bounded
// batches.
func readLineBatches(r io.Reader, fn func([]wire.BatchMessageInput) error) (int, error) {
	br := bufio.NewReader(r)
	b := &sendBatcher{send: fn}
	for {
		line, err := br.ReadString('\n')
		if text := strings.TrimRight(line, "\r\n"); text != "" {
			if ferr := b.add(newMessage([]byte(text))); ferr != nil {
				return b.total, ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return b.total, b.flush()
		}
		if err != nil {
			return b.total, fmt.Errorf("read stdin: %w", err)
		}
	}
}

// readFileBatches sends the messages of a message file in bounded batches.
func readFileBatches(path string, fn func([]wire.BatchMessageInput) error) (int, error) {
	b := &sendBatcher{send: fn}
	if _, err := readMessageFile(path, b.add); err != nil {
		return b.total, err
	}
	return b.total, b.flush()
}

// sendOptions are message send's flags.
type sendOptions struct {
	partition uint32
	key       string
	headers   []string
	inputFile string
}

func (a *app) sendCommand() *cobra.Command {
	var o sendOptions
	cmd := &cobra.Command{
		Use:     "send STREAM_ID TOPIC_ID [MESSAGES...]",
		Aliases: []string{"s"},
		Short:   "Send messages to given topic ID and given stream ID",
		Long: "Send each MESSAGES argument as one message. With no MESSAGES, read standard input and send\n" +
			"each non-empty line as one message, or with --input-file send the messages of a file written by\n" +
			"'message poll --output-file'. Without -p or -m the server balances across partitions.\n" +
			"-H/--headers adds user headers KEY:KIND:VALUE (comma-separated, repeatable) to every message;\n" +
			"KIND is raw, string, bool, int8..int128, uint8..uint128, float32 or float64.",
		Example: "  iggy message send 1 2 message\n  iggy message send prod sensors \"long message\" second\n" +
			"  iggy message send -p 0 prod sensors hello\n  tail -f app.log | iggy message send prod logs\n" +
			"  iggy message send -H trace:string:abc,n:uint32:7 prod sensors hello\n  iggy message send --input-file saved.bin prod sensors",
		Args: rangeArgs(2, -1, "STREAM_ID", "TOPIC_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIdentifiers(args, "stream ID", "topic ID")
			if err != nil {
				return err
			}
			part, err := partitioning(cmd, o.partition, o.key)
			if err != nil {
				return err
			}
			headers, err := parseHeaders(o.headers)
			if err != nil {
				return err
			}
			if o.inputFile != "" && len(args) > 2 {
				return usagef("--input-file cannot be combined with MESSAGES arguments")
			}
			var fromArgs []wire.BatchMessageInput
			for i, m := range args[2:] {
				if m == "" {
					return usagef("message %d is empty; the server refuses empty payloads", i+1)
				}
				fromArgs = append(fromArgs, newMessage([]byte(m)))
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				send := func(batch []wire.BatchMessageInput) error {
					for i := range batch {
						if headers != nil && o.inputFile == "" {
							batch[i].UserHeaders = headers // file messages keep their own, as upstream
						}
						if err := a.seal(&batch[i]); err != nil {
							return err
						}
					}
					_, err := c.SendMessages(ctx, ids[0], ids[1], part, batch)
					return err
				}
				n := len(fromArgs)
				switch {
				case n > 0:
					err = send(fromArgs)
				case o.inputFile != "":
					n, err = readFileBatches(o.inputFile, send)
				default:
					n, err = readLineBatches(a.stdin, send)
				}
				if err != nil {
					return err
				}
				if n == 0 {
					return usagef("no messages to send: pass MESSAGES after STREAM_ID TOPIC_ID, pipe one message per line on stdin, or use --input-file")
				}
				a.say("Sent %d message(s) to topic with ID: %s in stream with ID: %s", n, args[1], args[0])
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.Uint32VarP(&o.partition, "partition-id", "p", 0, "partition ID to send to")
	fl.StringVarP(&o.key, "message-key", "m", "", "messages key; the server hashes it to pick the partition")
	fl.StringArrayVarP(&o.headers, "headers", "H", nil, "user headers KEY:KIND:VALUE, comma-separated (repeatable)")
	fl.StringVar(&o.inputFile, "input-file", "", "send the messages of this file (the format 'message poll --output-file' writes)")
	return cmd
}
