package integration

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// httpServer starts a single node with the HTTP API on an ephemeral port and returns it with the
// API's base URL.
func httpServer(t *testing.T, env ...string) (*server, string) {
	t.Helper()
	s := startServer(t, "", append([]string{"IGGY_HTTP_ENABLED=true", "IGGY_HTTP_ADDRESS=127.0.0.1:0"}, env...)...)
	c := rootClient(t, s.addr)
	md, err := c.GetClusterMetadata(testCtx(t))
	must(t, err)
	if len(md.Nodes) != 1 || md.Nodes[0].HTTP == 0 {
		t.Fatalf("cluster metadata: %+v", md)
	}
	return s, fmt.Sprintf("http://127.0.0.1:%d", md.Nodes[0].HTTP)
}

func httpClient(t *testing.T, url, username, password string) *client.Client {
	t.Helper()
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, client.WithTransport(client.TransportHTTP))
	if err != nil {
		t.Fatalf("dial %s over http: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	if username != "" {
		if _, err := c.LoginUser(ctx, username, password); err != nil {
			t.Fatalf("login %s over http: %v", username, err)
		}
	}
	return c
}

// sameErr: both transports fail with the same code (or both succeed).
func sameErr(t *testing.T, what string, viaTCP, viaHTTP error) {
	t.Helper()
	if client.CodeOf(viaTCP) != client.CodeOf(viaHTTP) {
		t.Errorf("%s: tcp %v, http %v", what, viaTCP, viaHTTP)
	}
}

func sameValue(t *testing.T, what string, viaTCP, viaHTTP any) {
	t.Helper()
	if !reflect.DeepEqual(viaTCP, viaHTTP) {
		t.Errorf("%s differs:\n tcp  %+v\n http %+v", what, viaTCP, viaHTTP)
	}
}

// TestClientOverHTTP runs every command family of the Go client over the HTTP transport against a
// real server and checks each answer against the same command over TCP: values equal, errors with
// the same codes.
func TestClientOverHTTP(t *testing.T) {
	s, url := httpServer(t)
	ctx := testCtx(t)
	tc := rootClient(t, s.addr)
	hc := httpClient(t, url, "iggy", "iggy")
	if hc.Session() == 0 || hc.UserID() != 0 {
		t.Fatalf("after login over http: session %d, user %d", hc.Session(), hc.UserID())
	}

	// System.
	must(t, hc.Ping(ctx))
	mdT, err := tc.GetClusterMetadata(ctx)
	must(t, err)
	mdH, err := hc.GetClusterMetadata(ctx)
	must(t, err)
	sameValue(t, "cluster metadata", mdT, mdH)
	for _, scope := range []wire.DescribeScope{wire.ScopeTopic, wire.ScopeStream, wire.ScopeUser} {
		oT, errT := tc.DescribeOptions(ctx, scope)
		oH, errH := hc.DescribeOptions(ctx, scope)
		sameErr(t, "describe options", errT, errH)
		sameValue(t, fmt.Sprintf("options of scope %d", scope), oT, oH)
	}
	clientsT, err := tc.GetClients(ctx)
	must(t, err)
	clientsH, err := hc.GetClients(ctx)
	must(t, err)
	sameValue(t, "clients", clientsT, clientsH)
	me := clientsT[0].ClientID
	cT, errT := tc.GetClient(ctx, me)
	cH, errH := hc.GetClient(ctx, me)
	sameErr(t, "get client", errT, errH)
	sameValue(t, "client", cT, cH)
	_, errT = tc.GetClient(ctx, 999999)
	_, errH = hc.GetClient(ctx, 999999)
	expectCode(t, errH, wire.ErrClientNotFound)
	sameErr(t, "missing client", errT, errH)
	zip, err := hc.GetSnapshot(ctx, 2, []uint8{6})
	must(t, err)
	if !bytes.HasPrefix(zip, []byte("PK")) {
		t.Errorf("snapshot over http is not a zip: % x", zip[:min(8, len(zip))])
	}
	_, err = hc.GetMe(ctx)
	expectCode(t, err, wire.ErrFeatureUnavailable)

	// Streams.
	sd, err := hc.CreateStream(ctx, "http-stream")
	must(t, err)
	_, errT = tc.CreateStream(ctx, "http-stream")
	_, errH = hc.CreateStream(ctx, "http-stream")
	expectCode(t, errH, wire.ErrStreamNameAlreadyExists)
	sameErr(t, "duplicate stream", errT, errH)
	gT, errT := tc.GetStream(ctx, id(sd.ID))
	gH, errH := hc.GetStream(ctx, named("http-stream"))
	sameErr(t, "get stream", errT, errH)
	sameValue(t, "stream", gT, gH)
	_, errT = tc.GetStream(ctx, id(4242))
	_, errH = hc.GetStream(ctx, id(4242))
	expectCode(t, errH, wire.ErrStreamIDNotFound)
	sameErr(t, "missing stream", errT, errH)
	must(t, hc.UpdateStream(ctx, id(sd.ID), "http-stream-2"))
	lT, err := tc.GetStreams(ctx)
	must(t, err)
	lH, err := hc.GetStreams(ctx)
	must(t, err)
	sameValue(t, "streams", lT, lH)
	if len(lH) != 1 || lH[0].Name != "http-stream-2" {
		t.Errorf("streams after update over http: %+v", lH)
	}

	// Topics, partitions, segments.
	sid := id(sd.ID)
	td, err := hc.CreateTopic(ctx, sid, "t", 2, wire.OptionString(wire.OptCompressionAlgorithm, "gzip"),
		wire.OptionUint64(wire.OptMessageExpiry, 3_600_000_000), wire.OptionString(wire.OptSegmentSize, "2 MiB"))
	must(t, err)
	tT, errT := tc.GetTopic(ctx, sid, id(td.ID))
	tH, errH := hc.GetTopic(ctx, sid, named("t"))
	sameErr(t, "get topic", errT, errH)
	if tT == nil || tH == nil || tT.Compression != wire.CompressionGzip || tH.MessageExpiry != 3_600_000_000 ||
		tH.PartitionsCount != 2 || len(tH.Partitions) != 2 || tT.SizeBytes != tH.SizeBytes || tT.CreatedAt != tH.CreatedAt {
		t.Errorf("topic: tcp %+v, http %+v", tT, tH)
	}
	_, errT = tc.GetTopic(ctx, sid, id(77))
	_, errH = hc.GetTopic(ctx, sid, id(77))
	sameErr(t, "missing topic", errT, errH)
	topicsT, err := tc.GetTopics(ctx, sid)
	must(t, err)
	topicsH, err := hc.GetTopics(ctx, sid)
	must(t, err)
	if len(topicsT) != len(topicsH) || len(topicsH) != 1 || topicsH[0].Name != "t" {
		t.Errorf("topics: tcp %+v, http %+v", topicsT, topicsH)
	}
	must(t, hc.UpdateTopic(ctx, sid, id(td.ID), "t2", wire.OptionUint64(wire.OptMaxTopicSize, 1<<30)))
	must(t, hc.CreatePartitions(ctx, sid, named("t2"), 2))
	must(t, hc.DeletePartitions(ctx, sid, named("t2"), 1))
	tH, err = hc.GetTopic(ctx, sid, named("t2"))
	must(t, err)
	if tH.PartitionsCount != 3 || tH.MaxTopicSize != 1<<30 {
		t.Errorf("topic after update and partitions over http: %+v", tH)
	}
	must(t, hc.DeleteSegments(ctx, sid, named("t2"), 0, 1))
	errT = tc.DeleteSegments(ctx, sid, named("t2"), 99, 1)
	errH = hc.DeleteSegments(ctx, sid, named("t2"), 99, 1)
	sameErr(t, "segments of a missing partition", errT, errH)

	// Messages: ids, user headers, each partitioning.
	tid := named("t2")
	headers := wire.TLVPair{KeyKind: wire.KindString, Key: []byte("k"), ValueKind: wire.KindUint32, Value: []byte{42, 0, 0, 0}}.Append(nil)
	msgs := []wire.BatchMessageInput{
		{ID: [16]byte{1, 2, 3}, Payload: []byte("alpha"), UserHeaders: headers, OriginTimestamp: uint64(time.Now().UnixMicro())},
		{ID: [16]byte{0xff, 15: 0xee}, Payload: []byte("beta"), OriginTimestamp: uint64(time.Now().UnixMicro())},
	}
	confs, err := hc.SendMessages(ctx, sid, tid, wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 1}, msgs)
	must(t, err)
	if len(confs) != 1 || confs[0].PartitionID != 1 || confs[0].BaseOffset != 0 {
		t.Errorf("send confirmations over http: %+v", confs)
	}
	_, err = hc.SendMessages(ctx, sid, tid, wire.Partitioning{Kind: wire.PartitioningMessagesKey, Key: []byte("user-1")},
		[]wire.BatchMessageInput{{Payload: []byte("keyed"), OriginTimestamp: uint64(time.Now().UnixMicro())}})
	must(t, err)
	_, err = hc.SendMessages(ctx, sid, tid, wire.Partitioning{Kind: wire.PartitioningBalanced},
		[]wire.BatchMessageInput{{Payload: []byte("balanced"), OriginTimestamp: uint64(time.Now().UnixMicro())}})
	must(t, err)
	_, errT = tc.SendMessages(ctx, sid, tid, wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 9}, msgs)
	_, errH = hc.SendMessages(ctx, sid, tid, wire.Partitioning{Kind: wire.PartitioningPartitionID, PartitionID: 9}, msgs)
	if errT == nil || errH == nil {
		t.Errorf("send to a missing partition: tcp %v, http %v", errT, errH)
	}
	poll := wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)}, Stream: sid, Topic: tid,
		Partition: wire.OptPartition{Present: true, ID: 1}, Strategy: wire.PollingStrategy{Kind: wire.PollOffset}, Count: 10}
	pT, err := tc.PollMessages(ctx, poll)
	must(t, err)
	pH, err := hc.PollMessages(ctx, poll)
	must(t, err)
	sameValue(t, "polled messages", pT, pH)
	if len(pH.Messages) != 2 || pH.Messages[0].ID != msgs[0].ID || !bytes.Equal(pH.Messages[0].UserHeaders, headers) ||
		string(pH.Messages[1].Payload) != "beta" {
		t.Errorf("polled over http: %+v", pH)
	}
	poll.Strategy = wire.PollingStrategy{Kind: wire.PollLast}
	poll.Count = 1
	pT, err = tc.PollMessages(ctx, poll)
	must(t, err)
	pH, err = hc.PollMessages(ctx, poll)
	must(t, err)
	sameValue(t, "polled last", pT, pH)
	poll.Consumer.Kind = wire.ConsumerKindGroup
	_, err = hc.PollMessages(ctx, poll)
	expectCode(t, err, wire.ErrFeatureUnavailable)

	// Consumer offsets.
	consumer := wire.Consumer{Kind: wire.ConsumerKindSingle, ID: named("reader")}
	p1 := wire.OptPartition{Present: true, ID: 1}
	oT, errT := tc.GetConsumerOffset(ctx, consumer, sid, tid, p1)
	oH, errH := hc.GetConsumerOffset(ctx, consumer, sid, tid, p1)
	sameErr(t, "offset never stored", errT, errH)
	sameValue(t, "offset never stored", oT, oH)
	must(t, hc.StoreConsumerOffset(ctx, consumer, sid, tid, p1, 1))
	oT, errT = tc.GetConsumerOffset(ctx, consumer, sid, tid, p1)
	oH, errH = hc.GetConsumerOffset(ctx, consumer, sid, tid, p1)
	sameErr(t, "stored offset", errT, errH)
	sameValue(t, "stored offset", oT, oH)
	if oH == nil || oH.StoredOffset != 1 {
		t.Errorf("stored offset over http: %+v", oH)
	}
	must(t, hc.DeleteConsumerOffset(ctx, consumer, sid, tid, p1))
	errT = tc.DeleteConsumerOffset(ctx, consumer, sid, tid, p1)
	errH = hc.DeleteConsumerOffset(ctx, consumer, sid, tid, p1)
	sameErr(t, "delete a deleted offset", errT, errH)

	// Consumer groups.
	gd, err := hc.CreateConsumerGroup(ctx, sid, tid, "g")
	must(t, err)
	grT, errT2 := tc.GetConsumerGroup(ctx, sid, tid, id(gd.ID))
	gHd, errH2 := hc.GetConsumerGroup(ctx, sid, tid, named("g"))
	sameErr(t, "get group", errT2, errH2)
	sameValue(t, "group", grT, gHd)
	gsT, err := tc.GetConsumerGroups(ctx, sid, tid)
	must(t, err)
	gsH, err := hc.GetConsumerGroups(ctx, sid, tid)
	must(t, err)
	sameValue(t, "groups", gsT, gsH)
	expectCode(t, hc.JoinConsumerGroup(ctx, sid, tid, named("g")), wire.ErrFeatureUnavailable)
	must(t, hc.DeleteConsumerGroup(ctx, sid, tid, named("g")))
	_, errT = tc.GetConsumerGroup(ctx, sid, tid, named("g"))
	_, errH = hc.GetConsumerGroup(ctx, sid, tid, named("g"))
	sameErr(t, "missing group", errT, errH)

	// Users and permissions.
	perms := &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true, ReadTopics: true},
		Streams: []wire.StreamPermissions{{StreamID: sd.ID, ReadStream: true, PollMessages: true,
			Topics: []wire.TopicPermissions{{TopicID: td.ID, SendMessages: true}}}}}
	ud, err := hc.CreateUser(ctx, "reader", "secret1", wire.UserActive, perms)
	must(t, err)
	uT, errT := tc.GetUser(ctx, id(ud.ID))
	uH, errH := hc.GetUser(ctx, named("reader"))
	sameErr(t, "get user", errT, errH)
	sameValue(t, "user", uT, uH)
	_, errT = tc.CreateUser(ctx, "reader", "secret1", wire.UserActive, nil)
	_, errH = hc.CreateUser(ctx, "reader", "secret1", wire.UserActive, nil)
	sameErr(t, "duplicate user", errT, errH)
	usT, err := tc.GetUsers(ctx)
	must(t, err)
	usH, err := hc.GetUsers(ctx)
	must(t, err)
	sameValue(t, "users", usT, usH)
	must(t, hc.UpdateUser(ctx, named("reader"), ptr("reader2"), ptr(wire.UserActive)))
	must(t, hc.UpdatePermissions(ctx, named("reader2"), &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}}))
	must(t, hc.ChangePassword(ctx, named("reader2"), "secret1", "secret2"))
	rc := httpClient(t, url, "reader2", "secret2")
	if _, err := rc.GetStreams(ctx); err != nil {
		t.Errorf("reader over http: %v", err)
	}
	_, errH = rc.CreateStream(ctx, "denied")
	loginT := loginAs(t, s.addr, "reader2", "secret2")
	_, errT = loginT.CreateStream(ctx, "denied")
	expectCode(t, errH, wire.ErrUnauthorized)
	sameErr(t, "denied create", errT, errH)
	_, err = httpClient(t, url, "", "").LoginUser(ctx, "reader2", "wrong-one")
	expectCode(t, err, wire.ErrInvalidCredentials)

	// Personal access tokens: create, list, sign in with one, delete.
	raw, err := hc.CreatePersonalAccessToken(ctx, "ci-token", 0)
	must(t, err)
	patsT, err := tc.GetPersonalAccessTokens(ctx)
	must(t, err)
	patsH, err := hc.GetPersonalAccessTokens(ctx)
	must(t, err)
	sameValue(t, "personal access tokens", patsT, patsH)
	pc := httpClient(t, url, "", "")
	if _, err := pc.LoginWithPersonalAccessToken(ctx, raw); err != nil {
		t.Fatalf("PAT login over http: %v", err)
	}
	if _, err := pc.GetStreams(ctx); err != nil {
		t.Errorf("streams with a PAT session over http: %v", err)
	}
	must(t, hc.DeletePersonalAccessToken(ctx, "ci-token"))
	errT = tc.DeletePersonalAccessToken(ctx, "ci-token")
	errH = hc.DeletePersonalAccessToken(ctx, "ci-token")
	sameErr(t, "delete a deleted token", errT, errH)
	must(t, hc.DeleteUser(ctx, named("reader2")))

	// Purges and deletes.
	must(t, hc.PurgeTopic(ctx, sid, tid))
	must(t, hc.PurgeStream(ctx, sid))
	must(t, hc.DeleteTopic(ctx, sid, tid))
	must(t, hc.DeleteStream(ctx, sid))
	_, errH = hc.GetStream(ctx, sid)
	expectCode(t, errH, wire.ErrStreamIDNotFound)

	// Logout: the session ends; a call then is Unauthenticated, as over TCP.
	must(t, hc.Logout(ctx))
	_, err = hc.GetStreams(ctx)
	expectCode(t, err, wire.ErrUnauthenticated)
}

// TestClientOverHTTPSignsInAgain: with 2 s access tokens, a client whose token expired keeps
// working: the transport signs in again with the remembered credentials.
func TestClientOverHTTPSignsInAgain(t *testing.T) {
	_, url := httpServer(t, "IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY=2 s", "IGGY_HTTP_JWT_CLOCK_SKEW=0 s")
	ctx := testCtx(t)
	hc := httpClient(t, url, "iggy", "iggy")
	_, err := hc.CreateStream(ctx, "before-expiry")
	must(t, err)
	time.Sleep(3 * time.Second) // the token's exp passes
	if _, err := hc.CreateStream(ctx, "after-expiry"); err != nil {
		t.Fatalf("after the token expired: %v", err)
	}
	// A client that never signed in is refused locally, as over TCP.
	_, err = httpClient(t, url, "", "").GetStreams(ctx)
	expectCode(t, err, wire.ErrUnauthenticated)
}

// TestCLIOverHTTP runs the iggy CLI with --transport http --http-api-url against a server.
func TestCLIOverHTTP(t *testing.T) {
	_, url := httpServer(t)
	run := func(args ...string) cliResult {
		t.Helper()
		return iggyCLIRaw(t, "", append([]string{"--transport", "http", "--http-api-url", url, "-u", "iggy", "-p", "iggy"}, args...)...)
	}
	run("ping").ok(t)
	run("stream", "create", "cli-http").ok(t)
	if out := run("stream", "list").ok(t); !strings.Contains(out, "cli-http") {
		t.Errorf("stream list over http:\n%s", out)
	}
	run("topic", "create", "cli-http", "t", "2", "none").ok(t)
	if out := run("topic", "get", "cli-http", "t").ok(t); !strings.Contains(out, "t") {
		t.Errorf("topic get over http:\n%s", out)
	}
	run("message", "send", "-p", "1", "cli-http", "t", "hello over http").ok(t)
	if out := run("message", "poll", "--first", "-m", "10", "cli-http", "t", "1").ok(t); !strings.Contains(out, "hello over http") {
		t.Errorf("message poll over http:\n%s", out)
	}
	run("consumer-group", "create", "cli-http", "t", "g").ok(t)
	if out := run("consumer-group", "list", "cli-http", "t").ok(t); !strings.Contains(out, "g") {
		t.Errorf("consumer-group list over http:\n%s", out)
	}
	run("user", "create", "cli-user", "secret1").ok(t)
	if out := run("user", "list").ok(t); !strings.Contains(out, "cli-user") {
		t.Errorf("user list over http:\n%s", out)
	}
	run("pat", "create", "cli-token").ok(t)
	if out := run("pat", "list").ok(t); !strings.Contains(out, "cli-token") {
		t.Errorf("pat list over http:\n%s", out)
	}
	run("pat", "delete", "cli-token").ok(t)
	if out := run("stats").ok(t); !strings.Contains(out, "1") {
		t.Errorf("stats over http:\n%s", out)
	}
	if out := run("cluster", "metadata").ok(t); !strings.Contains(out, "leader") {
		t.Errorf("cluster metadata over http:\n%s", out)
	}
	run("stream", "get", "nope").fails(t, 1, "")
	iggyCLIRaw(t, "", "--transport", "http", "--http-api-url", url, "-u", "iggy", "-p", "wrong", "stream", "list").
		fails(t, 1, "InvalidCredentials (error 42)")
	// A context carrying the http transport and its URL.
	home := t.TempDir()
	env := []string{"IGGY_HOME=" + home}
	iggyCLIEnv(t, env, "", "context", "create", "viahttp", "--transport", "http", "--http-api-url", url, "-u", "iggy", "-p", "iggy").ok(t)
	iggyCLIEnv(t, env, "", "context", "use", "viahttp").ok(t)
	if out := iggyCLIEnv(t, env, "", "stream", "list").ok(t); !strings.Contains(out, "cli-http") {
		t.Errorf("stream list through an http context:\n%s", out)
	}
	run("stream", "delete", "cli-http").ok(t)
}
