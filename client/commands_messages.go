package client

import (
	"context"

	"github.com/lodestream/lodestream/wire"
)

// SendMessages appends messages as one batch (SendMessages, code 101, partition plane). partitioning is
// sent as given: the server accepts balanced, partition-id and messages-key kinds. The reply lists the
// committed batch (or nothing when the server does not know its offsets). Each call carries its own
// request id, so a replay is recognised by the server; a DialCluster client routes it by its owner map
// and replays a send of unknown outcome (exactly_once.go).
func (c *Client) SendMessages(ctx context.Context, stream, topic wire.Identifier, partitioning wire.Partitioning, messages []wire.BatchMessageInput) ([]wire.SendConfirmation, error) {
	body, err := wire.AppendSendMessages(nil, stream, topic, partitioning, messages)
	if err != nil {
		return nil, &Error{Code: wire.ErrorCodeOf(err), Command: wire.CodeSendMessages, Err: err}
	}
	payload, err := c.sendMessages(ctx, ownerKeyOf(stream, topic, partitioning), body) // exactly_once.go
	if err != nil {
		return nil, err
	}
	out, err := wire.DecodeSendMessagesReply(payload)
	if err != nil {
		return nil, decodeErr(wire.CodeSendMessages, err)
	}
	return out, nil
}

// PollMessages reads up to count messages (PollMessages, code 100).
func (c *Client) PollMessages(ctx context.Context, req wire.PollMessagesRequest) (*wire.PollMessagesReply, error) {
	payload, err := c.call(ctx, wire.CodePollMessages, req.Append(nil))
	if err != nil {
		return nil, err
	}
	r, err := wire.DecodePollMessagesReply(payload)
	if err != nil {
		return nil, decodeErr(wire.CodePollMessages, err)
	}
	return &r, nil
}

// FlushUnsavedBuffer asks the server to write a partition's unsaved buffer to disk (code 102).
// Lodestream answers FeatureUnavailable (5): it keeps no unsaved buffer.
func (c *Client) FlushUnsavedBuffer(ctx context.Context, req wire.FlushUnsavedBufferRequest) error {
	return c.sendExpectEmpty(ctx, req)
}
