package wire

import "fmt"

// Operation is the header's operation byte (request offset 176, reply offset 208), wire-protocol.md §3.1.
type Operation uint8

// Operations declared by protocol 0.11. Bands: internal 64–127, metadata 128–159, partition ≥ 160.
const (
	OpReserved                        Operation = 0
	OpRegister                        Operation = 1
	OpNonReplicated                   Operation = 2
	OpLogout                          Operation = 3
	OpCreateTopicWithAssignments      Operation = 64
	OpCreatePartitionsWithAssignments Operation = 65
	OpRemoveConsumerGroupMember       Operation = 66
	OpCompleteConsumerGroupRevocation Operation = 67
	OpTruncatePartition               Operation = 68
	OpCreateStream                    Operation = 128
	OpUpdateStream                    Operation = 129
	OpDeleteStream                    Operation = 130
	OpPurgeStream                     Operation = 131
	OpCreateTopic                     Operation = 132
	OpUpdateTopic                     Operation = 133
	OpDeleteTopic                     Operation = 134
	OpPurgeTopic                      Operation = 135
	OpCreatePartitions                Operation = 136
	OpDeletePartitions                Operation = 137
	OpDeleteSegments                  Operation = 138
	OpCreateConsumerGroup             Operation = 139
	OpDeleteConsumerGroup             Operation = 140
	OpCreateUser                      Operation = 141
	OpUpdateUser                      Operation = 142
	OpDeleteUser                      Operation = 143
	OpChangePassword                  Operation = 144
	OpUpdatePermissions               Operation = 145
	OpCreatePersonalAccessToken       Operation = 146
	OpDeletePersonalAccessToken       Operation = 147
	OpJoinConsumerGroup               Operation = 148
	OpLeaveConsumerGroup              Operation = 149
	OpSendMessages                    Operation = 160
	OpStoreConsumerOffset             Operation = 161
	OpDeleteConsumerOffset            Operation = 162
)

var operationNames = map[Operation]string{
	OpReserved:                        "Reserved",
	OpRegister:                        "Register",
	OpNonReplicated:                   "NonReplicated",
	OpLogout:                          "Logout",
	OpCreateTopicWithAssignments:      "CreateTopicWithAssignments",
	OpCreatePartitionsWithAssignments: "CreatePartitionsWithAssignments",
	OpRemoveConsumerGroupMember:       "RemoveConsumerGroupMember",
	OpCompleteConsumerGroupRevocation: "CompleteConsumerGroupRevocation",
	OpTruncatePartition:               "TruncatePartition",
	OpCreateStream:                    "CreateStream",
	OpUpdateStream:                    "UpdateStream",
	OpDeleteStream:                    "DeleteStream",
	OpPurgeStream:                     "PurgeStream",
	OpCreateTopic:                     "CreateTopic",
	OpUpdateTopic:                     "UpdateTopic",
	OpDeleteTopic:                     "DeleteTopic",
	OpPurgeTopic:                      "PurgeTopic",
	OpCreatePartitions:                "CreatePartitions",
	OpDeletePartitions:                "DeletePartitions",
	OpDeleteSegments:                  "DeleteSegments",
	OpCreateConsumerGroup:             "CreateConsumerGroup",
	OpDeleteConsumerGroup:             "DeleteConsumerGroup",
	OpCreateUser:                      "CreateUser",
	OpUpdateUser:                      "UpdateUser",
	OpDeleteUser:                      "DeleteUser",
	OpChangePassword:                  "ChangePassword",
	OpUpdatePermissions:               "UpdatePermissions",
	OpCreatePersonalAccessToken:       "CreatePersonalAccessToken",
	OpDeletePersonalAccessToken:       "DeletePersonalAccessToken",
	OpJoinConsumerGroup:               "JoinConsumerGroup",
	OpLeaveConsumerGroup:              "LeaveConsumerGroup",
	OpSendMessages:                    "SendMessages",
	OpStoreConsumerOffset:             "StoreConsumerOffset",
	OpDeleteConsumerOffset:            "DeleteConsumerOffset",
}

// String returns the operation's name, or "Operation(n)" for an undeclared value.
func (o Operation) String() string {
	if name, ok := operationNames[o]; ok {
		return name
	}
	return fmt.Sprintf("Operation(%d)", uint8(o))
}

// Declared reports whether o is one of the operation values protocol 0.11 declares (Reserved included).
func (o Operation) Declared() bool {
	_, ok := operationNames[o]
	return ok
}

// OpClass groups operations by how a client stamps them and how a server routes them (§2.2, §3.1).
type OpClass uint8

const (
	ClassInvalid       OpClass = iota // Reserved or undeclared
	ClassRegister                     // session bind: request 0, session 0
	ClassLogout                       // session release: consumes the request counter
	ClassMetadata                     // metadata-plane replicated: consumes the request counter
	ClassPartition                    // partition-plane replicated: counter not consumed
	ClassNonReplicated                // reads and local commands: code in reserved[0..4]
	ClassInternal                     // server-internal (64–127): never sent by clients
)

var opClassNames = [...]string{"Invalid", "Register", "Logout", "Metadata", "Partition", "NonReplicated", "Internal"}

func (c OpClass) String() string {
	if int(c) < len(opClassNames) {
		return opClassNames[c]
	}
	return fmt.Sprintf("OpClass(%d)", uint8(c))
}

// Class returns the operation's class. DeleteSegments (138) is ClassMetadata: it is numbered on the
// metadata request sequence even though the owning shard executes it.
func (o Operation) Class() OpClass {
	switch {
	case !o.Declared() || o == OpReserved:
		return ClassInvalid
	case o == OpRegister:
		return ClassRegister
	case o == OpLogout:
		return ClassLogout
	case o == OpNonReplicated:
		return ClassNonReplicated
	case o >= 64 && o < 128:
		return ClassInternal
	case o >= 128 && o < 160:
		return ClassMetadata
	default:
		return ClassPartition
	}
}

// ClientSendable reports whether a client may put o in a request header.
func (o Operation) ClientSendable() bool {
	c := o.Class()
	return c != ClassInvalid && c != ClassInternal
}

// ConsumesRequestID reports whether stamping a request with o advances the client's request counter
// (Logout and metadata-plane operations do; Register, partition and non-replicated ones don't).
func (o Operation) ConsumesRequestID() bool {
	c := o.Class()
	return c == ClassLogout || c == ClassMetadata
}

// ReplyOperation is the operation the server writes in the reply to a request with operation o:
// the echo, except DeleteSegments which is committed and answered as TruncatePartition (68).
func (o Operation) ReplyOperation() Operation {
	if o == OpDeleteSegments {
		return OpTruncatePartition
	}
	return o
}

// ResultFramed reports whether an OK reply carrying operation o starts with a result section (§2.8):
// every internal and metadata operation except 138, StoreConsumerOffset, DeleteConsumerOffset, and
// Register when its body is non-empty. NonReplicated, Logout and SendMessages replies are not framed.
func (o Operation) ResultFramed(bodyLen int) bool {
	switch {
	case o == OpRegister:
		return bodyLen > 0
	case o == OpDeleteSegments:
		return false
	case o == OpStoreConsumerOffset, o == OpDeleteConsumerOffset:
		return true
	}
	c := o.Class()
	return c == ClassInternal || c == ClassMetadata
}
