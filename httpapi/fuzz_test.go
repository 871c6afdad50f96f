package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lodestream/lodestream/wire"
)

// FuzzSendBody: any body either is refused with 400/422 or converts into a
// binary SendMessages body that the node's decoder accepts.
func FuzzSendBody(f *testing.F) {
	for _, s := range []string{
		`{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA=="}]}`,
		`{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"id":"0195d6c2-7a1f-7c3e-9b1d-2f4e6a8b0c12","payload":"d29ybGQ=","user_headers":[{"key":{"kind":"string","value":"a2V5"},"value":{"kind":"int32","value":"KgAAAA=="}}]}]}`,
		`{"partitioning":{"kind":"messages_key","value":"a2V5"},"messages":[{"id":340282366920938463463374607431768211455,"payload":"eA==","user_headers":"AgMAAABrZXkCAQAAAHY="}]}`,
		`{"messages":[]}`, `[]`, `{`, `{"partitioning":null,"messages":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, status, _ := parseSend(body)
		if status != 0 {
			if status != 400 && status != 422 {
				t.Fatalf("status %d", status)
			}
			return
		}
		if len(req.Messages) == 0 {
			return
		}
		p, code := req.Partitioning.toWire()
		if code != wire.OK {
			return
		}
		msgs, err := req.batch(time.Unix(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		frame, err := wire.AppendSendMessages(nil, wire.NumericID(0), wire.NumericID(0), p, msgs)
		if err != nil {
			return // refused while encoding (e.g. a batch over a wire bound)
		}
		if _, err := wire.DecodeSendMessages(frame); err != nil {
			t.Fatalf("accepted body builds a frame the node refuses: %v\n%s", err, body)
		}
	})
}

// FuzzRequestBodies: the JSON request decoders of the other write routes
// never panic and classify every body as accepted, 400 or 422.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		`{"name":"s"}`, `{"name":"t","partitions_count":1,"compression_algorithm":"gzip","message_expiry":0,"max_topic_size":0,"options":{"segment_size":"1 MiB"}}`,
		`{"username":"user","password":"pass","status":"active","permissions":{"global":` + allFlags + `,"streams":{"1":{"manage_stream":true,"read_stream":true,"manage_topics":true,"read_topics":true,"poll_messages":true,"send_messages":true,"topics":{"2":{"manage_topic":true,"read_topic":true,"poll_messages":true,"send_messages":true}}}}}}`,
		`{"consumer_id":"c","partition_id":0,"offset":1}`, `{"current_password":"a","new_password":"b"}`, `{"token":"x"}`,
		`{"compression":"Zstd","snapshot_types":["All"]}`, `{"name":"pat","expiry":18446744073709551615}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		targets := []any{&nameRequest{}, &createTopicRequest{}, &updateTopicRequest{}, &createUserRequest{}, &updateUserRequest{},
			&changePasswordRequest{}, &permissionsRequest{}, &createPATRequest{}, &storeOffsetRequest{}, &loginRequest{},
			&tokenRequest{}, &snapshotRequest{}, &partitionsRequest{}, &groupNameRequest{}}
		for _, v := range targets {
			status, _ := parseJSON(body, v)
			if status != 0 && status != 400 && status != 422 {
				t.Fatalf("%T: status %d", v, status)
			}
			if status != 0 {
				continue
			}
			switch r := v.(type) {
			case *createUserRequest:
				_, _ = r.Permissions.toWire()
			case *permissionsRequest:
				if p, err := r.Permissions.toWire(); err == nil && p != nil {
					if _, err := wire.DecodePermissions(p.Append(nil)); err != nil {
						t.Fatalf("converted permissions do not decode: %v", err)
					}
				}
			case *createTopicRequest:
				_ = topicOptions(r.CompressionAlgorithm, r.MessageExpiry, r.MaxTopicSize, r.Options)
			}
		}
	})
}

// FuzzMessageID: an accepted id renders as a JSON number that reads back
// to the same id.
func FuzzMessageID(f *testing.F) {
	for _, s := range []string{`0`, `18446744073709551615`, `"340282366920938463463374607431768211455"`,
		`"0195d6c2-7a1f-7c3e-9b1d-2f4e6a8b0c12"`, `"0195d6c27a1f7c3e9b1d2f4e6a8b0c12"`, `-1`, `1.5`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var id messageID
		if err := json.Unmarshal(b, &id); err != nil {
			return
		}
		out, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := parseMessageID(string(out))
		if !ok || back != id {
			t.Fatalf("%s → %s → %x", b, out, back)
		}
	})
}
