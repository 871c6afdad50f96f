package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
func le32(v uint32) []byte       { return appendU32(nil, v) }
func le64(v uint64) []byte       { return appendU64(nil, v) }

func TestIdentifierGolden(t *testing.T) {
	if got := NumericID(7).Append(nil); !bytes.Equal(got, []byte{1, 4, 7, 0, 0, 0}) {
		t.Fatalf("numeric %x", got)
	}
	if got := NamedID("ab").Append(nil); !bytes.Equal(got, []byte{2, 2, 'a', 'b'}) {
		t.Fatalf("string %x", got)
	}
	bad := map[string][]byte{
		"kind 0":             {0, 4, 1, 0, 0, 0},
		"kind 3":             {3, 1, 'a'},
		"numeric length 3":   {1, 3, 1, 0, 0},
		"string length 0":    {2, 0},
		"string truncated":   {2, 5, 'a'},
		"string bad utf8":    {2, 2, 0xff, 0xfe},
		"trailing byte":      {1, 4, 1, 0, 0, 0, 9},
		"missing length":     {1},
		"numeric truncated":  {1, 4, 1},
		"empty":              {},
		"numeric length 255": append([]byte{1, 255}, make([]byte, 255)...),
	}
	for name, b := range bad {
		if _, err := DecodeIdentifier(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBodyErrorsNameTheField(t *testing.T) {
	_, err := DecodeCreateTopic(cat(NumericID(1).Append(nil), le32(3), []byte{2, 0xff, 0xff}))
	var be *BodyError
	if !errors.As(err, &be) || be.Field != "name" || !strings.Contains(be.Reason, "UTF-8") || be.Code != ErrInvalidCommand {
		t.Fatalf("got %v", err)
	}
	// A trailing byte is ignored, as upstream's decode_from does (docs/wire.md).
	ds, err := DecodeDeleteSegments(cat(NumericID(1).Append(nil), NamedID("t").Append(nil), le32(0), le32(1), []byte{0}))
	if err != nil || ds.SegmentsCount != 1 {
		t.Fatalf("trailing byte: %+v, %v", ds, err)
	}
	_, err = DecodeCreateTopic(cat(NumericID(1).Append(nil), le32(3)))
	if !errors.As(err, &be) || !strings.HasPrefix(be.Field, "name") {
		t.Fatalf("missing name: %v", err)
	}
}

// Options block in a CreateTopic request: the raw tail of the body, no length prefix (§4.1, §4.2).
func TestCreateTopicGolden(t *testing.T) {
	req := CreateTopicRequest{Stream: NumericID(0), PartitionsCount: 2, Name: "t1",
		Options: Options{OptionUint64(OptMessageExpiry, 1000), OptionString(OptCompressionAlgorithm, "gzip")}}
	want := cat(
		[]byte{1, 4, 0, 0, 0, 0}, le32(2), []byte{2, 't', '1'},
		[]byte{2}, le32(14), []byte("message_expiry"), []byte{12}, le32(8), le64(1000),
		[]byte{2}, le32(21), []byte("compression_algorithm"), []byte{2}, le32(4), []byte("gzip"),
	)
	got, err := EncodeRequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes differ:\n got %x\nwant %x", got, want)
	}
	back, err := DecodeCreateTopic(want)
	if err != nil || !reflect.DeepEqual(back, req) {
		t.Fatalf("decoded %+v (%v)", back, err)
	}
}

func TestOptionsRules(t *testing.T) {
	pair := func(kk ValueKind, k []byte, vk ValueKind, v []byte) []byte {
		return TLVPair{KeyKind: kk, Key: k, ValueKind: vk, Value: v}.Append(nil)
	}
	cases := map[string]struct {
		block []byte
		code  ErrorCode
	}{
		"key kind not string": {pair(KindRaw, []byte("k"), KindString, []byte("v")), ErrInvalidCommand},
		"key bad utf8":        {pair(KindString, []byte{0xff}, KindString, []byte("v")), ErrInvalidCommand},
		"duplicate key":       {cat(pair(KindString, []byte("k"), KindBool, []byte{1}), pair(KindString, []byte("k"), KindBool, []byte{0})), ErrInvalidCommand},
		"kind 0":              {pair(0, []byte("k"), KindString, []byte("v")), ErrInvalidCommand}, // reserved: structural, as upstream
		"kind 16":             {pair(KindString, []byte("k"), 16, []byte("v")), ErrInvalidHeaderKind},
		"uint64 of 4 bytes":   {pair(KindString, []byte("k"), KindUint64, []byte{1, 2, 3, 4}), ErrInvalidCommand},
		"empty value":         {pair(KindString, []byte("k"), KindString, nil), ErrInvalidCommand},
		"odd field count":     {cat([]byte{2}, le32(1), []byte("k")), ErrInvalidCommand},
		"length 256":          {cat([]byte{2}, le32(256), make([]byte, 256)), ErrInvalidCommand},
		"truncated length":    {[]byte{2, 1, 0}, ErrInvalidCommand},
		"too large":           {make([]byte, OptionsBytesMax+1), ErrOptionsBlockTooLarge},
	}
	for name, tc := range cases {
		_, err := DecodeOptions(tc.block)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if got := ErrorCodeOf(err); got != tc.code {
			t.Errorf("%s: code %s, want %s (%v)", name, got, tc.code, err)
		}
	}
	// 1024 pairs pass, 1025 fail.
	var many []byte
	for i := 0; i < OptionsPairsMax+1; i++ {
		many = append(many, pair(KindString, []byte{byte('a' + i%26), byte('a' + i/26%26), byte('a' + i/676)}, KindBool, []byte{1})...)
		if i == OptionsPairsMax-1 {
			if opts, err := DecodeOptions(many); err != nil || len(opts) != OptionsPairsMax {
				t.Fatalf("1024 pairs: %d %v", len(opts), err)
			}
		}
	}
	if _, err := DecodeOptions(many); ErrorCodeOf(err) != ErrOptionsBlockTooLarge {
		t.Fatalf("1025 pairs: %v", err)
	}
	// Response form carries a u32 length prefix.
	prefixed := Options{OptionBool("k", true)}.AppendPrefixed(nil)
	if !bytes.Equal(prefixed, cat(le32(12), []byte{2}, le32(1), []byte("k"), []byte{3}, le32(1), []byte{1})) {
		t.Fatalf("prefixed %x", prefixed)
	}
}

func TestPermissionsGolden(t *testing.T) {
	p := &Permissions{
		Global: GlobalPermissions{ManageServers: true, SendMessages: true},
		Streams: []StreamPermissions{
			{StreamID: 3, ReadStream: true},
			{StreamID: 1, ManageStream: true, Topics: []TopicPermissions{{TopicID: 9, ReadTopic: true}, {TopicID: 2, SendMessages: true}}},
		},
	}
	want := cat(
		[]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 1},         // global
		[]byte{1},                                    // has_streams
		le32(1), []byte{1, 0, 0, 0, 0, 0}, []byte{1}, // stream 1, has_topics
		le32(2), []byte{0, 0, 0, 1}, []byte{1}, // topic 2, has_next_topic
		le32(9), []byte{0, 1, 0, 0}, []byte{0}, // topic 9, last
		[]byte{1},                                    // has_next_stream
		le32(3), []byte{0, 1, 0, 0, 0, 0}, []byte{0}, // stream 3, no topics
		[]byte{0}, // last stream
	)
	if got := p.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("bytes differ:\n got %x\nwant %x", got, want)
	}
	back, err := DecodePermissions(want)
	if err != nil {
		t.Fatal(err)
	}
	if back.Streams[0].StreamID != 1 || len(back.Streams[0].Topics) != 2 || !back.Streams[1].ReadStream || !back.Global.SendMessages {
		t.Fatalf("decoded %+v", back)
	}
	if _, err := DecodePermissions(want[:len(want)-1]); err == nil {
		t.Fatal("truncated permissions accepted")
	}
	bad := bytes.Clone(want)
	bad[0] = 2
	if _, err := DecodePermissions(bad); err == nil {
		t.Fatal("boolean 2 accepted")
	}
}

func TestUserDetailsAsymmetricPermissions(t *testing.T) {
	u := UserDetails{User: User{ID: 1, CreatedAt: 2, Status: UserActive, Username: "bob"}}
	user := cat(le32(1), le64(2), []byte{1, 3, 'b', 'o', 'b'}, le32(0))
	if got := u.Append(nil); !bytes.Equal(got, cat(user, le32(0))) {
		t.Fatalf("no permissions: %x", got)
	}
	u.Permissions = &Permissions{Global: GlobalPermissions{ReadUsers: true}}
	perm := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}
	want := cat(user, []byte{1}, le32(uint32(len(perm))), perm)
	if got := u.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("with permissions:\n got %x\nwant %x", got, want)
	}
	back, err := DecodeUserDetails(want)
	if err != nil || back.Permissions == nil || !back.Permissions.Global.ReadUsers {
		t.Fatalf("decoded %+v %v", back, err)
	}
	back, err = DecodeUserDetails(cat(user, le32(0)))
	if err != nil || back.Permissions != nil {
		t.Fatalf("no-permissions decode %+v %v", back, err)
	}
	if _, err := DecodeUserDetails(cat(user, []byte{0, 1, 0, 0})); err == nil {
		t.Fatal("non-zero padding accepted")
	}
}

func TestRegisterBodies(t *testing.T) {
	prefix := cat(le32(11264), []byte{6}, []byte("go-sdk"), []byte{3}, []byte("0.9"))
	pw := cat(prefix, []byte{4}, []byte("iggy"), []byte{4}, []byte("iggy"), le32(0))
	r, err := DecodeRegister(pw)
	if err != nil || r.Kind != RegisterWithPassword || r.Username != "iggy" || r.Password != "iggy" || r.Version.ProtocolVersion != 11264 || r.Version.SDKName != "go-sdk" {
		t.Fatalf("password shape: %+v %v", r, err)
	}
	enc, err := RegisterRequest{Kind: RegisterWithPassword, Version: r.Version, Username: "iggy", Password: "iggy"}.Encode()
	if err != nil || !bytes.Equal(enc, pw) {
		t.Fatalf("encode %x %v", enc, err)
	}
	pat := cat(prefix, []byte{5}, []byte("tok3n"), le32(0))
	r, err = DecodeRegister(pat)
	if err != nil || r.Kind != RegisterWithToken || r.Token != "tok3n" {
		t.Fatalf("token shape: %+v %v", r, err)
	}
	// Empty password is legal on the wire.
	r, err = DecodeRegister(cat(prefix, []byte{4}, []byte("iggy"), []byte{0}, le32(0)))
	if err != nil || r.Kind != RegisterWithPassword || r.Password != "" {
		t.Fatalf("empty password: %+v %v", r, err)
	}
	if _, _, err := DecodeClientVersionInfo(prefix[:7]); err == nil {
		t.Fatal("truncated prefix accepted")
	}
	if _, err := DecodeRegister(cat(prefix, []byte{9})); err == nil {
		t.Fatal("garbage tail accepted")
	}
	// Trailing bytes are ignored, as upstream's decode_after_prefix does; a token body followed by extra
	// bytes may also read as a password body: the server tries the password first, then the token.
	shapes, err := DecodeRegisterShapes(cat(pw, []byte{1, 2, 3, 4}))
	if err != nil || shapes.Password == nil || shapes.Password.Username != "iggy" || shapes.Password.Password != "iggy" {
		t.Fatalf("password shape + trailing bytes: %+v %v", shapes, err)
	}
	shapes, err = DecodeRegisterShapes(cat(pat, make([]byte, 64)))
	if err != nil || shapes.Token == nil || shapes.Token.Token != "tok3n" || shapes.Password == nil {
		t.Fatalf("token shape + trailing bytes: %+v %v", shapes, err)
	}
	reply := RegisterReply{UserID: 0, Session: 5, ProtocolVersion: 11264, ServerVersion: "0.1.0"}
	want := cat(le32(0), le64(5), le32(11264), []byte{5}, []byte("0.1.0"))
	if got := reply.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("reply %x", got)
	}
	if back, err := DecodeRegisterReply(want); err != nil || back != reply {
		t.Fatalf("reply decode %+v %v", back, err)
	}
	if _, err := DecodeRegisterReply(cat(le32(0), le64(0), le32(11264), []byte{1, 'x'})); err == nil {
		t.Fatal("session 0 accepted")
	}
}

func TestConsumerOffsetRequestGolden(t *testing.T) {
	req := ConsumerOffsetRequest{Command: CodeStoreConsumerOffset, Consumer: Consumer{Kind: ConsumerKindGroup, ID: NumericID(4)},
		Stream: NumericID(0), Topic: NamedID("t"), Partition: SomePartition(2), Offset: 99, Ack: AckQuorum}
	want := cat([]byte{2, 1, 4, 4, 0, 0, 0}, []byte{1, 4, 0, 0, 0, 0}, []byte{2, 1, 't'}, []byte{1, 2, 0, 0, 0}, le64(99), []byte{1})
	got, err := EncodeRequestBody(req)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %x (%v)\nwant %x", got, err, want)
	}
	absent := ConsumerOffsetRequest{Command: CodeGetConsumerOffset, Consumer: Consumer{Kind: ConsumerKindSingle, ID: NumericID(1)}, Stream: NumericID(0), Topic: NumericID(0)}
	got, _ = EncodeRequestBody(absent)
	if !bytes.Equal(got[len(got)-5:], []byte{0, 0, 0, 0, 0}) {
		t.Fatalf("absent partition %x", got)
	}
}

func TestStreamAndTopicGolden(t *testing.T) {
	s := StreamDetails{Stream: Stream{ID: 1, CreatedAt: 2, SizeBytes: 3, MessagesCount: 4, Name: "s"},
		Topics: []TopicHeader{{ID: 5, CreatedAt: 6, PartitionsCount: 1, MessageExpiry: Unlimited, Compression: CompressionNone,
			MaxTopicSize: Unlimited, SizeBytes: 7, MessagesCount: 8, Name: "t"}}}
	got := s.Append(nil)
	// Fixed stream part is 33 bytes including the name length byte at offset 32.
	if got[32] != 1 || got[33] != 's' || !bytes.Equal(got[12:16], le32(1)) {
		t.Fatalf("stream header %x", got[:40])
	}
	topic := got[33+1+4:]
	if !bytes.Equal(topic[0:4], le32(5)) || topic[24] != CompressionNone || !bytes.Equal(topic[25:33], le64(Unlimited)) ||
		!bytes.Equal(topic[41:49], le64(8)) || topic[49] != 1 || topic[50] != 't' || len(topic) != 51+8 {
		t.Fatalf("topic header %x", topic)
	}
	back, err := DecodeStreamDetails(got)
	if err != nil || back.Topics[0].Name != "t" || back.TopicsCount != 1 {
		t.Fatalf("decoded %+v %v", back, err)
	}
	td := TopicDetails{TopicHeader: s.Topics[0], Partitions: []Partition{{ID: 0, CurrentOffset: 9}}}
	tb := td.Append(nil)
	if len(tb) != 59+40 {
		t.Fatalf("topic details %d bytes", len(tb))
	}
	if _, err := DecodeTopicDetails(tb[:len(tb)-1]); err == nil {
		t.Fatal("truncated partition accepted")
	}
	tb[12] = 200 // partitions_count no longer matches the body
	if _, err := DecodeTopicDetails(tb); err == nil {
		t.Fatal("count mismatch accepted")
	}
}

func TestStatsLayout(t *testing.T) {
	s := Stats{ProcessID: 1, MessagesCount: 2, ConsumerGroupsCount: 3, Hostname: "h", ServerVersion: "v",
		CacheMetrics: []CacheMetric{{StreamID: 1, Hits: 5, HitRatio: 0.5}}, ThreadsCount: 4, TotalDiskSpace: 9}
	b := s.Append(nil)
	if !bytes.Equal(b[92:100], le64(2)) || !bytes.Equal(b[104:108], le32(3)) || !bytes.Equal(b[108:112], le32(1)) || b[112] != 'h' {
		t.Fatalf("fixed part misplaced: %x", b[:116])
	}
	wantLen := StatsFixedSize + 5*4 + 2 + 4 + 4 + 32 + 4 + 8 + 8
	if len(b) != wantLen {
		t.Fatalf("stats %d bytes, want %d", len(b), wantLen)
	}
	back, err := DecodeStats(b)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("decoded %+v %v", back, err)
	}
}

func TestClusterMetadataGolden(t *testing.T) {
	m := ClusterMetadata{Name: "single-node", Nodes: []ClusterNode{{Name: "iggy-node", IP: "127.0.0.1", TCP: 8090, QUIC: 8080, HTTP: 3000, WebSocket: 8092}}}
	want := cat(le32(11), []byte("single-node"), le32(1), le32(9), []byte("iggy-node"), le32(9), []byte("127.0.0.1"),
		[]byte{0x9a, 0x1f, 0x90, 0x1f, 0xb8, 0x0b, 0x9c, 0x1f, 0, 0})
	if got := m.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("got %x\nwant %x", got, want)
	}
	back, err := DecodeClusterMetadata(want)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("decoded %+v %v", back, err)
	}
	if l, ok := back.Leader(); !ok || l.TCP != 8090 {
		t.Fatal("leader")
	}
	bad := bytes.Clone(want)
	bad[len(bad)-1] = 5 // status Unknown breaks SDK decoding
	if _, err := DecodeClusterMetadata(bad); err == nil {
		t.Fatal("status 5 accepted")
	}
}

func TestClientAndSmallResponsesGolden(t *testing.T) {
	c := ClientDetails{Client: Client{ClientID: 1, UserID: NoUser, Transport: TransportTCP, Address: "1.2.3.4:5", ConsumerGroupsCount: 1},
		ConsumerGroups: []ClientGroup{{1, 2, 3}}}
	want := cat(le32(1), le32(0xffffffff), []byte{1}, le32(9), []byte("1.2.3.4:5"), le32(1), le32(1), le32(2), le32(3))
	if got := c.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("client %x", got)
	}
	if back, err := DecodeClientDetails(want); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("client decode %+v %v", back, err)
	}
	a := Assignment{Generation: 7, Partitions: []uint32{0, 2}}
	if got := a.Append(nil); !bytes.Equal(got, cat(le64(7), le32(2), le32(0), le32(2))) {
		t.Fatalf("assignment %x", got)
	}
	if _, err := DecodeAssignment(cat(le64(7), le32(3), le32(0))); err == nil {
		t.Fatal("short assignment accepted")
	}
	o := ConsumerOffset{PartitionID: 1, CurrentOffset: 2, StoredOffset: 3}
	if got := o.Append(nil); len(got) != 20 {
		t.Fatalf("offset %d bytes", len(got))
	}
	g := GroupDetails{ConsumerGroup: ConsumerGroup{ID: 1, PartitionsCount: 2, MembersCount: 1, Name: "g"}, Members: []GroupMember{{ID: 4, Partitions: []uint32{1}}}}
	gb := g.Append(nil)
	if !bytes.Equal(gb, cat(le32(1), le32(2), le32(1), []byte{1, 'g'}, le32(4), le32(1), le32(1))) {
		t.Fatalf("group %x", gb)
	}
	if back, err := DecodeGroupDetails(gb); err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("group decode %+v %v", back, err)
	}
	pats := cat([]byte{1, 'a'}, le64(0), []byte{1, 'b'}, le64(5))
	if list, err := DecodePersonalAccessTokens(pats); err != nil || len(list) != 2 || list[1].ExpiryAt != 5 {
		t.Fatalf("pats %+v %v", list, err)
	}
	specs := OptionSpecsForScope(ScopeTopic)
	sb := AppendOptionSpecs(nil, specs)
	if back, err := DecodeOptionSpecs(sb); err != nil || len(back) != 8 || back[3].Key != OptSegmentSize || !bytes.Equal(back[3].Default, le64(1<<30)) {
		t.Fatalf("option specs %+v %v", back, err)
	}
	if got := AppendOptionSpecs(nil, OptionSpecsForScope(ScopeStream)); !bytes.Equal(got, le32(0)) {
		t.Fatalf("stream scope %x", got)
	}
}

// Every request type survives EncodeRequestBody → DecodeRequestBody unchanged.
func TestRequestRoundTrips(t *testing.T) {
	name := "renamed"
	status := UserInactive
	perms := &Permissions{Global: GlobalPermissions{ReadStreams: true}, Streams: []StreamPermissions{{StreamID: 1, PollMessages: true}}}
	reqs := []Request{
		EmptyRequest{Command: CodePing}, EmptyRequest{Command: CodeGetStats}, EmptyRequest{Command: CodeLogoutUser},
		IdentRequest{Command: CodeGetStream, ID: NamedID("s")}, IdentRequest{Command: CodeDeleteUser, ID: NumericID(3)},
		TopicRequest{Command: CodeGetTopic, Stream: NumericID(1), Topic: NamedID("t")},
		GroupRequest{Command: CodeJoinConsumerGroup, Stream: NumericID(1), Topic: NumericID(2), Group: NamedID("g")},
		CreateStreamRequest{Name: "s"}, UpdateStreamRequest{Stream: NumericID(1), Name: "s2"},
		CreateTopicRequest{Stream: NumericID(1), PartitionsCount: 3, Name: "t", Options: Options{OptionBool(OptEnforceFsync, true)}},
		UpdateTopicRequest{Stream: NumericID(1), Topic: NumericID(1), Name: "t"},
		PartitionsRequest{Command: CodeCreatePartitions, Stream: NumericID(1), Topic: NumericID(1), Count: 5},
		DeleteSegmentsRequest{Stream: NumericID(1), Topic: NumericID(1), PartitionID: 2, SegmentsCount: 1},
		CreateConsumerGroupRequest{Stream: NumericID(1), Topic: NumericID(1), Name: "g"},
		FlushUnsavedBufferRequest{Stream: NumericID(1), Topic: NumericID(1), PartitionID: 1, Fsync: true},
		CreateUserRequest{Username: "u", Password: "p", Status: UserActive, Permissions: perms},
		CreateUserRequest{Username: "u", Password: "", Status: UserInactive},
		UpdateUserRequest{User: NumericID(1), Username: &name, Status: &status}, UpdateUserRequest{User: NumericID(1)},
		UpdatePermissionsRequest{User: NamedID("u"), Permissions: perms}, UpdatePermissionsRequest{User: NamedID("u")},
		ChangePasswordRequest{User: NumericID(1), CurrentPassword: "a", NewPassword: "b"},
		CreatePersonalAccessTokenRequest{Name: "pat", ExpiryMicros: PATExpiryNever},
		DeletePersonalAccessTokenRequest{Name: "pat"},
		ConsumerOffsetRequest{Command: CodeDeleteConsumerOffset, Consumer: Consumer{Kind: ConsumerKindSingle, ID: NamedID("c")}, Stream: NumericID(1), Topic: NumericID(1), Ack: AckQuorum},
		GetClientRequest{ClientID: 9}, DescribeOptionsRequest{Scope: ScopeUser},
		GetSnapshotFileRequest{Compression: 1, Types: []uint8{1, 2}},
	}
	for _, r := range reqs {
		body, err := EncodeRequestBody(r)
		if err != nil {
			t.Errorf("%s: %v", r.Code(), err)
			continue
		}
		back, err := DecodeRequestBody(r.Code(), body)
		if err != nil || !reflect.DeepEqual(normalize(back), normalize(r)) {
			t.Errorf("%s: round trip %+v → %+v (%v)", r.Code(), r, back, err)
		}
	}
	for _, r := range []Request{CreateStreamRequest{Name: ""}, CreateStreamRequest{Name: strings.Repeat("x", 256)},
		IdentRequest{Command: CodeGetStream, ID: Identifier{Kind: 9}}, DescribeOptionsRequest{Scope: 4}} {
		if _, err := EncodeRequestBody(r); err == nil {
			t.Errorf("%T %+v encoded", r, r)
		}
	}
	if _, err := DecodeRequestBody(CodeSendMessages, nil); err == nil {
		t.Error("SendMessages decoded here")
	}
}

// normalize maps nil and empty slices to the same value for comparison.
func normalize(r Request) Request {
	switch v := r.(type) {
	case GetSnapshotFileRequest:
		if len(v.Types) == 0 {
			v.Types = nil
		}
		return v
	}
	return r
}

func TestPermissionsEntryBound(t *testing.T) {
	build := func(n int) []byte {
		b := append(make([]byte, 10), 1)
		for i := 0; i < n; i++ {
			b = appendU32(b, uint32(i))
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 1)
		}
		b[len(b)-1] = 0
		return b
	}
	if p, err := DecodePermissions(build(PermissionEntriesMax)); err != nil || len(p.Streams) != PermissionEntriesMax {
		t.Fatalf("at the bound: %v", err)
	}
	_, err := DecodePermissions(build(PermissionEntriesMax + 1))
	var be *BodyError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "more than") {
		t.Fatalf("over the bound: %v", err)
	}
	dup := cat(make([]byte, 10), []byte{1}, le32(1), make([]byte, 6), []byte{0, 1}, le32(1), make([]byte, 6), []byte{0, 0})
	if _, err := DecodePermissions(dup); !errors.As(err, &be) || !strings.Contains(be.Reason, "duplicate stream id 1") || be.Field != "permissions.stream.stream_id[1]" {
		t.Fatalf("duplicate stream: %v", err)
	}
}
