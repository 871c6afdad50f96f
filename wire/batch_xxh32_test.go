package wire

import "testing"

// xxhashSanityBuffer reproduces the buffer of the reference xxHash sanity check (xsum_sanity_check.c):
// byteGen starts at PRIME32 and each byte is its top 8 bits before multiplying by PRIME64.
func xxhashSanityBuffer(n int) []byte {
	const prime32 uint64 = 2654435761
	const prime64 uint64 = 11400714785074694797
	b := make([]byte, n)
	gen := prime32
	for i := range b {
		b[i] = byte(gen >> 56)
		gen *= prime64
	}
	return b
}

func TestXXH32PublishedVectors(t *testing.T) {
	const prime32 = 2654435761
	buf := xxhashSanityBuffer(222)
	cases := []struct {
		length int
		seed   uint32
		want   uint32
	}{
		{0, 0, 0x02CC5D05},
		{0, prime32, 0x36B78AE7},
		{1, 0, 0xCF65B03E},
		{1, prime32, 0xB4545AA4},
		{14, 0, 0x1208E7E2},
		{14, prime32, 0x6AF1D1FE},
		{222, 0, 0x5BD11DBD},
		{222, prime32, 0x58803C5F},
	}
	for _, tc := range cases {
		if got := XXH32(buf[:tc.length], tc.seed); got != tc.want {
			t.Errorf("XXH32(sanity[:%d], %#x) = %#08x, want %#08x", tc.length, tc.seed, got, tc.want)
		}
	}
}

// TestPartitionForKeyMatchesGoSDK uses the digests the Go SDK pins in foreign/go/internal/hash (taken
// from the twox-hash crate the server uses) and its placement rule XXH32(raw key bytes) % count
// (foreign/go/client/tcp/tcp_messaging.go), so a key lands where an upstream client would put it.
func TestPartitionForKeyMatchesGoSDK(t *testing.T) {
	cases := []struct {
		key  string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
		{"abcd", 0xA3643705},
		{"order-key-1", 0x0D3FE0E1},
		{"0123456789abcdef", 0xC2C45B69},
		{"0123456789abcdefghijklmnopqrstuvwxyz", 0x9AA38E7E},
		{"Nobody inspects the spammish repetition", 0xE2293B2F},
	}
	for _, tc := range cases {
		if got := XXH32([]byte(tc.key), 0); got != tc.want {
			t.Errorf("XXH32(%q) = %#08x, want %#08x", tc.key, got, tc.want)
		}
		if tc.key == "" {
			continue
		}
		for _, count := range []uint32{1, 3, 7, 1000} {
			p, err := ResolvePartition(Partitioning{Kind: PartitioningMessagesKey, Key: []byte(tc.key)}, count, nil)
			if err != nil || p != tc.want%count {
				t.Errorf("key %q over %d partitions: %d, %v; want %d", tc.key, count, p, err, tc.want%count)
			}
		}
	}
}

func TestResolvePartition(t *testing.T) {
	var cursor BalancedCursor
	for i := uint32(0); i < 7; i++ {
		p, err := ResolvePartition(Partitioning{Kind: PartitioningBalanced}, 3, &cursor)
		if err != nil || p != i%3 {
			t.Fatalf("balanced send %d: partition %d, %v", i, p, err)
		}
	}
	if p, err := ResolvePartition(Partitioning{Kind: PartitioningPartitionID, PartitionID: 2}, 3, nil); err != nil || p != 2 {
		t.Fatalf("explicit partition: %d, %v", p, err)
	}
	errs := []struct {
		p     Partitioning
		count uint32
		code  ErrorCode
	}{
		{Partitioning{Kind: PartitioningPartitionID, PartitionID: 3}, 3, ErrPartitionNotFound},
		{Partitioning{Kind: PartitioningBalanced}, 0, ErrNoPartitions},
		{Partitioning{Kind: PartitioningMessagesKey}, 3, ErrInvalidKeyValueLength},
		{Partitioning{Kind: PartitioningMessagesKey, Key: make([]byte, 256)}, 3, ErrInvalidKeyValueLength},
		{Partitioning{Kind: 9}, 3, ErrInvalidCommand},
		{Partitioning{Kind: PartitioningBalanced}, 3, ErrInvalidCommand}, // no cursor
	}
	for _, tc := range errs {
		if _, err := ResolvePartition(tc.p, tc.count, nil); ErrorCodeOf(err) != tc.code {
			t.Errorf("ResolvePartition(%+v, %d) = %v, want %v", tc.p, tc.count, err, tc.code)
		}
	}
}
