package wire

import (
	"errors"
	"testing"
)

func TestApplyTopicOptions(t *testing.T) {
	cfg, err := ApplyTopicOptions(DefaultTopicConfig(), Options{
		OptionString(OptCompressionAlgorithm, "gzip"),
		OptionString(OptMessageExpiry, "7 days"),
		OptionString(OptMaxTopicSize, "10 GiB"),
		OptionUint64(OptSegmentSize, 64<<20),
		OptionBool(OptEnforceFsync, true),
		OptionUint32(OptMessagesRequiredToSave, 10),
		OptionString(OptSizeOfMessagesRequiredToSave, "2 MiB"),
	}, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := TopicConfig{Compression: CompressionGzip, MessageExpiryMicros: 7 * 86_400_000_000, MaxTopicSizeBytes: 10 << 30,
		SegmentSizeBytes: 64 << 20, EnforceFsync: true, MessagesRequiredToSave: 10, SizeOfMessagesRequiredToS: 2 << 20}
	if cfg != want {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	// Zero sentinels keep the base value.
	cfg, err = ApplyTopicOptions(DefaultTopicConfig(), Options{OptionUint64(OptMessageExpiry, 0), OptionUint64(OptMaxTopicSize, 0)}, false, 1)
	if err != nil || cfg != DefaultTopicConfig() {
		t.Fatalf("sentinels: %+v %v", cfg, err)
	}
}

func TestTopicOptionRejections(t *testing.T) {
	cases := map[string]struct {
		opts       Options
		update     bool
		partitions uint32
		code       ErrorCode
	}{
		"unknown key":            {Options{OptionBool("replication_factor", true)}, false, 1, ErrUnsupportedOptionKey},
		"create-only on update":  {Options{OptionUint64(OptSegmentSize, 1<<20)}, true, 1, ErrUnsupportedOptionKey},
		"bad compression":        {Options{OptionString(OptCompressionAlgorithm, "zstd")}, false, 1, ErrInvalidOptionValue},
		"segment not aligned":    {Options{OptionUint64(OptSegmentSize, 1<<20+1)}, false, 1, ErrInvalidOptionValue},
		"segment too small":      {Options{OptionUint64(OptSegmentSize, 512)}, false, 1, ErrInvalidOptionValue},
		"segment too large":      {Options{OptionUint64(OptSegmentSize, 2<<30)}, false, 1, ErrInvalidOptionValue},
		"max size below segment": {Options{OptionUint64(OptMaxTopicSize, 1<<20)}, false, 1, ErrInvalidOptionValue},
		"messages zero":          {Options{OptionUint32(OptMessagesRequiredToSave, 0)}, false, 1, ErrInvalidOptionValue},
		"messages too many":      {Options{OptionUint32(OptMessagesRequiredToSave, 16<<20+1)}, false, 1, ErrInvalidOptionValue},
		"bool wrong kind":        {Options{OptionUint64(OptEnforceFsync, 1)}, false, 1, ErrInvalidOptionValue},
		"expiry bad string":      {Options{OptionString(OptMessageExpiry, "soon")}, false, 1, ErrInvalidOptionValue},
		"preallocate too much":   {Options{OptionBool(OptPreallocateSegments, true)}, false, 65, ErrInvalidOptionValue},
		"flush size too big":     {Options{OptionUint64(OptSizeOfMessagesRequiredToSave, 1<<30+1)}, false, 1, ErrInvalidOptionValue},
	}
	for name, tc := range cases {
		_, err := ApplyTopicOptions(DefaultTopicConfig(), tc.opts, tc.update, tc.partitions)
		if !errors.Is(err, tc.code) {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
	if _, err := ApplyTopicOptions(DefaultTopicConfig(), Options{OptionBool(OptPreallocateSegments, true)}, false, 64); err != nil {
		t.Errorf("64 × 1 GiB preallocation refused: %v", err)
	}
	if err := ApplyStreamOrUserOptions(Options{OptionBool("x", true)}); !errors.Is(err, ErrUnsupportedOptionKey) {
		t.Errorf("stream option accepted: %v", err)
	}
}

func TestParseHelpers(t *testing.T) {
	for s, want := range map[string]uint64{"1h 30m": 5_400_000_000, "500ms": 500_000, "never": Unlimited, "10s": 10_000_000} {
		if got, err := parseDurationMicros(s); err != nil || got != want {
			t.Errorf("duration %q = %d %v", s, got, err)
		}
	}
	for s, want := range map[string]uint64{"1 GB": 1_000_000_000, "128MiB": 128 << 20, "unlimited": Unlimited, "42": 42} {
		if got, err := parseByteSize(s); err != nil || got != want {
			t.Errorf("size %q = %d %v", s, got, err)
		}
	}
	for _, s := range []string{"", "GiB", "99999999999999999999 GiB", "1 parsec", "1 GiB 2 MiB"} {
		if _, err := parseByteSize(s); err == nil {
			t.Errorf("size %q accepted", s)
		}
	}
	if _, err := parseDurationMicros("99999999999999 weeks"); err == nil {
		t.Error("overflowing duration accepted")
	}
}
