package wire

import (
	"errors"
	"fmt"
	"testing"
)

func TestOperationClasses(t *testing.T) {
	want := map[Operation]OpClass{
		0: ClassInvalid, 1: ClassRegister, 2: ClassNonReplicated, 3: ClassLogout, 4: ClassInvalid,
		64: ClassInternal, 68: ClassInternal, 69: ClassInvalid, 127: ClassInvalid,
		128: ClassMetadata, 138: ClassMetadata, 149: ClassMetadata, 150: ClassInvalid,
		160: ClassPartition, 161: ClassPartition, 162: ClassPartition, 163: ClassInvalid, 255: ClassInvalid,
	}
	for op, class := range want {
		if got := op.Class(); got != class {
			t.Errorf("%s class %s, want %s", op, got, class)
		}
	}
	for op, consumes := range map[Operation]bool{1: false, 2: false, 3: true, 128: true, 138: true, 160: false, 161: false} {
		if op.ConsumesRequestID() != consumes {
			t.Errorf("%s ConsumesRequestID = %v", op, !consumes)
		}
	}
}

// §2.8: result-framed reply operations.
func TestResultFramedOperations(t *testing.T) {
	for op := 0; op < 256; op++ {
		o := Operation(op)
		want := false
		switch {
		case o == OpRegister:
			want = true // when the body is non-empty
		case op >= 64 && op <= 68, op >= 128 && op <= 149 && op != 138, op == 161, op == 162:
			want = true
		}
		if got := o.ResultFramed(1); got != want {
			t.Errorf("%s ResultFramed = %v, want %v", o, got, want)
		}
	}
	if OpRegister.ResultFramed(0) {
		t.Error("empty Register reply must not be framed")
	}
}

// §3.2: the code → operation table.
func TestCommandTable(t *testing.T) {
	replicated := map[CommandCode]Operation{
		33: 141, 34: 143, 35: 142, 36: 145, 37: 144, 39: 3, 40: 1, 42: 146, 43: 147, 45: 1, 101: 160,
		121: 161, 122: 162, 202: 128, 203: 130, 204: 129, 205: 131, 302: 132, 303: 134, 304: 133, 305: 135,
		402: 136, 403: 137, 503: 138, 602: 139, 603: 140, 604: 148, 605: 149,
	}
	nonReplicated := []CommandCode{1, 10, 11, 12, 13, 20, 21, 22, 31, 32, 38, 41, 44, 100, 102, 120, 200, 201, 300, 301, 600, 601, 606}
	if got, want := len(commandTable), len(replicated)+len(nonReplicated); got != want {
		t.Fatalf("table has %d codes, want %d", got, want)
	}
	for code, op := range replicated {
		if got, ok := code.Operation(); !ok || got != op {
			t.Errorf("code %d → %s, want %s", code, got, op)
		}
		if op != OpRegister {
			if back, ok := CodeForOperation(op); !ok || back != code {
				t.Errorf("operation %s → code %d, want %d", op, back, code)
			}
		}
		if !ReplicatedSentAsNonReplicated(code) {
			t.Errorf("code %d not flagged as replicated", code)
		}
	}
	for _, code := range nonReplicated {
		if got, ok := code.Operation(); !ok || got != OpNonReplicated {
			t.Errorf("code %d → %s, want NonReplicated", code, got)
		}
		if PreAuthAllowed(code) != (code == CodePing) {
			t.Errorf("code %d pre-auth = %v", code, PreAuthAllowed(code))
		}
	}
	if op, ok := CommandCode(9999).Operation(); ok || op != OpNonReplicated {
		t.Error("unknown code must be reported unknown and sent as NonReplicated")
	}
	for code, nf := range map[CommandCode]ErrorCode{200: 1009, 300: 2010, 31: 20, 600: 5000, 606: 5006, 120: OK} {
		if info, _ := code.Info(); info.NotFound != nf {
			t.Errorf("code %d empty reply maps to %s, want %s", code, info.NotFound, nf)
		}
	}
	if info, _ := CodeLoginUser.Info(); !info.Legacy {
		t.Error("38 must be legacy")
	}
}

// Every code of wire-protocol.md §6 exists under its name.
func TestErrorCodesOfSpec(t *testing.T) {
	spec := map[uint32]string{
		1: "Error", 3: "InvalidCommand", 4: "InvalidFormat", 5: "FeatureUnavailable", 8: "Disconnected",
		20: "ResourceNotFound", 30: "StaleClient", 40: "Unauthenticated", 41: "Unauthorized", 42: "InvalidCredentials",
		43: "InvalidUsername", 46: "UserAlreadyExists", 48: "CannotDeleteUser", 49: "CannotChangePermissions",
		51: "PersonalAccessTokenAlreadyExists", 52: "PersonalAccessTokensLimitReached", 53: "InvalidPersonalAccessToken",
		56: "InvalidPersonalAccessTokenExpiry", 57: "TransientNotCommitted", 58: "TransientNotAccepted",
		59: "RequestAlreadyApplied", 61: "NotConnected", 84: "InvalidNumberValue", 100: "ClientNotFound", 101: "InvalidClientId",
		206: "ConnectionClosed", 304: "EmptyResponse", 1009: "StreamIdNotFound", 1010: "StreamNameNotFound",
		1012: "StreamNameAlreadyExists", 1013: "InvalidStreamName", 1014: "InvalidStreamId", 1019: "InvalidTopicSize",
		1020: "TooManyStreams", 2010: "TopicIdNotFound", 2011: "TopicNameNotFound", 2013: "TopicNameAlreadyExists",
		2014: "InvalidTopicName", 2015: "TooManyPartitions", 2016: "InvalidTopicId", 2019: "InvalidPartitionsCount",
		2021: "TooManyTopics", 3007: "PartitionNotFound", 3008: "NoPartitions", 3013: "PartitionIdSpaceExhausted",
		3021: "ConsumerOffsetNotFound", 4009: "InvalidMessagesCount", 4017: "TooBigUserHeaders", 4022: "TooBigMessagePayload",
		4024: "EmptyMessagePayload", 4025: "InvalidMessagePayloadLength", 4027: "InvalidMessageChecksum",
		4028: "InvalidKeyValueLength", 4038: "InvalidMessageTimestampDelta", 4039: "InvalidBatchChecksum",
		4040: "InvalidHeaderKind", 4041: "UnsupportedOptionKey", 4042: "InvalidOptionValue", 4043: "OptionsBlockTooLarge",
		4100: "InvalidOffset", 4101: "InvalidReservedField", 5000: "ConsumerGroupIdNotFound", 5002: "InvalidConsumerGroupId",
		5003: "ConsumerGroupNameNotFound", 5004: "ConsumerGroupNameAlreadyExists", 5005: "InvalidConsumerGroupName",
		5006: "ConsumerGroupMemberNotFound", 5009: "ConsumerGroupPartitionNotOwned", 9000: "SnapshotFileCompletionFailed",
		14000: "AlreadyAuthenticated", 14001: "InvalidSession", 14003: "IncompatibleProtocolVersion",
	}
	for code, name := range spec {
		if got := ErrorCode(code).Name(); got != name {
			t.Errorf("code %d name %q, want %q", code, got, name)
		}
	}
	for _, missing := range []uint32{17, 18, 22, 38, 39, 60, 62, 68, 69, 85, 99, 102} {
		if ErrorCode(missing).Known() {
			t.Errorf("code %d must not exist", missing)
		}
	}
	if len(errorCodeNames) != 237 {
		t.Errorf("%d codes, want 237", len(errorCodeNames))
	}
	err := fmt.Errorf("wrapped: %w", ErrStreamIDNotFound)
	if !errors.Is(err, ErrStreamIDNotFound) || errors.Is(err, ErrTopicIDNotFound) {
		t.Error("errors.Is on ErrorCode")
	}
	if ErrStreamIDNotFound.Error() != "iggy error StreamIdNotFound(1009)" || ErrorCode(12345).String() != "UnknownError(12345)" {
		t.Errorf("rendering: %q %q", ErrStreamIDNotFound.Error(), ErrorCode(12345).String())
	}
}
