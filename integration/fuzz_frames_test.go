package integration

import (
	"math/rand"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// TestRandomFramesAlwaysAnswered sends a seeded stream of well-sized frames
// with random operations, command codes, sessions, request ids and bodies
// (after a login): every frame is answered by a reply or an eviction, never
// silence, and the server stays healthy for a bystander connection.
func TestRandomFramesAlwaysAnswered(t *testing.T) {
	srv := startServer(t, "")
	bystander := dialRaw(t, srv.addr)
	bystander.login()
	rng := rand.New(rand.NewSource(20261130))
	ops := []wire.Operation{wire.OpRegister, wire.OpNonReplicated, wire.OpLogout, wire.OpCreateStream, wire.OpUpdateStream,
		wire.OpDeleteStream, wire.OpCreateTopic, wire.OpCreatePartitions, wire.OpDeleteSegments, wire.OpCreateUser,
		wire.OpChangePassword, wire.OpUpdatePermissions, wire.OpCreatePersonalAccessToken, wire.OpJoinConsumerGroup,
		wire.OpSendMessages, wire.OpStoreConsumerOffset, wire.OpDeleteConsumerOffset, wire.Operation(250)}
	codes := []wire.CommandCode{wire.CodePing, wire.CodeGetStats, wire.CodeGetSnapshotFile, wire.CodeGetClusterMetadata,
		wire.CodeDescribeOptions, wire.CodeGetMe, wire.CodeGetClient, wire.CodeGetClients, wire.CodeGetUser,
		wire.CodeGetUsers, wire.CodeGetPersonalAccessTokens, wire.CodePollMessages, wire.CodeFlushUnsavedBuffer,
		wire.CodeGetConsumerOffset, wire.CodeGetStream, wire.CodeGetStreams, wire.CodeGetTopic, wire.CodeGetTopics,
		wire.CodeGetConsumerGroup, wire.CodeGetConsumerGroups, wire.CodeSyncConsumerGroup, wire.CodeLoginUser, 7777}

	var r *rawConn
	var session uint64
	connect := func() {
		r = dialRaw(t, srv.addr)
		session = r.login()
	}
	connect()
	const frames = 1000
	evictions := 0
	for i := 0; i < frames; i++ {
		h := wire.RequestHeader{Operation: ops[rng.Intn(len(ops))], Session: session, Request: uint64(rng.Intn(4))}
		if rng.Intn(4) == 0 {
			h.Session = uint64(rng.Intn(3))
		}
		if h.Operation == wire.OpNonReplicated {
			h.Code = codes[rng.Intn(len(codes))]
		}
		if h.Operation == wire.OpRegister && rng.Intn(2) == 0 {
			h.Session, h.Request = 0, 0
		}
		body := make([]byte, rng.Intn(48))
		rng.Read(body)
		frame := r.request(h, body)
		if rng.Intn(3) == 0 {
			frame[60] = byte(rng.Intn(16)) // sometimes not a Request at all
		}
		r.write(frame)
		reply, err := r.tryRead(10 * time.Second)
		if err != nil {
			t.Fatalf("frame %d (op %s code %d session %d request %d, %d body bytes) got no answer: %v",
				i, h.Operation, h.Code, h.Session, h.Request, len(body), err)
		}
		if wire.FrameCommand(reply) == wire.CommandEviction {
			evictions++
			r.expectClosed()
			connect()
		}
	}
	bystander.ping()
	t.Logf("%d random frames answered, %d evictions", frames, evictions)
}
