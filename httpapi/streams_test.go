package httpapi

import (
	"net/http"
	"testing"
)

func topicBody(name string, partitions int) map[string]any {
	return map[string]any{"name": name, "partitions_count": partitions, "compression_algorithm": "none",
		"message_expiry": 0, "max_topic_size": 0}
}

func TestStreamRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")

	golden(t, "stream_created", expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "orders"}), 200, "").body)
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "orders"}), 400, "stream_name_already_exists")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": ""}), 400, "invalid_stream_name")
	golden(t, "streams_list", expect(t, ts.do("GET", "/streams?consistency=linearizable", tok, nil), 200, "").body)
	golden(t, "stream_details", expect(t, ts.do("GET", "/streams/orders", tok, nil), 200, "").body)
	expect(t, ts.do("GET", "/streams/0", tok, nil), 200, "")
	golden(t, "not_found", expect(t, ts.do("GET", "/streams/nope", tok, nil), 404, "not_found").body)

	expect(t, ts.do("PUT", "/streams/orders", tok, map[string]any{"name": "orders2"}), 204, "")
	expect(t, ts.do("PUT", "/streams/orders", tok, map[string]any{"name": "x"}), 404, "")
	expect(t, ts.do("PUT", "/streams/7", tok, map[string]any{"name": "x"}), 404, "stream_id_not_found")
	expect(t, ts.do("PUT", "/streams/0", tok, map[string]any{"name": "orders", "options": map[string]string{"k": "v"}}), 400, "unsupported_option_key")
	expect(t, ts.do("DELETE", "/streams/orders2/purge", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/streams/orders2", tok, nil), 204, "")
	golden(t, "stream_id_not_found", expect(t, ts.do("DELETE", "/streams/0", tok, nil), 404, "stream_id_not_found").body)
	golden(t, "streams_empty", expect(t, ts.do("GET", "/streams", tok, nil), 200, "").body)
}

func TestTopicPartitionSegmentRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")

	golden(t, "topic_created", expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 2)), 200, "").body)
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 1)), 400, "topic_name_already_exists")
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("big", 1001)), 400, "too_many_partitions")
	expect(t, ts.do("POST", "/streams/nope/topics", tok, topicBody("t", 1)), 404, "")
	withOptions := topicBody("opts", 1)
	withOptions["compression_algorithm"] = "GZIP"
	withOptions["message_expiry"] = 60_000_000
	withOptions["max_topic_size"] = uint64(1) << 40
	withOptions["options"] = map[string]string{"segment_size": "128 MiB"}
	golden(t, "topic_created_options", expect(t, ts.do("POST", "/streams/s/topics", tok, withOptions), 200, "").body)
	bad := topicBody("bad", 1)
	bad["options"] = map[string]string{"segment_size": "1 KiB"}
	expect(t, ts.do("POST", "/streams/s/topics", tok, bad), 400, "invalid_option_value")

	golden(t, "topics_list", expect(t, ts.do("GET", "/streams/s/topics", tok, nil), 200, "").body)
	golden(t, "topic_details", expect(t, ts.do("GET", "/streams/s/topics/t", tok, nil), 200, "").body)
	expect(t, ts.do("GET", "/streams/s/topics/nope", tok, nil), 404, "not_found")

	expect(t, ts.do("PUT", "/streams/s/topics/t", tok, map[string]any{"name": "t", "message_expiry": 5_000_000}), 204, "")
	r := expect(t, ts.do("GET", "/streams/s/topics/t", tok, nil), 200, "")
	var td map[string]any
	r.json(t, &td)
	if td["message_expiry"].(float64) != 5_000_000 {
		t.Fatalf("update did not apply: %s", r.body)
	}

	// Partitions: add (200, empty body), remove the highest N, segments.
	r = expect(t, ts.do("POST", "/streams/s/topics/t/partitions", tok, map[string]any{"partitions_count": 3}), 200, "")
	if len(r.body) != 0 {
		t.Fatalf("create partitions body %q", r.body)
	}
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions?partitions_count=2", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions?partitions_count=99", tok, nil), 400, "invalid_partitions_count")
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions", tok, nil), 400, "")
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions/0?segments_count=1", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions/77?segments_count=1", tok, nil), 404, "partition_not_found")
	expect(t, ts.do("DELETE", "/streams/s/topics/t/partitions/x?segments_count=1", tok, nil), 400, "")
	r = expect(t, ts.do("GET", "/streams/s/topics/t", tok, nil), 200, "")
	r.json(t, &td)
	if td["partitions_count"].(float64) != 3 {
		t.Fatalf("partitions after add 3 remove 2: %s", r.body)
	}

	expect(t, ts.do("DELETE", "/streams/s/topics/t/purge", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/streams/s/topics/t", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/streams/s/topics/t", tok, nil), 404, "")
}

func TestConsumerGroupRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("POST", "/streams/s/topics", tok, topicBody("t", 3)), 200, "")
	cg := "/streams/s/topics/t/consumer-groups"
	golden(t, "group_created", expect(t, ts.do("POST", cg, tok, map[string]any{"name": "g"}), http.StatusOK, "").body)
	expect(t, ts.do("POST", cg, tok, map[string]any{"name": "g"}), 400, "consumer_group_name_already_exists")
	golden(t, "groups_list", expect(t, ts.do("GET", cg, tok, nil), 200, "").body)
	golden(t, "group_details", expect(t, ts.do("GET", cg+"/g", tok, nil), 200, "").body)
	expect(t, ts.do("GET", cg+"/0", tok, nil), 200, "")
	expect(t, ts.do("GET", cg+"/zz", tok, nil), 404, "not_found")
	expect(t, ts.do("DELETE", cg+"/g", tok, nil), 204, "")
	expect(t, ts.do("DELETE", cg+"/g", tok, nil), 404, "")
}
