package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/lodestream/lodestream/wire"
)

func TestReadLineBatches(t *testing.T) {
	var got [][]string
	n, err := readLineBatches(strings.NewReader("a\r\n\nb\nlast-without-newline"), func(b []wire.BatchMessageInput) error {
		var s []string
		for _, m := range b {
			s = append(s, string(m.Payload))
			if m.ID == ([16]byte{}) || m.OriginTimestamp == 0 {
				t.Errorf("message %q lacks an ID or timestamp", m.Payload)
			}
		}
		got = append(got, s)
		return nil
	})
	if err != nil || n != 3 || len(got) != 1 || strings.Join(got[0], ",") != "a,b,last-without-newline" {
		t.Fatalf("n=%d err=%v batches=%q", n, err, got)
	}
	// Large input is split into bounded batches.
	var sizes []int
	n, err = readLineBatches(strings.NewReader(strings.Repeat("x\n", 2500)), func(b []wire.BatchMessageInput) error {
		sizes = append(sizes, len(b))
		return nil
	})
	if err != nil || n != 2500 || len(sizes) != 3 || sizes[0] != sendBatchMessagesMax || sizes[2] != 500 {
		t.Fatalf("n=%d err=%v sizes=%v", n, err, sizes)
	}
	boom := errors.New("boom")
	if _, err := readLineBatches(strings.NewReader(strings.Repeat("x\n", 1500)), func([]wire.BatchMessageInput) error { return boom }); err != boom {
		t.Fatalf("send error not returned: %v", err)
	}
}

func TestNextStrategy(t *testing.T) {
	msgs := []wire.PolledMessage{{Offset: 4}, {Offset: 5}}
	for _, k := range []wire.PollingKind{wire.PollOffset, wire.PollFirst, wire.PollLast, wire.PollNext} {
		if got := nextStrategy(wire.PollingStrategy{Kind: k}, msgs); got != (wire.PollingStrategy{Kind: wire.PollOffset, Value: 6}) {
			t.Errorf("after %d with messages: %+v", k, got)
		}
	}
	if got := nextStrategy(wire.PollingStrategy{Kind: wire.PollLast}, nil); got.Kind != wire.PollFirst {
		t.Errorf("empty last -> %+v", got)
	}
	off := wire.PollingStrategy{Kind: wire.PollOffset, Value: 9}
	if got := nextStrategy(off, nil); got != off {
		t.Errorf("empty offset -> %+v", got)
	}
}

func TestPollArgumentChecks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"message", "poll", "s", "t", "0"}, "exactly one polling strategy"},
		{[]string{"message", "poll", "--first", "--last", "s", "t", "0"}, "exactly one polling strategy"},
		{[]string{"message", "poll", "--first", "s", "t", "zero"}, "PARTITION_ID"},
		{[]string{"message", "poll", "--first", "-m", "0", "s", "t", "0"}, "--message-count"},
		{[]string{"message", "poll", "--first", "--follow", "--poll-interval", "1ms", "s", "t", "0"}, "--poll-interval"},
		{[]string{"message", "send", "-p", "1", "-m", "k", "s", "t", "x"}, "cannot be used together"},
		{[]string{"message", "send", "s", "t", ""}, "empty"},
	} {
		code, _, stderr := runCLI(t, "", c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: code %d stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

func TestPayloadText(t *testing.T) {
	if payloadText([]byte("héllo")) != "héllo" || payloadText([]byte{0xff, 0x00}) != "0xff00" {
		t.Error("payloadText")
	}
}

func TestParsePATExpiry(t *testing.T) {
	for in, want := range map[string]uint64{
		"":             0,
		"none":         0,
		"1hour 15min":  75 * 60 * 1_000_000,
		"2days":        2 * 86_400_000_000,
		"1 day 30 s":   86_400_000_000 + 30_000_000,
		"1week 1month": 604_800_000_000 + 2_630_016_000_000,
	} {
		got, err := parsePATExpiry(strings.Fields(in))
		if err != nil || got != want {
			t.Errorf("%q -> %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"soon", "5 parsecs", "hour"} {
		if _, err := parsePATExpiry(strings.Fields(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseGlobalPermissions(t *testing.T) {
	p, err := parseGlobalPermissions("m_str, read_topics,S_MSG")
	if err != nil {
		t.Fatal(err)
	}
	want := wire.GlobalPermissions{ManageStreams: true, ReadTopics: true, SendMessages: true}
	if p.Global != want {
		t.Errorf("global = %+v", p.Global)
	}
	if got := strings.Join(globalPermissionList(p.Global), ","); got != "manage_streams,read_topics,send_messages" {
		t.Errorf("list = %s", got)
	}
	if _, err := parseGlobalPermissions("m_str,fly"); err == nil {
		t.Error("unknown permission accepted")
	}
	if _, err := parseUserStatus("asleep"); err == nil {
		t.Error("unknown status accepted")
	}
}
