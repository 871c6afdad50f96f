package integration

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// TestEncryptionAtRest: with system.encryption enabled, payloads and user
// headers are stored encrypted (no plaintext anywhere under system.path),
// clients poll back exactly what they sent with valid frame checksums, the
// data survives a restart, and a different key answers CannotDecryptData
// rather than garbage.
func TestEncryptionAtRest(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
	srv := startServer(t, "", "IGGY_SYSTEM_ENCRYPTION_ENABLED=true", "IGGY_SYSTEM_ENCRYPTION_KEY="+key)
	ctx := testCtx(t)
	c := rootClient(t, srv.addr)
	_, err := c.CreateStream(ctx, "enc")
	must(t, err)
	_, err = c.CreateTopic(ctx, named("enc"), "t", 1)
	must(t, err)
	headers := wire.TLVPair{KeyKind: wire.KindString, Key: []byte("hdr-key"), ValueKind: wire.KindString, Value: []byte("hdr-secret-value")}.Append(nil)
	msgs := makeMessages("top-secret-payload", 0, 50)
	for i := range msgs {
		msgs[i].UserHeaders = headers
	}
	sendOK(t, c, named("enc"), named("t"), partitionID(0), msgs)

	check := func(c *client.Client, what string) {
		t.Helper()
		r := pollAt(t, c, wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)}, named("enc"), named("t"),
			wire.SomePartition(0), wire.PollingStrategy{Kind: wire.PollFirst}, 100, false)
		expectPolled(t, what, r, "top-secret-payload", 0, 50)
		for i, m := range r.Messages {
			if !bytes.Equal(m.UserHeaders, headers) || m.ID != msgs[i].ID || m.OriginTimestamp != msgs[i].OriginTimestamp {
				t.Fatalf("%s: message %d headers %q id %x ts %d", what, i, m.UserHeaders, m.ID, m.OriginTimestamp)
			}
		}
		// Frame checksums are valid for the plaintext the client receives.
		req := wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)},
			Stream: named("enc"), Topic: named("t"), Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 100}
		status, _, body, err := c.Raw(testCtx(t), wire.OpNonReplicated, wire.CodePollMessages, req.Append(nil))
		must(t, err)
		if status != wire.OK {
			t.Fatalf("%s: raw poll status %s", what, status)
		}
		for pos := wire.PollMessagesReplyPrefixSize; pos < len(body); {
			h, err := wire.VerifyBatchRecord(body[pos:])
			if err != nil {
				t.Fatalf("%s: polled record does not verify: %v", what, err)
			}
			pos += int(h.BatchLength)
		}
	}
	check(c, "encrypted poll")

	plaintextOnDisk := func() []string {
		var found []string
		_ = filepath.Walk(srv.dataDir, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || strings.Contains(path, string(filepath.Separator)+"logs"+string(filepath.Separator)) {
				return nil
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte("top-secret-payload")) || bytes.Contains(b, []byte("hdr-secret-value")) {
				found = append(found, path)
			}
			return nil
		})
		return found
	}
	if files := plaintextOnDisk(); len(files) > 0 {
		t.Fatalf("plaintext stored in %v", files)
	}

	srv.restart(syscall.SIGTERM)
	c = rootClient(t, srv.addr)
	check(c, "after restart")
	if files := plaintextOnDisk(); len(files) > 0 {
		t.Fatalf("plaintext stored in %v", files)
	}

	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x11}, 32))
	srv.env = []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true", "IGGY_SYSTEM_ENCRYPTION_KEY=" + other}
	srv.restart(syscall.SIGTERM)
	c = rootClient(t, srv.addr)
	_, err = c.PollMessages(testCtx(t), wire.PollMessagesRequest{Consumer: wire.Consumer{Kind: wire.ConsumerKindSingle, ID: id(1)},
		Stream: named("enc"), Topic: named("t"), Partition: wire.SomePartition(0), Strategy: wire.PollingStrategy{Kind: wire.PollFirst}, Count: 100})
	expectCode(t, err, wire.ErrCannotDecryptData)
	if strings.Contains(srv.logs.String(), key) || strings.Contains(srv.logs.String(), other) {
		t.Fatal("the encryption key appears in the server log")
	}
}
