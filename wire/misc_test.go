package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestEvictionDecodeRules(t *testing.T) {
	ev := EncodeEviction(Uint128{Lo: 1}, EvictNoSession, 0, 0)
	bad := ev
	bad[60] = 8
	if _, err := DecodeEviction(bad[:]); err == nil {
		t.Error("non-eviction command accepted")
	}
	bad = ev
	bad[48] = 1
	if _, err := DecodeEviction(bad[:]); err == nil {
		t.Error("eviction with size ≠ 256 accepted")
	}
	if _, err := DecodeEviction(ev[:10]); err == nil {
		t.Error("short eviction accepted")
	}
	if EvictMalformedLogin.String() != "MalformedLogin" || EvictionReason(99).String() != "EvictionReason(99)" {
		t.Error("reason names")
	}
}

func TestPrefixReaders(t *testing.T) {
	b := cat(Consumer{Kind: ConsumerKindSingle, ID: NamedID("c")}.Append(nil), []byte{9})
	c, n, err := ReadConsumer(b)
	if err != nil || n != len(b)-1 || c.ID.Name != "c" {
		t.Fatalf("consumer %+v %d %v", c, n, err)
	}
	p, n, err := ReadPartitioning(Partitioning{Kind: PartitioningMessagesKey, Key: []byte("k")}.Append(nil))
	if err != nil || n != 3 || string(p.Key) != "k" || (Partitioning{Kind: PartitioningMessagesKey, Key: []byte("k")}).Size() != 3 {
		t.Fatalf("partitioning %+v %d %v", p, n, err)
	}
	for _, bad := range [][]byte{{1, 1}, {2, 3, 0, 0, 0}, {3, 0}, {4, 0}} {
		if _, _, err := ReadPartitioning(bad); err == nil {
			t.Errorf("partitioning %x accepted", bad)
		}
	}
	s, n, err := ReadPollingStrategy(PollingStrategy{Kind: PollTimestamp, Value: 5}.Append(nil))
	if err != nil || n != 9 || s.Value != 5 {
		t.Fatalf("strategy %+v %v", s, err)
	}
	if _, _, err := ReadPollingStrategy(PollingStrategy{Kind: 6}.Append(nil)); err == nil {
		t.Error("polling kind 6 accepted")
	}
	o, n, err := ReadOptPartition([]byte{0, 7, 0, 0, 0})
	if err != nil || n != 5 || o.Present || o.ID != 0 {
		t.Fatalf("absent partition %+v %v", o, err)
	}
	if _, _, err := ReadOptPartition([]byte{2, 0, 0, 0, 0}); err == nil {
		t.Error("partition flag 2 accepted")
	}
	id, n, err := ReadIdentifier(NumericID(3).Append(nil))
	if err != nil || n != 6 || id.Numeric != 3 || id.String() != "#3" || NamedID("x").String() != `"x"` {
		t.Fatalf("identifier %+v %v", id, err)
	}
	if _, _, err := ReadConsumer([]byte{3, 1, 4, 0, 0, 0, 0}); err == nil {
		t.Error("consumer kind 3 accepted")
	}
}

func TestErrorStrings(t *testing.T) {
	for _, s := range []string{
		(&FrameSizeError{Size: 1, Limit: 2}).Error(), (&HeaderError{Field: "f", Reason: "r"}).Error(),
		(&ResultError{Reason: "r"}).Error(), (&OptionError{Code: ErrInvalidOptionValue, Key: "k", Reason: "r"}).Error(),
		CommandRequest.String(), Command(99).String(), OpCreateStream.String(), Operation(99).String(),
		ClassMetadata.String(), UserActive.String(), KindUint64.String(), ValueKind(40).String(), Uint128{Lo: 1}.String(),
	} {
		if s == "" || strings.Contains(s, "%!") {
			t.Errorf("bad rendering %q", s)
		}
	}
	if !CodeGetStream.Known() || CommandCode(7).Known() || CommandCode(7).String() != "CommandCode(7)" {
		t.Error("code names")
	}
	opts := Options{OptionUint32("a", 1)}
	if _, ok := opts.Get("a"); !ok || opts.Validate() != nil || (Options{OptionString("", "v")}).Validate() == nil {
		t.Error("options helpers")
	}
	if !bytes.Equal(opts.Append(nil), TLVPair{KeyKind: KindString, Key: []byte("a"), ValueKind: KindUint32, Value: []byte{1, 0, 0, 0}}.Append(nil)) {
		t.Error("options append")
	}
}
