package wire

import "encoding/binary"

// Seeds for the fuzz targets: valid frames and bodies plus edge cases (limits, truncation, bad kinds).

func requestHeaderSeeds() [][]byte {
	var seeds [][]byte
	add := func(h RequestHeader, body []byte) { seeds = append(seeds, EncodeRequest(nil, h, body)[:HeaderSize]) }
	add(RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated, Code: CodePing}, nil)
	add(RequestHeader{Client: Uint128{Lo: 1, Hi: 2}, Operation: OpRegister}, make([]byte, 30))
	add(RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Session: 5, Operation: OpCreateStream}, []byte{1, 'a'})
	add(RequestHeader{Client: Uint128{Lo: 1}, Request: 2, Session: 5, Operation: OpLogout}, nil)
	add(RequestHeader{Client: Uint128{Lo: 1}, Request: 3, Session: 5, Operation: OpSendMessages}, make([]byte, 300))
	add(RequestHeader{Client: Uint128{Lo: 1}, Request: 3, Session: 5, Operation: OpDeleteSegments}, nil)
	zeroClient := EncodeRequest(nil, RequestHeader{Operation: OpNonReplicated}, nil)
	seeds = append(seeds, zeroClient)
	huge := EncodeRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated}, nil)
	binary.LittleEndian.PutUint32(huge[48:], FrameSizeMax+1)
	seeds = append(seeds, huge, make([]byte, HeaderSize), []byte{5}, nil)
	return seeds
}

func replyHeaderSeeds() [][]byte {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 7, Session: 5, Operation: OpCreateStream}
	ok := EncodeReply(nil, req, OK, AppendResultOK(nil))
	rej := EncodeReply(nil, req, OK, AppendResultRejection(nil, ErrStreamNameAlreadyExists))
	status := EncodeReply(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated}, ErrUnauthenticated, nil)
	del := EncodeReply(nil, RequestHeader{Client: Uint128{Lo: 1}, Request: 9, Session: 1, Operation: OpDeleteSegments}, OK, AppendResultOK(nil))
	ev := EncodeEviction(Uint128{Lo: 1}, EvictIncompatibleProtocol, ProtocolVersion, ProtocolVersionMin)
	badEv := EncodeEviction(Uint128{Lo: 1}, 200, 0, 0)
	shortResult := EncodeReply(nil, req, OK, []byte{1, 0, 0, 0})
	return [][]byte{ok, rej, status, del, ev[:], badEv[:], shortResult, make([]byte, HeaderSize), nil}
}

func registerSeeds() [][]byte {
	v := ClientVersionInfo{ProtocolVersion: ProtocolVersion, SDKName: "go-sdk", SDKVersion: "0.9.0-edge.4"}
	pw, _ := RegisterRequest{Kind: RegisterWithPassword, Version: v, Username: "iggy", Password: "iggy"}.Encode()
	pat, _ := RegisterRequest{Kind: RegisterWithToken, Version: v, Token: "abcdefghijklmnop"}.Encode()
	empty, _ := RegisterRequest{Kind: RegisterWithPassword, Version: v, Username: "u", Password: ""}.Encode()
	reply := RegisterReply{UserID: 0, Session: 1, ProtocolVersion: ProtocolVersion, ServerVersion: "0.1.0"}.Append(nil)
	return [][]byte{pw, pat, empty, reply, pw[:10], append(pw, 0), {0, 0, 0, 0, 0}, nil}
}

func codeIndex(code CommandCode) byte {
	for i, c := range fuzzRequestCodes() {
		if c == code {
			return byte(i)
		}
	}
	panic("code not in fuzz table")
}

func requestBodySeeds() [][]byte {
	perms := &Permissions{Global: GlobalPermissions{ManageServers: true}, Streams: []StreamPermissions{{StreamID: 1, Topics: []TopicPermissions{{TopicID: 2}}}}}
	reqs := []Request{
		EmptyRequest{Command: CodePing},
		IdentRequest{Command: CodeGetStream, ID: NamedID("stream")},
		TopicRequest{Command: CodeGetTopic, Stream: NumericID(0), Topic: NumericID(0)},
		GroupRequest{Command: CodeSyncConsumerGroup, Stream: NumericID(0), Topic: NumericID(0), Group: NamedID("g")},
		CreateStreamRequest{Name: "s"},
		UpdateStreamRequest{Stream: NumericID(0), Name: "s"},
		CreateTopicRequest{Stream: NumericID(0), PartitionsCount: 1000, Name: "t", Options: Options{OptionUint64(OptSegmentSize, 1<<20), OptionString(OptMessageExpiry, "1h")}},
		UpdateTopicRequest{Stream: NumericID(0), Topic: NamedID("t"), Name: "t2", Options: Options{OptionString(OptCompressionAlgorithm, "gzip")}},
		PartitionsRequest{Command: CodeDeletePartitions, Stream: NumericID(0), Topic: NumericID(0), Count: 1},
		DeleteSegmentsRequest{Stream: NumericID(0), Topic: NumericID(0), PartitionID: 0, SegmentsCount: 1},
		CreateConsumerGroupRequest{Stream: NumericID(0), Topic: NumericID(0), Name: "g"},
		FlushUnsavedBufferRequest{Stream: NumericID(0), Topic: NumericID(0), Fsync: true},
		CreateUserRequest{Username: "user", Password: "secret", Status: UserActive, Permissions: perms},
		UpdateUserRequest{User: NumericID(1), Username: func() *string { s := "x"; return &s }()},
		UpdatePermissionsRequest{User: NumericID(1), Permissions: perms},
		ChangePasswordRequest{User: NumericID(1), CurrentPassword: "a", NewPassword: "b"},
		CreatePersonalAccessTokenRequest{Name: "pat", ExpiryMicros: 0},
		DeletePersonalAccessTokenRequest{Name: "pat"},
		ConsumerOffsetRequest{Command: CodeStoreConsumerOffset, Consumer: Consumer{Kind: ConsumerKindSingle, ID: NumericID(1)}, Stream: NumericID(0), Topic: NumericID(0), Partition: SomePartition(0), Offset: 5, Ack: AckQuorum},
		GetClientRequest{ClientID: 1},
		DescribeOptionsRequest{Scope: ScopeTopic},
		GetSnapshotFileRequest{Compression: 1, Types: []uint8{1}},
	}
	var seeds [][]byte
	for _, r := range reqs {
		body, err := EncodeRequestBody(r)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, append([]byte{codeIndex(r.Code())}, body...))
	}
	// Edge cases: truncated permissions, a key without a value, a string identifier of length 255.
	cu := seeds[12]
	seeds = append(seeds, cu[:len(cu)-3])
	seeds = append(seeds, append([]byte{codeIndex(CodeCreateStream), 1, 's', 2, 1, 0, 0, 0}, 'k'))
	long := append([]byte{codeIndex(CodeGetStream), 2, 255}, make([]byte, 255)...)
	for i := 3; i < len(long); i++ {
		long[i] = 'a'
	}
	seeds = append(seeds, long)
	return seeds
}

func responseBodySeeds() [][]byte {
	topic := TopicHeader{ID: 1, PartitionsCount: 1, MessageExpiry: Unlimited, Compression: CompressionNone, MaxTopicSize: Unlimited, Name: "t",
		Options: Options{OptionUint64(OptSegmentSize, 1<<20)}}
	sd := StreamDetails{Stream: Stream{ID: 1, Name: "s"}, Topics: []TopicHeader{topic}}
	td := TopicDetails{TopicHeader: topic, Partitions: []Partition{{ID: 0}}}
	gd := GroupDetails{ConsumerGroup: ConsumerGroup{ID: 1, Name: "g"}, Members: []GroupMember{{ID: 1, Partitions: []uint32{0, 1}}}}
	ud := UserDetails{User: User{ID: 0, Status: UserActive, Username: "iggy"}, Permissions: &Permissions{Global: GlobalPermissions{ManageServers: true}}}
	cd := ClientDetails{Client: Client{ClientID: 1, UserID: NoUser, Transport: TransportTCP, Address: "127.0.0.1:1"}, ConsumerGroups: []ClientGroup{{1, 1, 1}}}
	st := Stats{Hostname: "h", CacheMetrics: []CacheMetric{{Hits: 1}}}
	cm := ClusterMetadata{Name: "single-node", Nodes: []ClusterNode{{Name: "iggy-node", IP: "127.0.0.1", TCP: 8090}}}
	pat := PersonalAccessToken{Name: "p", ExpiryAt: 1}
	with := func(i int, b []byte) []byte { return append([]byte{byte(i)}, b...) }
	seeds := [][]byte{
		with(0, sd.Append(nil)),
		with(1, sd.Stream.Append(nil)),
		with(2, td.Append(nil)),
		with(3, AppendTopics(nil, []TopicHeader{topic})),
		with(4, gd.Append(nil)),
		with(5, gd.ConsumerGroup.Append(nil)),
		with(6, ud.Append(nil)),
		with(7, ud.User.Append(nil)),
		with(8, pat.Append(nil)),
		with(9, (&RawToken{Token: "tok"}).Append(nil)),
		with(10, cd.Append(nil)),
		with(11, cd.Client.Append(nil)),
		with(12, (&ConsumerOffset{PartitionID: 1}).Append(nil)),
		with(13, (&Assignment{Generation: 1, Partitions: []uint32{0}}).Append(nil)),
		with(14, st.Append(nil)),
		with(15, AppendOptionSpecs(nil, OptionSpecsForScope(ScopeTopic))),
		with(16, cm.Append(nil)),
		with(17, RegisterReply{Session: 1, ServerVersion: "v"}.Append(nil)),
		with(18, Options{OptionBool("a", true), OptionString("b", "c")}.Append(nil)),
		with(19, ud.Permissions.Bytes()),
		with(20, TLVPair{KeyKind: KindString, Key: []byte("k"), ValueKind: KindUint128, Value: make([]byte, 16)}.Append(nil)),
		with(21, AppendResultRejection(nil, ErrTransientNotAccepted)),
		// Edge cases: counts that promise more than the body holds.
		with(3, []byte{0xff, 0xff, 0xff, 0xff}),
		with(13, append(make([]byte, 8), 0xff, 0xff, 0xff, 0x7f)),
		with(16, append(appendStr32(nil, "c"), 0xff, 0, 0, 0)),
	}
	return seeds
}
