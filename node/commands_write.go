package node

import (
	"context"
	"errors"

	"github.com/lodestream/lodestream/consensus"
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// handleMetadataWrite serves a metadata-plane replicated request: decode the
// body, resolve everything nondeterministic here (hashes, tokens, options),
// authorize (status 41), propose, and answer with the committed result.
func (n *Node) handleMetadataWrite(c *transport.Conn, s *session, hdr wire.RequestHeader, body []byte) {
	v := s.view()
	if !v.bound || toConsensus(hdr.Client) != v.client {
		n.evict(c, s, hdr.Client, wire.EvictNoSession)
		return
	}
	code, _ := wire.CodeForOperation(hdr.Operation)
	out, status := n.submitMetadataWrite(n.lifetime, v, metadataSlot{session: hdr.Session, request: hdr.Request, checksum: hdr.RequestChecksum.Lo}, code, body)
	if status != wire.OK {
		n.sendStatus(c, hdr, status)
		return
	}
	if n.answerTransient(c, s, hdr, out) {
		return
	}
	n.sendOK(c, hdr, out.body)
}

// metadataSlot is a request's place in its client session: session number,
// request number and the checksum consensus deduplicates a retry by.
type metadataSlot struct {
	session, request, checksum uint64
}

// submitMetadataWrite is the one metadata-plane write path (binary frames
// and HTTP): decode, resolve, authorize, propose. A non-OK status is a
// refusal before consensus; otherwise out is the consensus outcome.
func (n *Node) submitMetadataWrite(ctx context.Context, v sessionView, slot metadataSlot, code wire.CommandCode, body []byte) (outcome, wire.ErrorCode) {
	req, cmd, extra, status := n.prepareMetadataWrite(v, slot, code, body)
	if status != wire.OK {
		return outcome{}, status
	}
	return n.proposeMetadataWrite(ctx, req, cmd, extra), wire.OK
}

// proposeMetadataWrite proposes a prepared write. A purge or segment
// deletion is carried out by the partitions' own groups after the commit,
// and new partitions are opened off the metadata loop: the write is
// answered once this node's partitions reflect it (bounded waits).
func (n *Node) proposeMetadataWrite(ctx context.Context, req consensus.Request, cmd metadata.Command, extra any) outcome {
	out := n.driver.propose(ctx, req, extra)
	if out.kind == consensus.ReplyCommitted {
		n.awaitWatermarks(ctx, cmd)
		n.awaitOpen(ctx, cmd)
	}
	return out
}

// prepareMetadataWrite is submitMetadataWrite up to the proposal: the
// consensus request (hashes and tokens resolved once, so a replay is
// byte-identical) and its node-local reply part.
func (n *Node) prepareMetadataWrite(v sessionView, slot metadataSlot, code wire.CommandCode, body []byte) (consensus.Request, metadata.Command, any, wire.ErrorCode) {
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return consensus.Request{}, nil, nil, bodyErrorCode(err)
	}
	cmd, extra, status := n.metadataCommand(v, req)
	if status != wire.OK {
		return consensus.Request{}, nil, nil, status
	}
	if !n.preAuthorize(v.userID, cmd) {
		return consensus.Request{}, nil, nil, wire.ErrUnauthorized
	}
	if code := n.creationResources(cmd); code != wire.OK {
		return consensus.Request{}, nil, nil, code
	}
	return consensus.Request{
		Client: v.client, Session: slot.session, Request: slot.request, Checksum: slot.checksum,
		Operation: consensus.Operation(cmd.Kind()), UserID: v.userID, Body: metadata.EncodeCommand(cmd),
	}, cmd, extra, wire.OK
}

// bodyErrorCode is the status for an undecodable body: the decoder's
// specific code (e.g. an options rule) or InvalidCommand.
func bodyErrorCode(err error) wire.ErrorCode {
	var be *wire.BodyError
	if errors.As(err, &be) && be.Code != wire.OK {
		return be.Code
	}
	return wire.ErrInvalidCommand
}

// metadataCommand maps a decoded request to the replicated command. It
// returns a non-OK status for requests refused before consensus.
func (n *Node) metadataCommand(v sessionView, req wire.Request) (metadata.Command, any, wire.ErrorCode) {
	switch r := req.(type) {
	case wire.CreateStreamRequest:
		if err := wire.ApplyStreamOrUserOptions(r.Options); err != nil {
			return nil, nil, optionCode(err)
		}
		return metadata.CreateStream{Name: r.Name}, nil, wire.OK
	case wire.UpdateStreamRequest:
		if err := wire.ApplyStreamOrUserOptions(r.Options); err != nil {
			return nil, nil, optionCode(err)
		}
		return metadata.UpdateStream{Stream: wireIdent(r.Stream), Name: r.Name}, nil, wire.OK
	case wire.IdentRequest:
		switch r.Command {
		case wire.CodeDeleteStream:
			return metadata.DeleteStream{Stream: wireIdent(r.ID)}, nil, wire.OK
		case wire.CodePurgeStream:
			return metadata.PurgeStream{Stream: wireIdent(r.ID)}, nil, wire.OK
		case wire.CodeDeleteUser:
			return metadata.DeleteUser{User: wireIdent(r.ID)}, nil, wire.OK
		}
	case wire.CreateTopicRequest:
		cmd, code := n.createTopicCommand(r)
		return cmd, nil, code
	case wire.UpdateTopicRequest:
		cmd, code := n.updateTopicCommand(r)
		return cmd, nil, code
	case wire.TopicRequest:
		switch r.Command {
		case wire.CodeDeleteTopic:
			return metadata.DeleteTopic{Stream: wireIdent(r.Stream), Topic: wireIdent(r.Topic)}, nil, wire.OK
		case wire.CodePurgeTopic:
			return metadata.PurgeTopic{Stream: wireIdent(r.Stream), Topic: wireIdent(r.Topic)}, nil, wire.OK
		}
	case wire.PartitionsRequest:
		if r.Count > metadata.PartitionsPerOpMax {
			return nil, nil, wire.ErrTooManyPartitions
		}
		if r.Command == wire.CodeCreatePartitions {
			return metadata.CreatePartitions{Stream: wireIdent(r.Stream), Topic: wireIdent(r.Topic), Count: r.Count}, nil, wire.OK
		}
		return metadata.DeletePartitions{Stream: wireIdent(r.Stream), Topic: wireIdent(r.Topic), Count: r.Count}, nil, wire.OK
	case wire.DeleteSegmentsRequest:
		return n.truncateCommand(r), nil, wire.OK
	case wire.CreateConsumerGroupRequest:
		return metadata.CreateConsumerGroup{Stream: wireIdent(r.Stream), Topic: wireIdent(r.Topic), Name: r.Name}, nil, wire.OK
	case wire.GroupRequest:
		stream, topic, group := wireIdent(r.Stream), wireIdent(r.Topic), wireIdent(r.Group)
		switch r.Command {
		case wire.CodeDeleteConsumerGroup:
			return metadata.DeleteConsumerGroup{Stream: stream, Topic: topic, Group: group}, nil, wire.OK
		case wire.CodeJoinConsumerGroup:
			return metadata.JoinConsumerGroup{Stream: stream, Topic: topic, Group: group, Client: metadata.ClientID(v.client)}, nil, wire.OK
		case wire.CodeLeaveConsumerGroup:
			return metadata.LeaveConsumerGroup{Stream: stream, Topic: topic, Group: group, Client: metadata.ClientID(v.client)}, nil, wire.OK
		}
	case wire.CreateUserRequest:
		return n.createUserCommand(r)
	case wire.UpdateUserRequest:
		if err := wire.ApplyStreamOrUserOptions(r.Options); err != nil {
			return nil, nil, optionCode(err)
		}
		cmd := metadata.UpdateUser{User: wireIdent(r.User), Username: r.Username}
		if r.Status != nil {
			st := metadata.UserStatus(*r.Status)
			cmd.Status = &st
		}
		return cmd, nil, wire.OK
	case wire.UpdatePermissionsRequest:
		return metadata.UpdatePermissions{User: wireIdent(r.User), Permissions: metadataPermissions(r.Permissions)}, nil, wire.OK
	case wire.ChangePasswordRequest:
		return n.changePasswordCommand(r)
	case wire.CreatePersonalAccessTokenRequest:
		if len(n.state.PersonalAccessTokens(v.userID)) >= n.patsPerUserMax() {
			return nil, nil, wire.ErrPersonalAccessTokensLimitReached
		}
		token, hash, err := metadata.NewPersonalAccessToken()
		if err != nil {
			n.log.Error("mint personal access token", "err", err)
			return nil, nil, wire.ErrError
		}
		return metadata.CreatePersonalAccessToken{Name: r.Name, TokenHash: hash, Expiry: r.ExpiryMicros}, patReply{token: token}, wire.OK
	case wire.DeletePersonalAccessTokenRequest:
		return metadata.DeletePersonalAccessToken{Name: r.Name}, nil, wire.OK
	}
	return nil, nil, wire.ErrInvalidCommand
}

// truncateCommand resolves DeleteSegments to the offset below which
// messages are deleted: the end of the n oldest segments of this node's log,
// so every replica applies the same watermark. It never moves backwards.
func (n *Node) truncateCommand(r wire.DeleteSegmentsRequest) metadata.TruncatePartition {
	stream, topic := wireIdent(r.Stream), wireIdent(r.Topic)
	cmd := metadata.TruncatePartition{Stream: stream, Topic: topic, PartitionID: r.PartitionID}
	if p, code := n.state.GetPartition(stream, topic, r.PartitionID); code == metadata.CodeOK {
		cmd.UpToOffset = p.DeletedUpToOffset
		if t, code := n.state.GetTopic(stream, topic); code == metadata.CodeOK {
			if e := n.plane.entry(partitionKey{t.StreamID, t.ID, r.PartitionID}); e != nil && e.log != nil {
				cmd.UpToOffset = max(cmd.UpToOffset, e.log.SegmentEndOffset(int(r.SegmentsCount)))
			}
		}
	}
	return cmd
}

func (n *Node) createUserCommand(r wire.CreateUserRequest) (metadata.Command, any, wire.ErrorCode) {
	if err := wire.ApplyStreamOrUserOptions(r.Options); err != nil {
		return nil, nil, optionCode(err)
	}
	if !metadata.ValidUsername(r.Username) {
		return nil, nil, wire.ErrInvalidUsername
	}
	var hash string
	var err error
	n.credentials.run(nil, func() { hash, err = metadata.HashPassword(r.Password) })
	if err != nil {
		if errors.Is(err, metadata.ErrInvalidPassword) {
			return nil, nil, wire.ErrInvalidPassword
		}
		n.log.Error("hash password", "err", err)
		return nil, nil, wire.ErrError
	}
	return metadata.CreateUser{
		Username: r.Username, PasswordHash: hash, Status: metadata.UserStatus(r.Status),
		Permissions: metadataPermissions(r.Permissions),
	}, nil, wire.OK
}

// changePasswordCommand verifies the current password here (argon2 off the
// event loop); a mismatch still commits, as InvalidCredentials, so a retried
// request id deduplicates.
func (n *Node) changePasswordCommand(r wire.ChangePasswordRequest) (metadata.Command, any, wire.ErrorCode) {
	cmd := metadata.ChangePassword{User: wireIdent(r.User)}
	user, found := n.state.GetUser(cmd.User)
	matches := false
	if found {
		n.credentials.run(nil, func() { matches = metadata.VerifyPasswordHash(user.PasswordHash, r.CurrentPassword) })
	}
	if found && !matches {
		cmd.CurrentPasswordMismatch = true
		return cmd, nil, wire.OK
	}
	var hash string
	var err error
	n.credentials.run(nil, func() { hash, err = metadata.HashPassword(r.NewPassword) })
	if err != nil {
		if errors.Is(err, metadata.ErrInvalidPassword) {
			return nil, nil, wire.ErrInvalidPassword
		}
		return nil, nil, wire.ErrError
	}
	cmd.NewPasswordHash = hash
	return cmd, nil, wire.OK
}

// patsPerUserMax is personal_access_token.max_tokens_per_user, capped by
// the state machine's own bound.
func (n *Node) patsPerUserMax() int {
	limit := int(n.cfg.PersonalAccessToken.MaxTokensPerUser)
	if limit <= 0 || limit > metadata.PATsPerUserMax {
		return metadata.PATsPerUserMax
	}
	return limit
}
