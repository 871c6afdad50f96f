package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func sendBody(partition string, messages ...map[string]any) map[string]any {
	ms := make([]any, len(messages))
	for i, m := range messages {
		ms[i] = m
	}
	return map[string]any{"partitioning": map[string]any{"kind": "partition_id", "value": partition}, "messages": ms}
}

func TestMessageRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 2)), 200, "")
	msgs := "/streams/s/topics/t/messages"

	r := expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==",
		map[string]any{"id": 1, "payload": "aGVsbG8="},
		map[string]any{"id": "340282366920938463463374607431768211455", "payload": "d29ybGQ=", "user_headers": []any{
			map[string]any{"key": map[string]string{"kind": "string", "value": "a2V5XzE="}, "value": map[string]string{"kind": "string", "value": "dmFsdWUgMQ=="}},
			map[string]any{"key": map[string]string{"kind": "string", "value": "bg=="}, "value": map[string]string{"kind": "int32", "value": "KgAAAA=="}},
		}},
		map[string]any{"id": "0195d6c2-7a1f-7c3e-9b1d-2f4e6a8b0c12", "payload": "IQ=="},
	)), 201, "")
	if r.header.Get("iggy-durability") != "replicated-memory" {
		t.Fatalf("durability header %q", r.header.Get("iggy-durability"))
	}
	golden(t, "send_confirmations", r.body)

	// An id of 0 (or none) gets a random one.
	expect(t, ts.do("POST", msgs, tok, sendBody("AQAAAA==", map[string]any{"id": 0, "payload": "eA=="})), 201, "")
	r = expect(t, ts.do("POST", msgs+"?ack=none", tok, sendBody("AQAAAA==", map[string]any{"payload": "eA=="})), 202, "")
	if r.header.Get("iggy-durability") != "none" || len(r.body) != 0 {
		t.Fatalf("ack=none: %v %q", r.header, r.body)
	}
	key := map[string]any{"partitioning": map[string]any{"kind": "messages_key", "value": "a2V5"}, "messages": []any{map[string]any{"payload": "eQ=="}}}
	expect(t, ts.do("POST", msgs, tok, key), 201, "")
	balanced := map[string]any{"partitioning": map[string]any{"kind": "balanced", "value": ""}, "messages": []any{map[string]any{"payload": "eg=="}}}
	expect(t, ts.do("POST", msgs, tok, balanced), 201, "")

	// Poll: u128 ids are exact numbers, headers decoded.
	r = expect(t, ts.do("GET", msgs+"?partition_id=0&kind=offset&value=0&count=3&consistency=serializable", tok, nil), 200, "")
	golden(t, "polled_messages", r.body)
	if !strings.Contains(string(r.body), `"id":340282366920938463463374607431768211455`) {
		t.Fatalf("u128 id not exact: %s", r.body)
	}
	if !strings.Contains(string(r.body), `"id":2107236071420549041238371031518481426`) {
		t.Fatalf("uuid id not read as a big-endian u128: %s", r.body)
	}
	golden(t, "polled_empty", expect(t, ts.do("GET", msgs+"?partition_id=0&kind=offset&value=100", tok, nil), 200, "").body)
	expect(t, ts.do("GET", msgs+"?partition_id=0&kind=l", tok, nil), 200, "")
	expect(t, ts.do("GET", msgs+"?partition_id=9", tok, nil), 404, "partition_not_found")
	expect(t, ts.do("GET", "/streams/s/topics/nope/messages", tok, nil), 404, "not_found")
	expect(t, ts.do("GET", msgs+"?kind=sideways", tok, nil), 400, "")
	expect(t, ts.do("GET", msgs+"?count=many", tok, nil), 400, "")
	expect(t, ts.do("GET", msgs+"?consistency=eventual", tok, nil), 400, "")

	// Send errors.
	expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==")), 400, "invalid_messages_count")
	expect(t, ts.do("POST", msgs, tok, sendBody("AA==", map[string]any{"payload": "eA=="})), 400, "invalid_key_value_length")
	expect(t, ts.do("POST", msgs, tok, sendBody("CQAAAA==", map[string]any{"payload": "eA=="})), 404, "resource_not_found")
	expect(t, ts.do("POST", "/streams/s/topics/nope/messages", tok, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 404, "resource_not_found")
	expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==", map[string]any{"payload": ""})), 422, "")
	expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==", map[string]any{"payload": "%%%"})), 422, "")
	expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==", map[string]any{"payload": "eA==", "id": true})), 422, "")
	extra := sendBody("AAAAAA==", map[string]any{"payload": "eA=="})
	extra["surprise"] = 1
	expect(t, ts.do("POST", msgs, tok, extra), 422, "")
	expect(t, ts.do("POST", msgs+"?ack=maybe", tok, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 400, "")
}

func TestConsumerOffsetRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 1)), 200, "")
	msgs := "/streams/s/topics/t/messages"
	for range 3 {
		expect(t, ts.do("POST", msgs, tok, sendBody("AAAAAA==", map[string]any{"payload": "eA=="})), 201, "")
	}
	offsets := "/streams/s/topics/t/consumer-offsets"
	expect(t, ts.do("GET", offsets+"?consumer_id=7&partition_id=0", tok, nil), 404, "not_found")
	expect(t, ts.do("PUT", offsets, tok, map[string]any{"consumer_id": 7, "partition_id": 0, "offset": 1}), 204, "")
	golden(t, "consumer_offset", expect(t, ts.do("GET", offsets+"?consumer_id=7&partition_id=0", tok, nil), 200, "").body)
	expect(t, ts.do("PUT", offsets, tok, map[string]any{"consumer_id": "worker", "partition_id": 0, "offset": 2}), 204, "")
	expect(t, ts.do("GET", offsets+"?consumer_id=worker", tok, nil), 200, "")
	expect(t, ts.do("PUT", offsets, tok, map[string]any{"consumer_id": 7, "offset": 1}), 404, "resource_not_found")
	expect(t, ts.do("DELETE", offsets+"/7?partition_id=0", tok, nil), 204, "")
	expect(t, ts.do("DELETE", offsets+"/7?partition_id=0", tok, nil), 404, "consumer_offset_not_found")
	expect(t, ts.do("GET", "/streams/s/topics/nope/consumer-offsets", tok, nil), 404, "not_found")

	// auto_commit stores the offset of the last polled message.
	expect(t, ts.do("GET", msgs+"?consumer_id=9&partition_id=0&count=2&auto_commit=true", tok, nil), 200, "")
	var o offsetJSON
	for range 100 {
		r := ts.do("GET", offsets+"?consumer_id=9&partition_id=0", tok, nil)
		if r.status == 200 {
			if err := json.Unmarshal(r.body, &o); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if o.StoredOffset != 1 {
		t.Fatalf("auto-commit stored %+v, want offset 1", o)
	}
}
