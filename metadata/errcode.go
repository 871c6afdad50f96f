package metadata

// Result codes used by Apply and the login checks. The numbers are the
// Iggy error codes of wire-protocol.md §6 (shared numeric space with the
// wire package's table); 0 means success.
const (
	CodeOK                   uint32 = 0
	CodeError                uint32 = 1
	CodeInvalidCommand       uint32 = 3
	CodeFeatureUnavailable   uint32 = 5
	CodeResourceNotFound     uint32 = 20 // also "user not found"
	CodeUnauthenticated      uint32 = 40
	CodeUnauthorized         uint32 = 41
	CodeInvalidCredentials   uint32 = 42
	CodeInvalidUsername      uint32 = 43
	CodeInvalidPassword      uint32 = 44
	CodeInvalidUserStatus    uint32 = 45
	CodeUserAlreadyExists    uint32 = 46
	CodeUserInactive         uint32 = 47
	CodeCannotDeleteUser     uint32 = 48
	CodeCannotChangePerms    uint32 = 49
	CodeInvalidPATName       uint32 = 50
	CodePATAlreadyExists     uint32 = 51
	CodePATLimitReached      uint32 = 52
	CodeInvalidPAT           uint32 = 53
	CodePATExpired           uint32 = 54
	CodeUsersLimitReached    uint32 = 55
	CodeInvalidPATExpiry     uint32 = 56
	CodeStreamIDNotFound     uint32 = 1009
	CodeStreamNameNotFound   uint32 = 1010
	CodeStreamNameExists     uint32 = 1012
	CodeInvalidStreamName    uint32 = 1013
	CodeTooManyStreams       uint32 = 1020
	CodeTopicIDNotFound      uint32 = 2010
	CodeTopicNameNotFound    uint32 = 2011
	CodeTopicNameExists      uint32 = 2013
	CodeInvalidTopicName     uint32 = 2014
	CodeTooManyPartitions    uint32 = 2015
	CodeInvalidPartitions    uint32 = 2019
	CodeTooManyTopics        uint32 = 2021
	CodePartitionNotFound    uint32 = 3007
	CodePartitionIDExhausted uint32 = 3013
	CodeInvalidOptionValue   uint32 = 4042
	CodeGroupIDNotFound      uint32 = 5000
	CodeGroupNameExists      uint32 = 5004
	CodeInvalidGroupName     uint32 = 5005
	CodeGroupMemberNotFound  uint32 = 5006
)

// Bounds of the state. Exceeding one is a committed rejection with the
// matching code, never a panic.
const (
	StreamsMax            = 1 << 20   // CodeTooManyStreams
	TopicsPerStreamMax    = 4096      // CodeTooManyTopics
	PartitionsPerTopicMax = 1_000_000 // CodePartitionIDExhausted
	PartitionsPerOpMax    = 1000      // CodeInvalidPartitions
	UsersMax              = 65_536    // CodeUsersLimitReached
	PATsPerUserMax        = 100       // CodePATLimitReached
	GroupsPerTopicMax     = 65_536    // live groups per topic; beyond it CodeError
	MembersPerGroupMax    = 65_536    // joins beyond it are rejected with CodeError
	NameBytesMax          = 255
	UsernameBytesMin      = 3
	UsernameBytesMax      = 50
	PasswordBytesMin      = 3
	PasswordBytesMax      = 100
	PATNameBytesMin       = 3
	PATNameBytesMax       = 30
	PasswordHashBytesMax  = 1024
	PATHashHexBytes       = 64 // SHA-256 hex
)
