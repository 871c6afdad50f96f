// Code generated from the error-code table of wire-protocol.md §6 (the shared Iggy numeric space). DO NOT EDIT.

package wire

// Every error code of the shared Iggy numeric space. The names are the upstream names, so a code can be
// matched against SDK output by name as well as by number.
const (
	ErrError                                      ErrorCode = 1
	ErrInvalidConfiguration                       ErrorCode = 2
	ErrInvalidCommand                             ErrorCode = 3
	ErrInvalidFormat                              ErrorCode = 4
	ErrFeatureUnavailable                         ErrorCode = 5
	ErrInvalidIdentifier                          ErrorCode = 6
	ErrInvalidVersion                             ErrorCode = 7
	ErrDisconnected                               ErrorCode = 8
	ErrCannotEstablishConnection                  ErrorCode = 9
	ErrCannotCreateBaseDirectory                  ErrorCode = 10
	ErrCannotCreateRuntimeDirectory               ErrorCode = 11
	ErrCannotRemoveRuntimeDirectory               ErrorCode = 12
	ErrCannotCreateStateDirectory                 ErrorCode = 13
	ErrStateFileNotFound                          ErrorCode = 14
	ErrStateFileCorrupted                         ErrorCode = 15
	ErrInvalidStateEntryChecksum                  ErrorCode = 16
	ErrCannotOpenDatabase                         ErrorCode = 19
	ErrResourceNotFound                           ErrorCode = 20
	ErrCannotCloseWebSocketConnection             ErrorCode = 21
	ErrStaleClient                                ErrorCode = 30
	ErrTcpError                                   ErrorCode = 31
	ErrQuicError                                  ErrorCode = 32
	ErrInvalidServerAddress                       ErrorCode = 33
	ErrInvalidClientAddress                       ErrorCode = 34
	ErrInvalidIpAddress                           ErrorCode = 35
	ErrHttpError                                  ErrorCode = 36
	ErrInvalidApiUrl                              ErrorCode = 37
	ErrUnauthenticated                            ErrorCode = 40
	ErrUnauthorized                               ErrorCode = 41
	ErrInvalidCredentials                         ErrorCode = 42
	ErrInvalidUsername                            ErrorCode = 43
	ErrInvalidPassword                            ErrorCode = 44
	ErrInvalidUserStatus                          ErrorCode = 45
	ErrUserAlreadyExists                          ErrorCode = 46
	ErrUserInactive                               ErrorCode = 47
	ErrCannotDeleteUser                           ErrorCode = 48
	ErrCannotChangePermissions                    ErrorCode = 49
	ErrInvalidPersonalAccessTokenName             ErrorCode = 50
	ErrPersonalAccessTokenAlreadyExists           ErrorCode = 51
	ErrPersonalAccessTokensLimitReached           ErrorCode = 52
	ErrInvalidPersonalAccessToken                 ErrorCode = 53
	ErrPersonalAccessTokenExpired                 ErrorCode = 54
	ErrUsersLimitReached                          ErrorCode = 55
	ErrInvalidPersonalAccessTokenExpiry           ErrorCode = 56
	ErrTransientNotCommitted                      ErrorCode = 57
	ErrTransientNotAccepted                       ErrorCode = 58
	ErrRequestAlreadyApplied                      ErrorCode = 59
	ErrNotConnected                               ErrorCode = 61
	ErrClientShutdown                             ErrorCode = 63
	ErrInvalidTlsDomain                           ErrorCode = 64
	ErrInvalidTlsCertificatePath                  ErrorCode = 65
	ErrInvalidTlsCertificate                      ErrorCode = 66
	ErrFailedToAddCertificate                     ErrorCode = 67
	ErrInvalidEncryptionKey                       ErrorCode = 70
	ErrCannotEncryptData                          ErrorCode = 71
	ErrCannotDecryptData                          ErrorCode = 72
	ErrInvalidJwtAlgorithm                        ErrorCode = 73
	ErrInvalidJwtSecret                           ErrorCode = 74
	ErrJwtMissing                                 ErrorCode = 75
	ErrCannotGenerateJwt                          ErrorCode = 76
	ErrAccessTokenMissing                         ErrorCode = 77
	ErrInvalidAccessToken                         ErrorCode = 78
	ErrCannotFetchJwks                            ErrorCode = 79
	ErrInvalidSizeBytes                           ErrorCode = 80
	ErrInvalidUtf8                                ErrorCode = 81
	ErrInvalidNumberEncoding                      ErrorCode = 82
	ErrInvalidBooleanValue                        ErrorCode = 83
	ErrInvalidNumberValue                         ErrorCode = 84
	ErrClientNotFound                             ErrorCode = 100
	ErrInvalidClientID                            ErrorCode = 101
	ErrConnectionClosed                           ErrorCode = 206
	ErrCannotParseHeaderKind                      ErrorCode = 209
	ErrHttpResponseError                          ErrorCode = 300
	ErrInvalidHttpRequest                         ErrorCode = 301
	ErrInvalidJsonResponse                        ErrorCode = 302
	ErrInvalidBytesResponse                       ErrorCode = 303
	ErrEmptyResponse                              ErrorCode = 304
	ErrCannotCreateEndpoint                       ErrorCode = 305
	ErrCannotParseUrl                             ErrorCode = 306
	ErrWebSocketError                             ErrorCode = 400
	ErrWebSocketConnectionError                   ErrorCode = 401
	ErrWebSocketCloseError                        ErrorCode = 402
	ErrWebSocketReceiveError                      ErrorCode = 403
	ErrWebSocketSendError                         ErrorCode = 404
	ErrCannotCreateStreamsDirectory               ErrorCode = 1000
	ErrCannotCreateStreamDirectory                ErrorCode = 1001
	ErrCannotCreateStreamInfo                     ErrorCode = 1002
	ErrCannotUpdateStreamInfo                     ErrorCode = 1003
	ErrCannotOpenStreamInfo                       ErrorCode = 1004
	ErrCannotReadStreamInfo                       ErrorCode = 1005
	ErrCannotCreateStream                         ErrorCode = 1006
	ErrCannotDeleteStream                         ErrorCode = 1007
	ErrCannotDeleteStreamDirectory                ErrorCode = 1008
	ErrStreamIDNotFound                           ErrorCode = 1009
	ErrStreamNameNotFound                         ErrorCode = 1010
	ErrStreamDirectoryNotFound                    ErrorCode = 1011
	ErrStreamNameAlreadyExists                    ErrorCode = 1012
	ErrInvalidStreamName                          ErrorCode = 1013
	ErrInvalidStreamID                            ErrorCode = 1014
	ErrCannotReadStreams                          ErrorCode = 1015
	ErrInvalidTopicSize                           ErrorCode = 1019
	ErrTooManyStreams                             ErrorCode = 1020
	ErrCannotCreateTopicsDirectory                ErrorCode = 2000
	ErrCannotCreateTopicDirectory                 ErrorCode = 2001
	ErrCannotCreateTopicInfo                      ErrorCode = 2002
	ErrCannotUpdateTopicInfo                      ErrorCode = 2003
	ErrCannotOpenTopicInfo                        ErrorCode = 2004
	ErrCannotReadTopicInfo                        ErrorCode = 2005
	ErrCannotCreateTopic                          ErrorCode = 2006
	ErrCannotDeleteTopic                          ErrorCode = 2007
	ErrCannotDeleteTopicDirectory                 ErrorCode = 2008
	ErrCannotPollTopic                            ErrorCode = 2009
	ErrTopicIDNotFound                            ErrorCode = 2010
	ErrTopicNameNotFound                          ErrorCode = 2011
	ErrTopicNameAlreadyExists                     ErrorCode = 2013
	ErrInvalidTopicName                           ErrorCode = 2014
	ErrTooManyPartitions                          ErrorCode = 2015
	ErrInvalidTopicID                             ErrorCode = 2016
	ErrCannotReadTopics                           ErrorCode = 2017
	ErrInvalidReplicationFactor                   ErrorCode = 2018
	ErrInvalidPartitionsCount                     ErrorCode = 2019
	ErrTopicDirectoryNotFound                     ErrorCode = 2020
	ErrTooManyTopics                              ErrorCode = 2021
	ErrCannotCreatePartition                      ErrorCode = 3000
	ErrCannotCreatePartitionsDirectory            ErrorCode = 3001
	ErrCannotCreatePartitionDirectory             ErrorCode = 3002
	ErrCannotOpenPartitionLogFile                 ErrorCode = 3003
	ErrCannotReadPartitions                       ErrorCode = 3004
	ErrCannotDeletePartition                      ErrorCode = 3005
	ErrCannotDeletePartitionDirectory             ErrorCode = 3006
	ErrPartitionNotFound                          ErrorCode = 3007
	ErrNoPartitions                               ErrorCode = 3008
	ErrTopicFull                                  ErrorCode = 3009
	ErrCannotDeleteConsumerOffsetsDirectory       ErrorCode = 3010
	ErrCannotDeleteConsumerOffsetFile             ErrorCode = 3011
	ErrCannotCreateConsumerOffsetsDirectory       ErrorCode = 3012
	ErrPartitionIDSpaceExhausted                  ErrorCode = 3013
	ErrCannotReadConsumerOffsets                  ErrorCode = 3020
	ErrConsumerOffsetNotFound                     ErrorCode = 3021
	ErrNotResolvedConsumer                        ErrorCode = 3022
	ErrCannotOpenConsumerOffsetsFile              ErrorCode = 3023
	ErrSegmentNotFound                            ErrorCode = 4000
	ErrSegmentClosed                              ErrorCode = 4001
	ErrInvalidSegmentSize                         ErrorCode = 4002
	ErrCannotCreateSegmentLogFile                 ErrorCode = 4003
	ErrCannotCreateSegmentIndexFile               ErrorCode = 4004
	ErrCannotCreateSegmentTimeIndexFile           ErrorCode = 4005
	ErrCannotSaveMessagesToSegment                ErrorCode = 4006
	ErrCannotSaveIndexToSegment                   ErrorCode = 4007
	ErrCannotSaveTimeIndexToSegment               ErrorCode = 4008
	ErrInvalidMessagesCount                       ErrorCode = 4009
	ErrCannotAppendMessage                        ErrorCode = 4010
	ErrCannotReadMessage                          ErrorCode = 4011
	ErrCannotReadMessageID                        ErrorCode = 4012
	ErrCannotReadMessageState                     ErrorCode = 4013
	ErrCannotReadMessageTimestamp                 ErrorCode = 4014
	ErrCannotReadHeadersLength                    ErrorCode = 4015
	ErrCannotReadHeadersPayload                   ErrorCode = 4016
	ErrTooBigUserHeaders                          ErrorCode = 4017
	ErrInvalidHeaderKey                           ErrorCode = 4018
	ErrInvalidHeaderValue                         ErrorCode = 4019
	ErrCannotReadMessageLength                    ErrorCode = 4020
	ErrCannotReadMessagePayload                   ErrorCode = 4021
	ErrTooBigMessagePayload                       ErrorCode = 4022
	ErrTooManyMessages                            ErrorCode = 4023
	ErrEmptyMessagePayload                        ErrorCode = 4024
	ErrInvalidMessagePayloadLength                ErrorCode = 4025
	ErrCannotReadMessageChecksum                  ErrorCode = 4026
	ErrInvalidMessageChecksum                     ErrorCode = 4027
	ErrInvalidKeyValueLength                      ErrorCode = 4028
	ErrCommandLengthError                         ErrorCode = 4029
	ErrInvalidSegmentsCount                       ErrorCode = 4030
	ErrNonZeroOffset                              ErrorCode = 4031
	ErrNonZeroTimestamp                           ErrorCode = 4032
	ErrMissingIndex                               ErrorCode = 4033
	ErrInvalidIndexesByteSize                     ErrorCode = 4034
	ErrInvalidIndexesCount                        ErrorCode = 4035
	ErrInvalidMessagesSize                        ErrorCode = 4036
	ErrTooSmallMessage                            ErrorCode = 4037
	ErrInvalidMessageTimestampDelta               ErrorCode = 4038
	ErrInvalidBatchChecksum                       ErrorCode = 4039
	ErrInvalidHeaderKind                          ErrorCode = 4040
	ErrUnsupportedOptionKey                       ErrorCode = 4041
	ErrInvalidOptionValue                         ErrorCode = 4042
	ErrOptionsBlockTooLarge                       ErrorCode = 4043
	ErrCannotSendMessagesDueToClientDisconnection ErrorCode = 4050
	ErrBackgroundSendError                        ErrorCode = 4051
	ErrBackgroundSendTimeout                      ErrorCode = 4052
	ErrBackgroundSendBufferFull                   ErrorCode = 4053
	ErrBackgroundWorkerDisconnected               ErrorCode = 4054
	ErrBackgroundSendBufferOverflow               ErrorCode = 4055
	ErrProducerClosed                             ErrorCode = 4057
	ErrInvalidOffset                              ErrorCode = 4100
	ErrInvalidReservedField                       ErrorCode = 4101
	ErrConsumerGroupIDNotFound                    ErrorCode = 5000
	ErrInvalidConsumerGroupID                     ErrorCode = 5002
	ErrConsumerGroupNameNotFound                  ErrorCode = 5003
	ErrConsumerGroupNameAlreadyExists             ErrorCode = 5004
	ErrInvalidConsumerGroupName                   ErrorCode = 5005
	ErrConsumerGroupMemberNotFound                ErrorCode = 5006
	ErrCannotCreateConsumerGroupInfo              ErrorCode = 5007
	ErrCannotDeleteConsumerGroupInfo              ErrorCode = 5008
	ErrConsumerGroupPartitionNotOwned             ErrorCode = 5009
	ErrMissingBaseOffsetRetainedMessageBatch      ErrorCode = 6000
	ErrMissingLastOffsetDeltaRetainedMessageBatch ErrorCode = 6001
	ErrMissingMaxTimestampRetainedMessageBatch    ErrorCode = 6002
	ErrMissingLengthRetainedMessageBatch          ErrorCode = 6003
	ErrMissingPayloadRetainedMessageBatch         ErrorCode = 6004
	ErrCannotReadBatchBaseOffset                  ErrorCode = 7000
	ErrCannotReadBatchLength                      ErrorCode = 7001
	ErrCannotReadLastOffsetDelta                  ErrorCode = 7002
	ErrCannotReadMaxTimestamp                     ErrorCode = 7003
	ErrCannotReadBatchPayload                     ErrorCode = 7004
	ErrInvalidConnectionString                    ErrorCode = 8000
	ErrSnapshotFileCompletionFailed               ErrorCode = 9000
	ErrCannotSerializeResource                    ErrorCode = 10000
	ErrCannotDeserializeResource                  ErrorCode = 10001
	ErrCannotReadFile                             ErrorCode = 10002
	ErrCannotReadFileMetadata                     ErrorCode = 10003
	ErrCannotSeekFile                             ErrorCode = 10004
	ErrCannotAppendToFile                         ErrorCode = 10005
	ErrCannotWriteToFile                          ErrorCode = 10006
	ErrCannotOverwriteFile                        ErrorCode = 10007
	ErrCannotDeleteFile                           ErrorCode = 10008
	ErrCannotSyncFile                             ErrorCode = 10009
	ErrCannotReadIndexOffset                      ErrorCode = 10010
	ErrCannotReadIndexPosition                    ErrorCode = 10011
	ErrCannotReadIndexTimestamp                   ErrorCode = 10012
	ErrTimestampOutOfRange                        ErrorCode = 10013
	ErrShardNotFound                              ErrorCode = 11000
	ErrShardCommunicationError                    ErrorCode = 11001
	ErrCannotBindToSocket                         ErrorCode = 12000
	ErrTaskTimeout                                ErrorCode = 12001
	ErrIoError                                    ErrorCode = 13000
	ErrAlreadyAuthenticated                       ErrorCode = 14000
	ErrInvalidSession                             ErrorCode = 14001
	ErrIncompatibleProtocolVersion                ErrorCode = 14003
)

// errorCodeNames maps every known code to its upstream name.
var errorCodeNames = map[ErrorCode]string{
	ErrError:                                      "Error",
	ErrInvalidConfiguration:                       "InvalidConfiguration",
	ErrInvalidCommand:                             "InvalidCommand",
	ErrInvalidFormat:                              "InvalidFormat",
	ErrFeatureUnavailable:                         "FeatureUnavailable",
	ErrInvalidIdentifier:                          "InvalidIdentifier",
	ErrInvalidVersion:                             "InvalidVersion",
	ErrDisconnected:                               "Disconnected",
	ErrCannotEstablishConnection:                  "CannotEstablishConnection",
	ErrCannotCreateBaseDirectory:                  "CannotCreateBaseDirectory",
	ErrCannotCreateRuntimeDirectory:               "CannotCreateRuntimeDirectory",
	ErrCannotRemoveRuntimeDirectory:               "CannotRemoveRuntimeDirectory",
	ErrCannotCreateStateDirectory:                 "CannotCreateStateDirectory",
	ErrStateFileNotFound:                          "StateFileNotFound",
	ErrStateFileCorrupted:                         "StateFileCorrupted",
	ErrInvalidStateEntryChecksum:                  "InvalidStateEntryChecksum",
	ErrCannotOpenDatabase:                         "CannotOpenDatabase",
	ErrResourceNotFound:                           "ResourceNotFound",
	ErrCannotCloseWebSocketConnection:             "CannotCloseWebSocketConnection",
	ErrStaleClient:                                "StaleClient",
	ErrTcpError:                                   "TcpError",
	ErrQuicError:                                  "QuicError",
	ErrInvalidServerAddress:                       "InvalidServerAddress",
	ErrInvalidClientAddress:                       "InvalidClientAddress",
	ErrInvalidIpAddress:                           "InvalidIpAddress",
	ErrHttpError:                                  "HttpError",
	ErrInvalidApiUrl:                              "InvalidApiUrl",
	ErrUnauthenticated:                            "Unauthenticated",
	ErrUnauthorized:                               "Unauthorized",
	ErrInvalidCredentials:                         "InvalidCredentials",
	ErrInvalidUsername:                            "InvalidUsername",
	ErrInvalidPassword:                            "InvalidPassword",
	ErrInvalidUserStatus:                          "InvalidUserStatus",
	ErrUserAlreadyExists:                          "UserAlreadyExists",
	ErrUserInactive:                               "UserInactive",
	ErrCannotDeleteUser:                           "CannotDeleteUser",
	ErrCannotChangePermissions:                    "CannotChangePermissions",
	ErrInvalidPersonalAccessTokenName:             "InvalidPersonalAccessTokenName",
	ErrPersonalAccessTokenAlreadyExists:           "PersonalAccessTokenAlreadyExists",
	ErrPersonalAccessTokensLimitReached:           "PersonalAccessTokensLimitReached",
	ErrInvalidPersonalAccessToken:                 "InvalidPersonalAccessToken",
	ErrPersonalAccessTokenExpired:                 "PersonalAccessTokenExpired",
	ErrUsersLimitReached:                          "UsersLimitReached",
	ErrInvalidPersonalAccessTokenExpiry:           "InvalidPersonalAccessTokenExpiry",
	ErrTransientNotCommitted:                      "TransientNotCommitted",
	ErrTransientNotAccepted:                       "TransientNotAccepted",
	ErrRequestAlreadyApplied:                      "RequestAlreadyApplied",
	ErrNotConnected:                               "NotConnected",
	ErrClientShutdown:                             "ClientShutdown",
	ErrInvalidTlsDomain:                           "InvalidTlsDomain",
	ErrInvalidTlsCertificatePath:                  "InvalidTlsCertificatePath",
	ErrInvalidTlsCertificate:                      "InvalidTlsCertificate",
	ErrFailedToAddCertificate:                     "FailedToAddCertificate",
	ErrInvalidEncryptionKey:                       "InvalidEncryptionKey",
	ErrCannotEncryptData:                          "CannotEncryptData",
	ErrCannotDecryptData:                          "CannotDecryptData",
	ErrInvalidJwtAlgorithm:                        "InvalidJwtAlgorithm",
	ErrInvalidJwtSecret:                           "InvalidJwtSecret",
	ErrJwtMissing:                                 "JwtMissing",
	ErrCannotGenerateJwt:                          "CannotGenerateJwt",
	ErrAccessTokenMissing:                         "AccessTokenMissing",
	ErrInvalidAccessToken:                         "InvalidAccessToken",
	ErrCannotFetchJwks:                            "CannotFetchJwks",
	ErrInvalidSizeBytes:                           "InvalidSizeBytes",
	ErrInvalidUtf8:                                "InvalidUtf8",
	ErrInvalidNumberEncoding:                      "InvalidNumberEncoding",
	ErrInvalidBooleanValue:                        "InvalidBooleanValue",
	ErrInvalidNumberValue:                         "InvalidNumberValue",
	ErrClientNotFound:                             "ClientNotFound",
	ErrInvalidClientID:                            "InvalidClientId",
	ErrConnectionClosed:                           "ConnectionClosed",
	ErrCannotParseHeaderKind:                      "CannotParseHeaderKind",
	ErrHttpResponseError:                          "HttpResponseError",
	ErrInvalidHttpRequest:                         "InvalidHttpRequest",
	ErrInvalidJsonResponse:                        "InvalidJsonResponse",
	ErrInvalidBytesResponse:                       "InvalidBytesResponse",
	ErrEmptyResponse:                              "EmptyResponse",
	ErrCannotCreateEndpoint:                       "CannotCreateEndpoint",
	ErrCannotParseUrl:                             "CannotParseUrl",
	ErrWebSocketError:                             "WebSocketError",
	ErrWebSocketConnectionError:                   "WebSocketConnectionError",
	ErrWebSocketCloseError:                        "WebSocketCloseError",
	ErrWebSocketReceiveError:                      "WebSocketReceiveError",
	ErrWebSocketSendError:                         "WebSocketSendError",
	ErrCannotCreateStreamsDirectory:               "CannotCreateStreamsDirectory",
	ErrCannotCreateStreamDirectory:                "CannotCreateStreamDirectory",
	ErrCannotCreateStreamInfo:                     "CannotCreateStreamInfo",
	ErrCannotUpdateStreamInfo:                     "CannotUpdateStreamInfo",
	ErrCannotOpenStreamInfo:                       "CannotOpenStreamInfo",
	ErrCannotReadStreamInfo:                       "CannotReadStreamInfo",
	ErrCannotCreateStream:                         "CannotCreateStream",
	ErrCannotDeleteStream:                         "CannotDeleteStream",
	ErrCannotDeleteStreamDirectory:                "CannotDeleteStreamDirectory",
	ErrStreamIDNotFound:                           "StreamIdNotFound",
	ErrStreamNameNotFound:                         "StreamNameNotFound",
	ErrStreamDirectoryNotFound:                    "StreamDirectoryNotFound",
	ErrStreamNameAlreadyExists:                    "StreamNameAlreadyExists",
	ErrInvalidStreamName:                          "InvalidStreamName",
	ErrInvalidStreamID:                            "InvalidStreamId",
	ErrCannotReadStreams:                          "CannotReadStreams",
	ErrInvalidTopicSize:                           "InvalidTopicSize",
	ErrTooManyStreams:                             "TooManyStreams",
	ErrCannotCreateTopicsDirectory:                "CannotCreateTopicsDirectory",
	ErrCannotCreateTopicDirectory:                 "CannotCreateTopicDirectory",
	ErrCannotCreateTopicInfo:                      "CannotCreateTopicInfo",
	ErrCannotUpdateTopicInfo:                      "CannotUpdateTopicInfo",
	ErrCannotOpenTopicInfo:                        "CannotOpenTopicInfo",
	ErrCannotReadTopicInfo:                        "CannotReadTopicInfo",
	ErrCannotCreateTopic:                          "CannotCreateTopic",
	ErrCannotDeleteTopic:                          "CannotDeleteTopic",
	ErrCannotDeleteTopicDirectory:                 "CannotDeleteTopicDirectory",
	ErrCannotPollTopic:                            "CannotPollTopic",
	ErrTopicIDNotFound:                            "TopicIdNotFound",
	ErrTopicNameNotFound:                          "TopicNameNotFound",
	ErrTopicNameAlreadyExists:                     "TopicNameAlreadyExists",
	ErrInvalidTopicName:                           "InvalidTopicName",
	ErrTooManyPartitions:                          "TooManyPartitions",
	ErrInvalidTopicID:                             "InvalidTopicId",
	ErrCannotReadTopics:                           "CannotReadTopics",
	ErrInvalidReplicationFactor:                   "InvalidReplicationFactor",
	ErrInvalidPartitionsCount:                     "InvalidPartitionsCount",
	ErrTopicDirectoryNotFound:                     "TopicDirectoryNotFound",
	ErrTooManyTopics:                              "TooManyTopics",
	ErrCannotCreatePartition:                      "CannotCreatePartition",
	ErrCannotCreatePartitionsDirectory:            "CannotCreatePartitionsDirectory",
	ErrCannotCreatePartitionDirectory:             "CannotCreatePartitionDirectory",
	ErrCannotOpenPartitionLogFile:                 "CannotOpenPartitionLogFile",
	ErrCannotReadPartitions:                       "CannotReadPartitions",
	ErrCannotDeletePartition:                      "CannotDeletePartition",
	ErrCannotDeletePartitionDirectory:             "CannotDeletePartitionDirectory",
	ErrPartitionNotFound:                          "PartitionNotFound",
	ErrNoPartitions:                               "NoPartitions",
	ErrTopicFull:                                  "TopicFull",
	ErrCannotDeleteConsumerOffsetsDirectory:       "CannotDeleteConsumerOffsetsDirectory",
	ErrCannotDeleteConsumerOffsetFile:             "CannotDeleteConsumerOffsetFile",
	ErrCannotCreateConsumerOffsetsDirectory:       "CannotCreateConsumerOffsetsDirectory",
	ErrPartitionIDSpaceExhausted:                  "PartitionIdSpaceExhausted",
	ErrCannotReadConsumerOffsets:                  "CannotReadConsumerOffsets",
	ErrConsumerOffsetNotFound:                     "ConsumerOffsetNotFound",
	ErrNotResolvedConsumer:                        "NotResolvedConsumer",
	ErrCannotOpenConsumerOffsetsFile:              "CannotOpenConsumerOffsetsFile",
	ErrSegmentNotFound:                            "SegmentNotFound",
	ErrSegmentClosed:                              "SegmentClosed",
	ErrInvalidSegmentSize:                         "InvalidSegmentSize",
	ErrCannotCreateSegmentLogFile:                 "CannotCreateSegmentLogFile",
	ErrCannotCreateSegmentIndexFile:               "CannotCreateSegmentIndexFile",
	ErrCannotCreateSegmentTimeIndexFile:           "CannotCreateSegmentTimeIndexFile",
	ErrCannotSaveMessagesToSegment:                "CannotSaveMessagesToSegment",
	ErrCannotSaveIndexToSegment:                   "CannotSaveIndexToSegment",
	ErrCannotSaveTimeIndexToSegment:               "CannotSaveTimeIndexToSegment",
	ErrInvalidMessagesCount:                       "InvalidMessagesCount",
	ErrCannotAppendMessage:                        "CannotAppendMessage",
	ErrCannotReadMessage:                          "CannotReadMessage",
	ErrCannotReadMessageID:                        "CannotReadMessageId",
	ErrCannotReadMessageState:                     "CannotReadMessageState",
	ErrCannotReadMessageTimestamp:                 "CannotReadMessageTimestamp",
	ErrCannotReadHeadersLength:                    "CannotReadHeadersLength",
	ErrCannotReadHeadersPayload:                   "CannotReadHeadersPayload",
	ErrTooBigUserHeaders:                          "TooBigUserHeaders",
	ErrInvalidHeaderKey:                           "InvalidHeaderKey",
	ErrInvalidHeaderValue:                         "InvalidHeaderValue",
	ErrCannotReadMessageLength:                    "CannotReadMessageLength",
	ErrCannotReadMessagePayload:                   "CannotReadMessagePayload",
	ErrTooBigMessagePayload:                       "TooBigMessagePayload",
	ErrTooManyMessages:                            "TooManyMessages",
	ErrEmptyMessagePayload:                        "EmptyMessagePayload",
	ErrInvalidMessagePayloadLength:                "InvalidMessagePayloadLength",
	ErrCannotReadMessageChecksum:                  "CannotReadMessageChecksum",
	ErrInvalidMessageChecksum:                     "InvalidMessageChecksum",
	ErrInvalidKeyValueLength:                      "InvalidKeyValueLength",
	ErrCommandLengthError:                         "CommandLengthError",
	ErrInvalidSegmentsCount:                       "InvalidSegmentsCount",
	ErrNonZeroOffset:                              "NonZeroOffset",
	ErrNonZeroTimestamp:                           "NonZeroTimestamp",
	ErrMissingIndex:                               "MissingIndex",
	ErrInvalidIndexesByteSize:                     "InvalidIndexesByteSize",
	ErrInvalidIndexesCount:                        "InvalidIndexesCount",
	ErrInvalidMessagesSize:                        "InvalidMessagesSize",
	ErrTooSmallMessage:                            "TooSmallMessage",
	ErrInvalidMessageTimestampDelta:               "InvalidMessageTimestampDelta",
	ErrInvalidBatchChecksum:                       "InvalidBatchChecksum",
	ErrInvalidHeaderKind:                          "InvalidHeaderKind",
	ErrUnsupportedOptionKey:                       "UnsupportedOptionKey",
	ErrInvalidOptionValue:                         "InvalidOptionValue",
	ErrOptionsBlockTooLarge:                       "OptionsBlockTooLarge",
	ErrCannotSendMessagesDueToClientDisconnection: "CannotSendMessagesDueToClientDisconnection",
	ErrBackgroundSendError:                        "BackgroundSendError",
	ErrBackgroundSendTimeout:                      "BackgroundSendTimeout",
	ErrBackgroundSendBufferFull:                   "BackgroundSendBufferFull",
	ErrBackgroundWorkerDisconnected:               "BackgroundWorkerDisconnected",
	ErrBackgroundSendBufferOverflow:               "BackgroundSendBufferOverflow",
	ErrProducerClosed:                             "ProducerClosed",
	ErrInvalidOffset:                              "InvalidOffset",
	ErrInvalidReservedField:                       "InvalidReservedField",
	ErrConsumerGroupIDNotFound:                    "ConsumerGroupIdNotFound",
	ErrInvalidConsumerGroupID:                     "InvalidConsumerGroupId",
	ErrConsumerGroupNameNotFound:                  "ConsumerGroupNameNotFound",
	ErrConsumerGroupNameAlreadyExists:             "ConsumerGroupNameAlreadyExists",
	ErrInvalidConsumerGroupName:                   "InvalidConsumerGroupName",
	ErrConsumerGroupMemberNotFound:                "ConsumerGroupMemberNotFound",
	ErrCannotCreateConsumerGroupInfo:              "CannotCreateConsumerGroupInfo",
	ErrCannotDeleteConsumerGroupInfo:              "CannotDeleteConsumerGroupInfo",
	ErrConsumerGroupPartitionNotOwned:             "ConsumerGroupPartitionNotOwned",
	ErrMissingBaseOffsetRetainedMessageBatch:      "MissingBaseOffsetRetainedMessageBatch",
	ErrMissingLastOffsetDeltaRetainedMessageBatch: "MissingLastOffsetDeltaRetainedMessageBatch",
	ErrMissingMaxTimestampRetainedMessageBatch:    "MissingMaxTimestampRetainedMessageBatch",
	ErrMissingLengthRetainedMessageBatch:          "MissingLengthRetainedMessageBatch",
	ErrMissingPayloadRetainedMessageBatch:         "MissingPayloadRetainedMessageBatch",
	ErrCannotReadBatchBaseOffset:                  "CannotReadBatchBaseOffset",
	ErrCannotReadBatchLength:                      "CannotReadBatchLength",
	ErrCannotReadLastOffsetDelta:                  "CannotReadLastOffsetDelta",
	ErrCannotReadMaxTimestamp:                     "CannotReadMaxTimestamp",
	ErrCannotReadBatchPayload:                     "CannotReadBatchPayload",
	ErrInvalidConnectionString:                    "InvalidConnectionString",
	ErrSnapshotFileCompletionFailed:               "SnapshotFileCompletionFailed",
	ErrCannotSerializeResource:                    "CannotSerializeResource",
	ErrCannotDeserializeResource:                  "CannotDeserializeResource",
	ErrCannotReadFile:                             "CannotReadFile",
	ErrCannotReadFileMetadata:                     "CannotReadFileMetadata",
	ErrCannotSeekFile:                             "CannotSeekFile",
	ErrCannotAppendToFile:                         "CannotAppendToFile",
	ErrCannotWriteToFile:                          "CannotWriteToFile",
	ErrCannotOverwriteFile:                        "CannotOverwriteFile",
	ErrCannotDeleteFile:                           "CannotDeleteFile",
	ErrCannotSyncFile:                             "CannotSyncFile",
	ErrCannotReadIndexOffset:                      "CannotReadIndexOffset",
	ErrCannotReadIndexPosition:                    "CannotReadIndexPosition",
	ErrCannotReadIndexTimestamp:                   "CannotReadIndexTimestamp",
	ErrTimestampOutOfRange:                        "TimestampOutOfRange",
	ErrShardNotFound:                              "ShardNotFound",
	ErrShardCommunicationError:                    "ShardCommunicationError",
	ErrCannotBindToSocket:                         "CannotBindToSocket",
	ErrTaskTimeout:                                "TaskTimeout",
	ErrIoError:                                    "IoError",
	ErrAlreadyAuthenticated:                       "AlreadyAuthenticated",
	ErrInvalidSession:                             "InvalidSession",
	ErrIncompatibleProtocolVersion:                "IncompatibleProtocolVersion",
}
