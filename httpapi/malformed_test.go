package httpapi

import (
	"bytes"
	"strings"
	"testing"
)

// TestMalformedInput sends bad input of every kind to write routes: each
// gets the spec's status, the server keeps serving, and nothing is
// applied.
func TestMalformedInput(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 1)), 200, "")
	before := snapshotState(t, ts, tok)

	long := strings.Repeat("n", 256)
	cases := []struct {
		name, method, path string
		body               string
		contentType        string
		status             int
	}{
		{"syntax", "POST", "/streams", `{"name":`, "", 400},
		{"not json", "POST", "/streams", `name=s`, "", 400},
		{"trailing garbage", "POST", "/streams", `{"name":"x"} {`, "", 400},
		{"wrong type", "POST", "/streams", `{"name":7}`, "", 422},
		{"missing field", "POST", "/streams", `{}`, "", 422},
		{"array body", "POST", "/streams", `[]`, "", 422},
		{"null body", "POST", "/streams/s/topics", `null`, "", 422},
		{"topic missing fields", "POST", "/streams/s/topics", `{"name":"x"}`, "", 422},
		{"topic bad compression", "POST", "/streams/s/topics", `{"name":"x","partitions_count":1,"compression_algorithm":"lz4","message_expiry":0,"max_topic_size":0}`, "", 422},
		{"topic negative count", "POST", "/streams/s/topics", `{"name":"x","partitions_count":-1,"compression_algorithm":"none","message_expiry":0,"max_topic_size":0}`, "", 422},
		{"topic expiry as string", "POST", "/streams/s/topics", `{"name":"x","partitions_count":1,"compression_algorithm":"none","message_expiry":"1h","max_topic_size":0}`, "", 422},
		{"no content type", "POST", "/streams", `{"name":"x"}`, "-", 415},
		{"form content type", "POST", "/streams", `{"name":"x"}`, "application/x-www-form-urlencoded", 415},
		{"long path name", "GET", "/streams/" + long, "", "", 400},
		{"long stream name", "POST", "/streams", `{"name":"` + long + `"}`, "", 400},
		{"bad partition path", "DELETE", "/streams/s/topics/t/partitions/-1?segments_count=1", "", "", 400},
		{"missing query", "DELETE", "/streams/s/topics/t/partitions", "", "", 400},
		{"bad query number", "DELETE", "/streams/s/topics/t/partitions?partitions_count=x", "", "", 400},
		{"bad consistency", "GET", "/streams?consistency=strong", "", "", 400},
		{"bad bool", "GET", "/streams/s/topics/t/messages?auto_commit=yes", "", "", 400},
		{"send unknown top-level key", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA=="}],"x":1}`, "", 422},
		{"send bad partitioning kind", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"random","value":""},"messages":[{"payload":"eA=="}]}`, "", 422},
		{"send bad header kind", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA==","user_headers":[{"key":{"kind":"blob","value":"YQ=="},"value":{"kind":"raw","value":"YQ=="}}]}]}`, "", 422},
		{"send bad header base64", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA==","user_headers":"!!"}]}`, "", 422},
		{"send id too big", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"balanced","value":""},"messages":[{"id":18446744073709551616,"payload":"eA=="}]}`, "", 422},
		{"send id bad string", "POST", "/streams/s/topics/t/messages", `{"partitioning":{"kind":"balanced","value":""},"messages":[{"id":"xyz","payload":"eA=="}]}`, "", 422},
		{"permissions missing flag", "POST", "/users", `{"username":"someone","password":"secret","status":"active","permissions":{"global":{"manage_servers":true}}}`, "", 422},
		{"permissions bad key", "POST", "/users", `{"username":"someone","password":"secret","status":"active","permissions":{"global":` + allFlags + `,"streams":{"x":{}}}}`, "", 422},
		{"offset negative", "PUT", "/streams/s/topics/t/consumer-offsets", `{"consumer_id":1,"partition_id":0,"offset":-1}`, "", 422},
		{"offset consumer object", "PUT", "/streams/s/topics/t/consumer-offsets", `{"consumer_id":{},"partition_id":0,"offset":1}`, "", 422},
		{"oversize", "POST", "/streams", `{"name":"` + strings.Repeat("x", 2_100_000) + `"}`, "", 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			headers := map[string]string{}
			switch c.contentType {
			case "-":
				headers["Content-Type"] = ""
			case "":
			default:
				headers["Content-Type"] = c.contentType
			}
			var body any
			if c.body != "" {
				body = c.body
			}
			expect(t, ts.doWith(c.method, c.path, tok, body, headers), c.status, "")
		})
	}
	expect(t, ts.do("GET", "/ping", "", nil), 200, "")
	if after := snapshotState(t, ts, tok); !bytes.Equal(before, after) {
		t.Fatalf("state changed by refused requests:\n%s\n%s", before, after)
	}
}

const allFlags = `{"manage_servers":false,"read_servers":false,"manage_users":false,"read_users":false,"manage_streams":false,` +
	`"read_streams":false,"manage_topics":false,"read_topics":false,"poll_messages":false,"send_messages":false}`

// snapshotState is what the refused requests could have changed.
func snapshotState(t *testing.T, ts *testServer, tok string) []byte {
	var out []byte
	for _, p := range []string{"/streams", "/streams/s/topics/t", "/users"} {
		out = append(out, expect(t, ts.do("GET", p, tok, nil), 200, "").body...)
	}
	return out
}
