package wire

import "fmt"

// DecodeRequestBody decodes the body of any command this file set owns, dispatching on the command code.
// SendMessages and PollMessages bodies belong to the message codec (batch/messages files) and legacy
// login codes have no body format: both return an error here. The result is one of the *Request types
// of requests*.go (values, not pointers).
func DecodeRequestBody(code CommandCode, body []byte) (Request, error) {
	switch code {
	case CodePing, CodeGetStats, CodeGetClusterMetadata, CodeGetMe, CodeGetClients, CodeGetUsers,
		CodeGetPersonalAccessTokens, CodeGetStreams, CodeLogoutUser:
		return decodeEmpty(code, body)
	case CodeGetStream, CodeDeleteStream, CodePurgeStream, CodeGetUser, CodeDeleteUser, CodeGetTopics:
		return decodeIdent(code, body)
	case CodeGetTopic, CodeDeleteTopic, CodePurgeTopic, CodeGetConsumerGroups:
		return decodeTopicRequest(code, body)
	case CodeGetConsumerGroup, CodeDeleteConsumerGroup, CodeJoinConsumerGroup, CodeLeaveConsumerGroup, CodeSyncConsumerGroup:
		return decodeGroupRequest(code, body)
	case CodeCreatePartitions, CodeDeletePartitions:
		return decodePartitions(code, body)
	case CodeGetConsumerOffset, CodeStoreConsumerOffset, CodeDeleteConsumerOffset:
		return decodeConsumerOffset(code, body)
	case CodeCreateStream:
		return DecodeCreateStream(body)
	case CodeUpdateStream:
		return DecodeUpdateStream(body)
	case CodeCreateTopic:
		return DecodeCreateTopic(body)
	case CodeUpdateTopic:
		return DecodeUpdateTopic(body)
	case CodeDeleteSegments:
		return DecodeDeleteSegments(body)
	case CodeCreateConsumerGroup:
		return DecodeCreateConsumerGroup(body)
	case CodeFlushUnsavedBuffer:
		return DecodeFlushUnsavedBuffer(body)
	case CodeCreateUser:
		return DecodeCreateUser(body)
	case CodeUpdateUser:
		return DecodeUpdateUser(body)
	case CodeUpdatePermissions:
		return DecodeUpdatePermissions(body)
	case CodeChangePassword:
		return DecodeChangePassword(body)
	case CodeCreatePersonalAccessToken:
		return DecodeCreatePersonalAccessToken(body)
	case CodeDeletePersonalAccessToken:
		return DecodeDeletePersonalAccessToken(body)
	case CodeGetClient:
		d := newDecoder("GetClient", body)
		r := GetClientRequest{ClientID: d.u32("client_id")}
		d.skipTrailing()
		return r, d.err()
	case CodeDescribeOptions:
		d := newDecoder("DescribeOptions", body)
		r := DescribeOptionsRequest{Scope: DescribeScope(d.u8("scope"))}
		if !d.failed() && (r.Scope < ScopeTopic || r.Scope > ScopeUser) {
			d.fail("scope", "scope %d is not 1 (topic), 2 (stream) or 3 (user)", r.Scope)
		}
		d.skipTrailing()
		return r, d.err()
	case CodeGetSnapshotFile:
		d := newDecoder("GetSnapshotFile", body)
		r := GetSnapshotFileRequest{Compression: d.u8("compression")}
		r.Types = d.bytes8("types")
		d.skipTrailing()
		return r, d.err()
	}
	return nil, &BodyError{Body: code.String(), Field: "code", Reason: fmt.Sprintf("no request body codec for command code %d here", uint32(code)), Code: ErrInvalidCommand}
}
