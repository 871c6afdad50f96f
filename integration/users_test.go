package integration

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

func TestUsersCRUDAndPermissions(t *testing.T) {
	srv := startServer(t, "")
	root := rootClient(t, srv.addr)
	ctx := testCtx(t)

	u, err := root.CreateUser(ctx, "alice", "secret1", wire.UserActive, nil)
	must(t, err)
	if u.ID != 1 || u.Username != "alice" || u.Status != wire.UserActive || u.Permissions != nil {
		t.Fatalf("created user %+v", u)
	}
	_, err = root.CreateUser(ctx, "alice", "secret1", wire.UserActive, nil)
	expectCode(t, err, wire.ErrUserAlreadyExists)
	_, err = root.CreateUser(ctx, "al", "secret1", wire.UserActive, nil)
	expectCode(t, err, wire.ErrInvalidUsername)
	_, err = root.CreateUser(ctx, strings.Repeat("u", 51), "secret1", wire.UserActive, nil) // name too long
	expectCode(t, err, wire.ErrInvalidUsername)
	_, err = root.CreateUser(ctx, "carol", strings.Repeat("p", 101), wire.UserActive, nil)
	expectCode(t, err, wire.ErrInvalidPassword)
	_, err = root.GetUser(ctx, named("nobody"))
	expectCode(t, err, wire.ErrResourceNotFound)
	users, err := root.GetUsers(ctx)
	must(t, err)
	if len(users) != 2 || users[0].Username != "iggy" || users[0].ID != 0 {
		t.Fatalf("users %+v", users)
	}

	// A user without permissions is authenticated but denied.
	alice := loginAs(t, srv.addr, "alice", "secret1")
	_, err = alice.CreateStream(ctx, "denied")
	expectCode(t, err, wire.ErrUnauthorized)
	_, err = alice.GetStreams(ctx)
	expectCode(t, err, wire.ErrUnauthorized)
	_, err = alice.GetStats(ctx)
	expectCode(t, err, wire.ErrUnauthorized)
	_, err = alice.CreateUser(ctx, "mallory", "secret1", wire.UserActive, nil)
	expectCode(t, err, wire.ErrUnauthorized)
	self, err := alice.GetUser(ctx, named("alice"))
	must(t, err)
	if self.ID != 1 {
		t.Fatalf("self lookup %+v", self)
	}

	perms := &wire.Permissions{Global: wire.GlobalPermissions{ManageStreams: true, ReadStreams: true}}
	must(t, root.UpdatePermissions(ctx, named("alice"), perms))
	got, err := root.GetUser(ctx, id(1))
	must(t, err)
	if got.Permissions == nil || !got.Permissions.Global.ManageStreams || got.Permissions.Global.ManageUsers {
		t.Fatalf("permissions after update %+v", got.Permissions)
	}
	_, err = alice.CreateStream(ctx, "allowed")
	must(t, err)
	expectCode(t, root.UpdatePermissions(ctx, id(0), perms), wire.ErrCannotChangePermissions)
	expectCode(t, root.UpdatePermissions(ctx, id(9), perms), wire.ErrResourceNotFound)

	expectCode(t, root.ChangePassword(ctx, named("alice"), "wrong-pass", "secret2"), wire.ErrInvalidCredentials)
	must(t, alice.ChangePassword(ctx, named("alice"), "secret1", "secret2"))
	loginAs(t, srv.addr, "alice", "secret2")
	stale := dialClient(t, srv.addr)
	_, err = stale.LoginUser(ctx, "alice", "secret1")
	expectCode(t, err, wire.ErrInvalidCredentials)

	must(t, root.UpdateUser(ctx, id(1), ptr("alice2"), ptr(wire.UserInactive)))
	got, err = root.GetUser(ctx, id(1))
	must(t, err)
	if got.Username != "alice2" || got.Status != wire.UserInactive {
		t.Fatalf("updated user %+v", got.User)
	}
	// An inactive user answers exactly like a wrong password.
	inactive := dialClient(t, srv.addr)
	_, err = inactive.LoginUser(ctx, "alice2", "secret2")
	expectCode(t, err, wire.ErrInvalidCredentials)
	expectCode(t, root.UpdateUser(ctx, id(1), ptr("iggy"), nil), wire.ErrUserAlreadyExists)

	expectCode(t, root.DeleteUser(ctx, id(0)), wire.ErrCannotDeleteUser)
	must(t, root.DeleteUser(ctx, named("alice2")))
	expectCode(t, root.DeleteUser(ctx, id(1)), wire.ErrResourceNotFound)
}

func TestPersonalAccessTokens(t *testing.T) {
	srv := startServer(t, "")
	root := rootClient(t, srv.addr)
	ctx := testCtx(t)

	token, err := root.CreatePersonalAccessToken(ctx, "ci-token", 0)
	must(t, err)
	if len(token) < 32 {
		t.Fatalf("token %q too short", token)
	}
	_, err = root.CreatePersonalAccessToken(ctx, "ci-token", 0)
	expectCode(t, err, wire.ErrPersonalAccessTokenAlreadyExists)
	_, err = root.CreatePersonalAccessToken(ctx, strings.Repeat("t", 31), 0) // name too long
	expectCode(t, err, wire.ErrInvalidPersonalAccessTokenName)
	tokens, err := root.GetPersonalAccessTokens(ctx)
	must(t, err)
	if len(tokens) != 1 || tokens[0].Name != "ci-token" || tokens[0].ExpiryAt != 0 {
		t.Fatalf("tokens %+v", tokens)
	}

	pat := dialClient(t, srv.addr)
	reply, err := pat.LoginWithPersonalAccessToken(ctx, token)
	must(t, err)
	if reply.UserID != 0 {
		t.Fatalf("PAT login user %d", reply.UserID)
	}
	_, err = pat.CreateStream(ctx, "via-pat")
	must(t, err)

	bad := dialClient(t, srv.addr)
	_, err = bad.LoginWithPersonalAccessToken(ctx, "not-a-token")
	expectCode(t, err, wire.ErrInvalidPersonalAccessToken)
	if ev, ok := client.EvictionOf(err); !ok || ev.Reason != wire.EvictInvalidToken {
		t.Fatalf("bad token: %v", err)
	}

	must(t, root.DeletePersonalAccessToken(ctx, "ci-token"))
	expectCode(t, root.DeletePersonalAccessToken(ctx, "ci-token"), wire.ErrResourceNotFound)
	revoked := dialClient(t, srv.addr)
	_, err = revoked.LoginWithPersonalAccessToken(ctx, token)
	expectCode(t, err, wire.ErrInvalidPersonalAccessToken)
}

func TestSystemCommands(t *testing.T) {
	srv := startServer(t, "")
	anon := dialClient(t, srv.addr)
	ctx := testCtx(t)
	must(t, anon.Ping(ctx))
	_, err := anon.GetStats(ctx)
	expectCode(t, err, wire.ErrUnauthenticated)
	_, err = anon.GetClusterMetadata(ctx)
	expectCode(t, err, wire.ErrUnauthenticated)

	c := rootClient(t, srv.addr)
	_, err = c.CreateStream(ctx, "s")
	must(t, err)
	_, err = c.CreateTopic(ctx, id(0), "t", 2)
	must(t, err)

	st, err := c.GetStats(ctx)
	must(t, err)
	if st.StreamsCount != 1 || st.TopicsCount != 1 || st.PartitionsCount != 2 || st.ClientsCount != 2 {
		t.Fatalf("stats counts %+v", st)
	}
	if st.ProcessID == 0 || st.Hostname == "" || st.ThreadsCount == 0 || st.TotalMemory == 0 ||
		st.MemoryUsage == 0 || st.TotalDiskSpace == 0 || st.ServerVersion == "" || st.ServerSemver == 0 {
		t.Fatalf("stats figures missing %+v", st)
	}

	me, err := c.GetMe(ctx)
	must(t, err)
	if me.UserID != 0 || me.Transport != wire.TransportTCP || me.ClientID == 0 {
		t.Fatalf("me %+v", me)
	}
	clients, err := c.GetClients(ctx)
	must(t, err)
	if len(clients) != 2 {
		t.Fatalf("clients %+v", clients)
	}
	var anonID uint32
	for _, cl := range clients {
		if cl.ClientID != me.ClientID {
			anonID = cl.ClientID
			if cl.UserID != ^uint32(0) {
				t.Fatalf("unauthenticated client reports user %d", cl.UserID)
			}
		}
	}
	other, err := c.GetClient(ctx, anonID)
	must(t, err)
	if other.ClientID != anonID {
		t.Fatalf("get client %+v", other)
	}
	_, err = c.GetClient(ctx, 999999)
	expectCode(t, err, wire.ErrClientNotFound)

	md, err := c.GetClusterMetadata(ctx)
	must(t, err)
	_, port := splitHostPort(t, srv.addr)
	if md.Name != "single-node" || len(md.Nodes) != 1 {
		t.Fatalf("cluster metadata %+v", md)
	}
	n := md.Nodes[0]
	if n.Name != "iggy-node" || n.IP != "127.0.0.1" || n.TCP != port || n.QUIC != portOfAddr(t, srv.transportAddr("quic")) ||
		n.HTTP != 0 || n.WebSocket != portOfAddr(t, srv.transportAddr("websocket")) ||
		n.Role != wire.RoleLeader || n.Status != wire.NodeHealthy {
		t.Fatalf("cluster node %+v", n)
	}

	specs, err := c.DescribeOptions(ctx, wire.ScopeTopic)
	must(t, err)
	if len(specs) != len(wire.TopicOptionCatalog) {
		t.Fatalf("describe options: %d specs", len(specs))
	}
	must(t, c.Logout(ctx))
	_, err = c.GetStreams(ctx)
	expectCode(t, err, wire.ErrUnauthenticated)
}

func TestExpiredTokensAreRefusedAndCleaned(t *testing.T) {
	srv := startServer(t, "", "IGGY_PERSONAL_ACCESS_TOKEN_CLEANER_INTERVAL=100ms", "IGGY_PERSONAL_ACCESS_TOKEN_MAX_TOKENS_PER_USER=2")
	root := rootClient(t, srv.addr)
	ctx := testCtx(t)
	short, err := root.CreatePersonalAccessToken(ctx, "short", 300_000) // 300 ms
	must(t, err)
	_, err = root.CreatePersonalAccessToken(ctx, "long", 0)
	must(t, err)
	_, err = root.CreatePersonalAccessToken(ctx, "third", 0)
	expectCode(t, err, wire.ErrPersonalAccessTokensLimitReached)

	deadline := time.Now().Add(10 * time.Second)
	for {
		tokens, err := root.GetPersonalAccessTokens(ctx)
		must(t, err)
		if len(tokens) == 1 && tokens[0].Name == "long" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired token not cleaned: %+v", tokens)
		}
		time.Sleep(50 * time.Millisecond)
	}
	late := dialClient(t, srv.addr)
	_, err = late.LoginWithPersonalAccessToken(ctx, short)
	expectCode(t, err, wire.ErrInvalidPersonalAccessToken)
	// The cleaner's own session does not show up as a client (the evicted
	// connection is gone too).
	for {
		clients, err := root.GetClients(ctx)
		must(t, err)
		if len(clients) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clients %+v", clients)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDiagnosticsSnapshot(t *testing.T) {
	srv := startServer(t, "")
	c := rootClient(t, srv.addr)
	ctx := testCtx(t)
	status, _, payload, err := c.Raw(ctx, wire.OpNonReplicated, wire.CodeGetSnapshotFile, []byte{2, 1, 100})
	must(t, err)
	if status != wire.OK {
		t.Fatalf("snapshot status %s", status)
	}
	zr, err := zip.NewReader(bytes.NewReader(payload), int64(len(payload)))
	must(t, err)
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
	}
	for _, want := range []string{"filesystem_overview.txt", "process_list.txt", "resource_usage.txt", "server_config.txt"} {
		if !names[want] {
			t.Errorf("archive lacks %s: %v", want, names)
		}
	}
	for _, bad := range [][]byte{{9, 1, 1}, {1, 1, 77}, {1, 2, 100, 1}, {1, 0}} {
		status, _, _, err := c.Raw(ctx, wire.OpNonReplicated, wire.CodeGetSnapshotFile, bad)
		must(t, err)
		if status != wire.ErrInvalidCommand {
			t.Errorf("body %v: status %s, want InvalidCommand", bad, status)
		}
	}
}
