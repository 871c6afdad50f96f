package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// trailingOutcome is what upstream's server does with a request body followed by extra bytes.
type trailingOutcome int

const (
	// trailingIgnored: upstream decodes with decode_from (reads what it needs, ignores the rest).
	trailingIgnored trailingOutcome = iota + 1
	// trailingRejected: the last field runs to the end of the body (options tail, message batch), so the
	// extra bytes are part of it and fail its checks.
	trailingRejected
	// trailingNoCodec: legacy login codes; the server answers Eviction 15 MalformedLogin whatever the body.
	trailingNoCodec
)

// trailingCase is one command code: a valid body, the upstream outcome with extra bytes and, for a
// rejection, the status code we answer (upstream's code where it answers at all).
type trailingCase struct {
	code    CommandCode
	body    []byte
	outcome trailingOutcome
	status  ErrorCode
	// upstream names where upstream decides (core/...): documentation for the reader.
	upstream string
}

func trailingCases(t *testing.T) []trailingCase {
	t.Helper()
	s, tp, g := NumericID(1), NamedID("topic"), NamedID("group")
	user := NamedID("someone")
	consumer := Consumer{Kind: ConsumerKindSingle, ID: NumericID(7)}
	perms := &Permissions{Global: GlobalPermissions{ReadStreams: true},
		Streams: []StreamPermissions{{StreamID: 1, ReadStream: true, Topics: []TopicPermissions{{TopicID: 2, ReadTopic: true}}}}}
	name := "n1"
	status := UserActive
	version := ClientVersionInfo{ProtocolVersion: ProtocolVersion, SDKName: "rust-sdk", SDKVersion: "0.9.0"}
	pw, err := RegisterRequest{Kind: RegisterWithPassword, Version: version, Username: "iggy", Password: "iggy"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pat, err := RegisterRequest{Kind: RegisterWithToken, Version: version, Token: "0123456789abcdef"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	send, err := AppendSendMessages(nil, s, tp, Partitioning{Kind: PartitioningBalanced},
		[]BatchMessageInput{{ID: [16]byte{1}, OriginTimestamp: 1, Payload: []byte("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	poll := PollMessagesRequest{Consumer: consumer, Stream: s, Topic: tp, Partition: SomePartition(0),
		Strategy: PollingStrategy{Kind: PollOffset}, Count: 10, AutoCommit: true}.Append(nil)
	body := func(r Request) []byte { return r.AppendBody(nil) }
	const codec = "core/binary_protocol/src/codec.rs WireDecode::decode_from"
	const options = "WireOptions::from_slice(&buf[pos..]) validates the whole tail as options"
	return []trailingCase{
		{CodePing, nil, trailingIgnored, OK, codec},
		{CodeGetStats, nil, trailingIgnored, OK, codec},
		{CodeGetSnapshotFile, body(GetSnapshotFileRequest{Compression: 1, Types: []uint8{1, 2}}), trailingIgnored, OK, "dispatch.rs decode_get_snapshot: decode_from"},
		{CodeGetClusterMetadata, nil, trailingIgnored, OK, codec},
		{CodeDescribeOptions, body(DescribeOptionsRequest{Scope: ScopeTopic}), trailingIgnored, OK, codec},
		{CodeGetMe, nil, trailingIgnored, OK, codec},
		{CodeGetClient, body(GetClientRequest{ClientID: 3}), trailingIgnored, OK, "dispatch.rs GetClientRequest::decode_from"},
		{CodeGetClients, nil, trailingIgnored, OK, codec},
		{CodeGetUser, body(IdentRequest{Command: CodeGetUser, ID: user}), trailingIgnored, OK, "dispatch/authz.rs GetUserRequest::decode_from"},
		{CodeGetUsers, nil, trailingIgnored, OK, codec},
		{CodeCreateUser, body(CreateUserRequest{Username: "someone", Password: "secret", Status: UserActive, Permissions: perms}), trailingRejected, ErrInvalidCommand, options},
		{CodeDeleteUser, body(IdentRequest{Command: CodeDeleteUser, ID: user}), trailingIgnored, OK, "stm/mod.rs decode_from"},
		{CodeUpdateUser, body(UpdateUserRequest{User: user, Username: &name, Status: &status}), trailingRejected, ErrInvalidCommand, options},
		{CodeUpdatePermissions, body(UpdatePermissionsRequest{User: user, Permissions: perms}), trailingIgnored, OK, "stm/mod.rs decode_from (perm_len must still match the block)"},
		{CodeChangePassword, body(ChangePasswordRequest{User: user, CurrentPassword: "old", NewPassword: "newer"}), trailingIgnored, OK, "users.rs / stm/authz.rs decode_from"},
		{CodeLoginUser, nil, trailingNoCodec, OK, "legacy: Eviction 15"},
		{CodeLogoutUser, nil, trailingIgnored, OK, "body not read"},
		{CodeLoginRegister, pw, trailingIgnored, OK, "dispatch.rs LoginRegisterRequest::decode_after_prefix, consumed count discarded"},
		{CodeGetPersonalAccessTokens, nil, trailingIgnored, OK, codec},
		{CodeCreatePersonalAccessToken, body(CreatePersonalAccessTokenRequest{Name: "tok", ExpiryMicros: 60_000_000}), trailingIgnored, OK, "pat.rs decode_from"},
		{CodeDeletePersonalAccessToken, body(DeletePersonalAccessTokenRequest{Name: "tok"}), trailingIgnored, OK, "pat.rs decode_from"},
		{CodeLoginWithPersonalAccessToken, nil, trailingNoCodec, OK, "legacy: Eviction 15"},
		{CodeLoginRegisterWithPat, pat, trailingIgnored, OK, "dispatch.rs LoginRegisterWithPatRequest::decode_after_prefix"},
		{CodePollMessages, poll, trailingIgnored, OK, "dispatch.rs PollMessagesRequest::decode_from"},
		{CodeSendMessages, send, trailingRejected, ErrInvalidMessagePayloadLength, "server_common send_messages.rs admit_wire_request: batch must fill the body exactly"},
		{CodeFlushUnsavedBuffer, body(FlushUnsavedBufferRequest{Stream: s, Topic: tp, PartitionID: 0, Fsync: true}), trailingIgnored, OK, codec},
		{CodeGetConsumerOffset, body(ConsumerOffsetRequest{Command: CodeGetConsumerOffset, Consumer: consumer, Stream: s, Topic: tp, Partition: SomePartition(0)}), trailingIgnored, OK, "dispatch.rs GetConsumerOffsetRequest::decode_from"},
		{CodeStoreConsumerOffset, body(ConsumerOffsetRequest{Command: CodeStoreConsumerOffset, Consumer: consumer, Stream: s, Topic: tp, Partition: SomePartition(0), Offset: 5, Ack: AckQuorum}), trailingIgnored, OK, "iggy_partition.rs StoreConsumerOffsetRequest::decode_from"},
		{CodeDeleteConsumerOffset, body(ConsumerOffsetRequest{Command: CodeDeleteConsumerOffset, Consumer: consumer, Stream: s, Topic: tp, Partition: SomePartition(0), Ack: AckQuorum}), trailingIgnored, OK, "iggy_partition.rs DeleteConsumerOffsetRequest::decode_from"},
		{CodeGetStream, body(IdentRequest{Command: CodeGetStream, ID: s}), trailingIgnored, OK, "responses.rs GetStreamRequest::decode_from"},
		{CodeGetStreams, nil, trailingIgnored, OK, codec},
		{CodeCreateStream, body(CreateStreamRequest{Name: "s1"}), trailingRejected, ErrInvalidCommand, options},
		{CodeDeleteStream, body(IdentRequest{Command: CodeDeleteStream, ID: s}), trailingIgnored, OK, "stm/authz.rs DeleteStreamRequest::decode_from"},
		{CodeUpdateStream, body(UpdateStreamRequest{Stream: s, Name: "s2"}), trailingRejected, ErrInvalidCommand, options},
		{CodePurgeStream, body(IdentRequest{Command: CodePurgeStream, ID: s}), trailingIgnored, OK, "stm/authz.rs PurgeStreamRequest::decode_from"},
		{CodeGetTopic, body(TopicRequest{Command: CodeGetTopic, Stream: s, Topic: tp}), trailingIgnored, OK, "responses.rs GetTopicRequest::decode_from"},
		{CodeGetTopics, body(IdentRequest{Command: CodeGetTopics, ID: s}), trailingIgnored, OK, "responses.rs GetTopicsRequest::decode_from"},
		{CodeCreateTopic, body(CreateTopicRequest{Stream: s, PartitionsCount: 2, Name: "t1"}), trailingRejected, ErrInvalidCommand, options},
		{CodeDeleteTopic, body(TopicRequest{Command: CodeDeleteTopic, Stream: s, Topic: tp}), trailingIgnored, OK, "stm/authz.rs DeleteTopicRequest::decode_from"},
		{CodeUpdateTopic, body(UpdateTopicRequest{Stream: s, Topic: tp, Name: "t2"}), trailingRejected, ErrInvalidCommand, options},
		{CodePurgeTopic, body(TopicRequest{Command: CodePurgeTopic, Stream: s, Topic: tp}), trailingIgnored, OK, "stm/authz.rs PurgeTopicRequest::decode_from"},
		{CodeCreatePartitions, body(PartitionsRequest{Command: CodeCreatePartitions, Stream: s, Topic: tp, Count: 2}), trailingIgnored, OK, "dispatch.rs CreatePartitionsRequest::decode_from"},
		{CodeDeletePartitions, body(PartitionsRequest{Command: CodeDeletePartitions, Stream: s, Topic: tp, Count: 1}), trailingIgnored, OK, "dispatch.rs DeletePartitionsRequest::decode_from"},
		{CodeDeleteSegments, body(DeleteSegmentsRequest{Stream: s, Topic: tp, PartitionID: 0, SegmentsCount: 1}), trailingIgnored, OK, "dispatch.rs DeleteSegmentsRequest::decode_from"},
		{CodeGetConsumerGroup, body(GroupRequest{Command: CodeGetConsumerGroup, Stream: s, Topic: tp, Group: g}), trailingIgnored, OK, codec},
		{CodeGetConsumerGroups, body(TopicRequest{Command: CodeGetConsumerGroups, Stream: s, Topic: tp}), trailingIgnored, OK, codec},
		{CodeCreateConsumerGroup, body(CreateConsumerGroupRequest{Stream: s, Topic: tp, Name: "group"}), trailingIgnored, OK, "stm/authz.rs CreateConsumerGroupRequest::decode_from"},
		{CodeDeleteConsumerGroup, body(GroupRequest{Command: CodeDeleteConsumerGroup, Stream: s, Topic: tp, Group: g}), trailingIgnored, OK, "stm/authz.rs decode_from"},
		{CodeJoinConsumerGroup, body(GroupRequest{Command: CodeJoinConsumerGroup, Stream: s, Topic: tp, Group: g}), trailingIgnored, OK, "consumer_group.rs decode_from"},
		{CodeLeaveConsumerGroup, body(GroupRequest{Command: CodeLeaveConsumerGroup, Stream: s, Topic: tp, Group: g}), trailingIgnored, OK, "consumer_group.rs decode_from"},
		{CodeSyncConsumerGroup, body(GroupRequest{Command: CodeSyncConsumerGroup, Stream: s, Topic: tp, Group: g}), trailingIgnored, OK, "dispatch.rs SyncConsumerGroupRequest::decode_from"},
	}
}

// decodeForTrailingTest decodes a body with the decoder the server uses for code.
func decodeForTrailingTest(code CommandCode, b []byte) (any, error) {
	switch code {
	case CodeLoginRegister, CodeLoginRegisterWithPat:
		// The server tries the password reading first and the token reading when the password's
		// credentials are rejected; what matters is that the reading of this code is unchanged.
		shapes, err := DecodeRegisterShapes(b)
		if code == CodeLoginRegister {
			return shapes.Password, err
		}
		return shapes.Token, err
	case CodeSendMessages:
		r, err := DecodeSendMessages(b)
		r.Batch = nil // aliases the body
		return r, err
	case CodePollMessages:
		return DecodePollMessages(b)
	}
	return DecodeRequestBody(code, b)
}

// TestTrailingBytesPerCommandCode: every command code with 4 and 64 extra bytes (zeros and a 0xA5
// pattern) gets upstream's outcome: ignored (the decoded request equals the one without them) or
// rejected with a defined code. docs/wire.md holds the same table.
func TestTrailingBytesPerCommandCode(t *testing.T) {
	cases := trailingCases(t)
	seen := map[CommandCode]bool{}
	for _, tc := range cases {
		if seen[tc.code] {
			t.Fatalf("%s listed twice", tc.code)
		}
		seen[tc.code] = true
	}
	for code := range commandTable {
		if !seen[code] {
			t.Errorf("command code %d (%s) has no trailing-bytes case", uint32(code), code)
		}
	}
	for _, tc := range cases {
		t.Run(tc.code.String(), func(t *testing.T) {
			if tc.outcome == trailingNoCodec {
				if info, ok := tc.code.Info(); !ok || !info.Legacy {
					t.Fatalf("%s is not a legacy code", tc.code)
				}
				return
			}
			want, err := decodeForTrailingTest(tc.code, tc.body)
			if err != nil {
				t.Fatalf("the exact body does not decode: %v", err)
			}
			for _, n := range []int{4, 64} {
				for _, fill := range []byte{0x00, 0xA5} {
					b := append(append([]byte(nil), tc.body...), bytes.Repeat([]byte{fill}, n)...)
					got, err := decodeForTrailingTest(tc.code, b)
					switch tc.outcome {
					case trailingIgnored:
						if err != nil {
							t.Fatalf("%d trailing 0x%02x bytes: rejected (%v); upstream ignores them (%s)", n, fill, err, tc.upstream)
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%d trailing bytes changed the request:\n got %+v\nwant %+v", n, got, want)
						}
					case trailingRejected:
						if err == nil {
							t.Fatalf("%d trailing 0x%02x bytes accepted; upstream rejects (%s)", n, fill, tc.upstream)
						}
						if code := statusOfBodyError(err); code != tc.status {
							t.Fatalf("%d trailing 0x%02x bytes: status %s, want %s (%v)", n, fill, code, tc.status, err)
						}
					}
				}
			}
		})
	}
}

// statusOfBodyError is the status the server answers for a body error (node.bodyErrorCode and
// node.sendErrorCode): the error's own code, else InvalidCommand.
func statusOfBodyError(err error) ErrorCode {
	if code := ErrorCodeOf(err); code != OK {
		return code
	}
	return ErrInvalidCommand
}
