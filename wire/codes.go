package wire

import "fmt"

// CommandCode is the Iggy command code (wire-protocol.md §3.2). It travels in request header bytes
// 196..199 only when the operation is NonReplicated; for every other operation the operation byte alone
// identifies the command.
type CommandCode uint32

// Command codes of protocol 0.11.
const (
	CodePing                         CommandCode = 1
	CodeGetStats                     CommandCode = 10
	CodeGetSnapshotFile              CommandCode = 11
	CodeGetClusterMetadata           CommandCode = 12
	CodeDescribeOptions              CommandCode = 13
	CodeGetMe                        CommandCode = 20
	CodeGetClient                    CommandCode = 21
	CodeGetClients                   CommandCode = 22
	CodeGetUser                      CommandCode = 31
	CodeGetUsers                     CommandCode = 32
	CodeCreateUser                   CommandCode = 33
	CodeDeleteUser                   CommandCode = 34
	CodeUpdateUser                   CommandCode = 35
	CodeUpdatePermissions            CommandCode = 36
	CodeChangePassword               CommandCode = 37
	CodeLoginUser                    CommandCode = 38 // legacy: answered with Eviction 15
	CodeLogoutUser                   CommandCode = 39
	CodeLoginRegister                CommandCode = 40
	CodeGetPersonalAccessTokens      CommandCode = 41
	CodeCreatePersonalAccessToken    CommandCode = 42
	CodeDeletePersonalAccessToken    CommandCode = 43
	CodeLoginWithPersonalAccessToken CommandCode = 44 // legacy: answered with Eviction 15
	CodeLoginRegisterWithPat         CommandCode = 45
	CodePollMessages                 CommandCode = 100
	CodeSendMessages                 CommandCode = 101
	CodeFlushUnsavedBuffer           CommandCode = 102
	CodeGetConsumerOffset            CommandCode = 120
	CodeStoreConsumerOffset          CommandCode = 121
	CodeDeleteConsumerOffset         CommandCode = 122
	CodeGetStream                    CommandCode = 200
	CodeGetStreams                   CommandCode = 201
	CodeCreateStream                 CommandCode = 202
	CodeDeleteStream                 CommandCode = 203
	CodeUpdateStream                 CommandCode = 204
	CodePurgeStream                  CommandCode = 205
	CodeGetTopic                     CommandCode = 300
	CodeGetTopics                    CommandCode = 301
	CodeCreateTopic                  CommandCode = 302
	CodeDeleteTopic                  CommandCode = 303
	CodeUpdateTopic                  CommandCode = 304
	CodePurgeTopic                   CommandCode = 305
	CodeCreatePartitions             CommandCode = 402
	CodeDeletePartitions             CommandCode = 403
	CodeDeleteSegments               CommandCode = 503
	CodeGetConsumerGroup             CommandCode = 600
	CodeGetConsumerGroups            CommandCode = 601
	CodeCreateConsumerGroup          CommandCode = 602
	CodeDeleteConsumerGroup          CommandCode = 603
	CodeJoinConsumerGroup            CommandCode = 604
	CodeLeaveConsumerGroup           CommandCode = 605
	CodeSyncConsumerGroup            CommandCode = 606
)

// CommandInfo describes one command code.
type CommandInfo struct {
	Code CommandCode
	Name string
	// Operation the client stamps in the header: OpNonReplicated for reads and local commands.
	Operation Operation
	// PreAuth: allowed on a connection with no bound session (Ping only; Register ops bind one).
	PreAuth bool
	// Legacy login codes 38/44: the server answers them with Eviction 15 MalformedLogin.
	Legacy bool
	// NotFound is the error code an "empty body" OK reply stands for (§3.2 last paragraph), or OK when an
	// empty reply is a valid answer (lists) or the command never answers empty.
	NotFound ErrorCode
}

var commandTable = map[CommandCode]CommandInfo{}

func init() {
	for _, c := range []CommandInfo{
		{CodePing, "Ping", OpNonReplicated, true, false, OK},
		{CodeGetStats, "GetStats", OpNonReplicated, false, false, OK},
		{CodeGetSnapshotFile, "GetSnapshotFile", OpNonReplicated, false, false, OK},
		{CodeGetClusterMetadata, "GetClusterMetadata", OpNonReplicated, false, false, OK},
		{CodeDescribeOptions, "DescribeOptions", OpNonReplicated, false, false, OK},
		{CodeGetMe, "GetMe", OpNonReplicated, false, false, OK},
		{CodeGetClient, "GetClient", OpNonReplicated, false, false, ErrClientNotFound},
		{CodeGetClients, "GetClients", OpNonReplicated, false, false, OK},
		{CodeGetUser, "GetUser", OpNonReplicated, false, false, ErrResourceNotFound},
		{CodeGetUsers, "GetUsers", OpNonReplicated, false, false, OK},
		{CodeCreateUser, "CreateUser", OpCreateUser, false, false, OK},
		{CodeDeleteUser, "DeleteUser", OpDeleteUser, false, false, OK},
		{CodeUpdateUser, "UpdateUser", OpUpdateUser, false, false, OK},
		{CodeUpdatePermissions, "UpdatePermissions", OpUpdatePermissions, false, false, OK},
		{CodeChangePassword, "ChangePassword", OpChangePassword, false, false, OK},
		{CodeLoginUser, "LoginUser", OpNonReplicated, false, true, OK},
		{CodeLogoutUser, "LogoutUser", OpLogout, false, false, OK},
		{CodeLoginRegister, "LoginRegister", OpRegister, true, false, OK},
		{CodeGetPersonalAccessTokens, "GetPersonalAccessTokens", OpNonReplicated, false, false, OK},
		{CodeCreatePersonalAccessToken, "CreatePersonalAccessToken", OpCreatePersonalAccessToken, false, false, OK},
		{CodeDeletePersonalAccessToken, "DeletePersonalAccessToken", OpDeletePersonalAccessToken, false, false, OK},
		{CodeLoginWithPersonalAccessToken, "LoginWithPersonalAccessToken", OpNonReplicated, false, true, OK},
		{CodeLoginRegisterWithPat, "LoginRegisterWithPat", OpRegister, true, false, OK},
		{CodePollMessages, "PollMessages", OpNonReplicated, false, false, OK},
		{CodeSendMessages, "SendMessages", OpSendMessages, false, false, OK},
		{CodeFlushUnsavedBuffer, "FlushUnsavedBuffer", OpNonReplicated, false, false, OK},
		{CodeGetConsumerOffset, "GetConsumerOffset", OpNonReplicated, false, false, OK},
		{CodeStoreConsumerOffset, "StoreConsumerOffset", OpStoreConsumerOffset, false, false, OK},
		{CodeDeleteConsumerOffset, "DeleteConsumerOffset", OpDeleteConsumerOffset, false, false, OK},
		{CodeGetStream, "GetStream", OpNonReplicated, false, false, ErrStreamIDNotFound},
		{CodeGetStreams, "GetStreams", OpNonReplicated, false, false, OK},
		{CodeCreateStream, "CreateStream", OpCreateStream, false, false, OK},
		{CodeDeleteStream, "DeleteStream", OpDeleteStream, false, false, OK},
		{CodeUpdateStream, "UpdateStream", OpUpdateStream, false, false, OK},
		{CodePurgeStream, "PurgeStream", OpPurgeStream, false, false, OK},
		{CodeGetTopic, "GetTopic", OpNonReplicated, false, false, ErrTopicIDNotFound},
		{CodeGetTopics, "GetTopics", OpNonReplicated, false, false, OK},
		{CodeCreateTopic, "CreateTopic", OpCreateTopic, false, false, OK},
		{CodeDeleteTopic, "DeleteTopic", OpDeleteTopic, false, false, OK},
		{CodeUpdateTopic, "UpdateTopic", OpUpdateTopic, false, false, OK},
		{CodePurgeTopic, "PurgeTopic", OpPurgeTopic, false, false, OK},
		{CodeCreatePartitions, "CreatePartitions", OpCreatePartitions, false, false, OK},
		{CodeDeletePartitions, "DeletePartitions", OpDeletePartitions, false, false, OK},
		{CodeDeleteSegments, "DeleteSegments", OpDeleteSegments, false, false, OK},
		{CodeGetConsumerGroup, "GetConsumerGroup", OpNonReplicated, false, false, ErrConsumerGroupIDNotFound},
		{CodeGetConsumerGroups, "GetConsumerGroups", OpNonReplicated, false, false, OK},
		{CodeCreateConsumerGroup, "CreateConsumerGroup", OpCreateConsumerGroup, false, false, OK},
		{CodeDeleteConsumerGroup, "DeleteConsumerGroup", OpDeleteConsumerGroup, false, false, OK},
		{CodeJoinConsumerGroup, "JoinConsumerGroup", OpJoinConsumerGroup, false, false, OK},
		{CodeLeaveConsumerGroup, "LeaveConsumerGroup", OpLeaveConsumerGroup, false, false, OK},
		{CodeSyncConsumerGroup, "SyncConsumerGroup", OpNonReplicated, false, false, ErrConsumerGroupMemberNotFound},
	} {
		commandTable[c.Code] = c
		if c.Operation != OpNonReplicated && c.Operation != OpRegister {
			operationToCode[c.Operation] = c.Code
		}
	}
}

// operationToCode maps each replicated operation (except Register, shared by codes 40 and 45) to its code.
var operationToCode = map[Operation]CommandCode{}

// Info returns the description of a known command code.
func (c CommandCode) Info() (CommandInfo, bool) {
	info, ok := commandTable[c]
	return info, ok
}

// Known reports whether c is a command code of protocol 0.11.
func (c CommandCode) Known() bool {
	_, ok := commandTable[c]
	return ok
}

// Operation returns the header operation a client stamps for c, and false for an unknown code.
// Unknown codes are sent as NonReplicated by the SDKs, which is what a caller should do with them too.
func (c CommandCode) Operation() (Operation, bool) {
	info, ok := commandTable[c]
	if !ok {
		return OpNonReplicated, false
	}
	return info.Operation, true
}

// String returns the command's name, or "CommandCode(n)" for an unknown code.
func (c CommandCode) String() string {
	if info, ok := commandTable[c]; ok {
		return info.Name
	}
	return fmt.Sprintf("CommandCode(%d)", uint32(c))
}

// CodeForOperation returns the command code of a replicated client operation (metadata, partition,
// Logout). Register and NonReplicated map to several codes and return false, as do internal operations.
func CodeForOperation(op Operation) (CommandCode, bool) {
	c, ok := operationToCode[op]
	return c, ok
}

// PreAuthAllowed reports whether a NonReplicated request with code c may run on a connection with no bound
// session. Only Ping may; the server answers anything else with status Unauthenticated (40).
func PreAuthAllowed(c CommandCode) bool {
	return c == CodePing
}

// ReplicatedSentAsNonReplicated reports whether c is a replicated command that a client sent with the
// NonReplicated operation; the server answers those with status FeatureUnavailable (5).
func ReplicatedSentAsNonReplicated(c CommandCode) bool {
	info, ok := commandTable[c]
	return ok && info.Operation != OpNonReplicated
}
