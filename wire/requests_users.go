package wire

// UserStatus is a user's status byte.
type UserStatus uint8

const (
	UserActive   UserStatus = 1
	UserInactive UserStatus = 2
)

func (s UserStatus) String() string {
	switch s {
	case UserActive:
		return "active"
	case UserInactive:
		return "inactive"
	}
	return "invalid"
}

func (d *decoder) userStatus(field string) UserStatus {
	s := UserStatus(d.u8(field))
	if !d.failed() && s != UserActive && s != UserInactive {
		d.failWithCode(ErrInvalidUserStatus, field, "status %d is not 1 (active) or 2 (inactive)", s)
	}
	return s
}

// CreateUserRequest (33): Name8 username, [pw_len u8][pw], status u8, has_perms u8 [+ perm_len u32 +
// Permissions] + options tail. Username/password length rules are business rules (server side).
type CreateUserRequest struct {
	Username    string
	Password    string
	Status      UserStatus
	Permissions *Permissions // nil = none
	Options     Options
}

func (r CreateUserRequest) Code() CommandCode { return CodeCreateUser }
func (r CreateUserRequest) AppendBody(b []byte) []byte {
	b = appendName8(b, r.Username)
	b = appendBytes8(b, []byte(r.Password))
	b = appendU8(b, uint8(r.Status))
	b = appendOptionalPermissions(b, r.Permissions)
	return r.Options.Append(b)
}

func appendOptionalPermissions(b []byte, p *Permissions) []byte {
	if p == nil {
		return appendU8(b, 0)
	}
	return appendPermissionsBlock(appendU8(b, 1), p)
}

func (d *decoder) optionalPermissions(field string) *Permissions {
	if d.bool("has_" + field) {
		return d.permissionsBlock(field)
	}
	return nil
}

// DecodeCreateUser decodes a CreateUser body.
func DecodeCreateUser(b []byte) (CreateUserRequest, error) {
	d := newDecoder("CreateUser", b)
	r := CreateUserRequest{Username: d.name8("username")}
	r.Password = d.utf8("password", d.bytes8("password"))
	r.Status = d.userStatus("status")
	r.Permissions = d.optionalPermissions("permissions")
	r.Options = d.optionsTail("options")
	return r, d.err()
}

// UpdateUserRequest (35): Ident user, has_username u8 [+ Name8], has_status u8 [+ status u8] + options.
type UpdateUserRequest struct {
	User     Identifier
	Username *string     // nil = unchanged
	Status   *UserStatus // nil = unchanged
	Options  Options
}

func (r UpdateUserRequest) Code() CommandCode { return CodeUpdateUser }
func (r UpdateUserRequest) AppendBody(b []byte) []byte {
	b = r.User.Append(b)
	if r.Username != nil {
		b = appendName8(appendU8(b, 1), *r.Username)
	} else {
		b = appendU8(b, 0)
	}
	if r.Status != nil {
		b = appendU8(appendU8(b, 1), uint8(*r.Status))
	} else {
		b = appendU8(b, 0)
	}
	return r.Options.Append(b)
}

// DecodeUpdateUser decodes an UpdateUser body.
func DecodeUpdateUser(b []byte) (UpdateUserRequest, error) {
	d := newDecoder("UpdateUser", b)
	r := UpdateUserRequest{User: d.ident("user_id")}
	if d.bool("has_username") {
		name := d.name8("username")
		r.Username = &name
	}
	if d.bool("has_status") {
		s := d.userStatus("status")
		r.Status = &s
	}
	r.Options = d.optionsTail("options")
	if d.failed() {
		return UpdateUserRequest{}, d.err()
	}
	return r, nil
}

// UpdatePermissionsRequest (36): Ident user, has_perms u8 [+ perm_len u32 + Permissions]; nil clears.
type UpdatePermissionsRequest struct {
	User        Identifier
	Permissions *Permissions
}

func (r UpdatePermissionsRequest) Code() CommandCode { return CodeUpdatePermissions }
func (r UpdatePermissionsRequest) AppendBody(b []byte) []byte {
	return appendOptionalPermissions(r.User.Append(b), r.Permissions)
}

// DecodeUpdatePermissions decodes an UpdatePermissions body.
func DecodeUpdatePermissions(b []byte) (UpdatePermissionsRequest, error) {
	d := newDecoder("UpdatePermissions", b)
	r := UpdatePermissionsRequest{User: d.ident("user_id")}
	r.Permissions = d.optionalPermissions("permissions")
	d.skipTrailing()
	return r, d.err()
}

// ChangePasswordRequest (37): Ident user, [len u8][current], [len u8][new].
type ChangePasswordRequest struct {
	User            Identifier
	CurrentPassword string
	NewPassword     string
}

func (r ChangePasswordRequest) Code() CommandCode { return CodeChangePassword }
func (r ChangePasswordRequest) AppendBody(b []byte) []byte {
	b = appendBytes8(r.User.Append(b), []byte(r.CurrentPassword))
	return appendBytes8(b, []byte(r.NewPassword))
}

// DecodeChangePassword decodes a ChangePassword body.
func DecodeChangePassword(b []byte) (ChangePasswordRequest, error) {
	d := newDecoder("ChangePassword", b)
	r := ChangePasswordRequest{User: d.ident("user_id")}
	r.CurrentPassword = d.utf8("current_password", d.bytes8("current_password"))
	r.NewPassword = d.utf8("new_password", d.bytes8("new_password"))
	d.skipTrailing()
	return r, d.err()
}

// PATExpiryNever is the CreatePersonalAccessToken expiry meaning "never" (0 = server default, also never).
const PATExpiryNever = ^uint64(0)

// CreatePersonalAccessTokenRequest (42): Name8 name, expiry u64 (µs of lifetime).
type CreatePersonalAccessTokenRequest struct {
	Name         string
	ExpiryMicros uint64
}

func (r CreatePersonalAccessTokenRequest) Code() CommandCode { return CodeCreatePersonalAccessToken }
func (r CreatePersonalAccessTokenRequest) AppendBody(b []byte) []byte {
	return appendU64(appendName8(b, r.Name), r.ExpiryMicros)
}

// DecodeCreatePersonalAccessToken decodes a CreatePersonalAccessToken body.
func DecodeCreatePersonalAccessToken(b []byte) (CreatePersonalAccessTokenRequest, error) {
	d := newDecoder("CreatePersonalAccessToken", b)
	r := CreatePersonalAccessTokenRequest{Name: d.name8("name"), ExpiryMicros: d.u64("expiry")}
	d.skipTrailing()
	return r, d.err()
}

// DeletePersonalAccessTokenRequest (43): Name8 name.
type DeletePersonalAccessTokenRequest struct{ Name string }

func (r DeletePersonalAccessTokenRequest) Code() CommandCode { return CodeDeletePersonalAccessToken }
func (r DeletePersonalAccessTokenRequest) AppendBody(b []byte) []byte {
	return appendName8(b, r.Name)
}

// DecodeDeletePersonalAccessToken decodes a DeletePersonalAccessToken body.
func DecodeDeletePersonalAccessToken(b []byte) (DeletePersonalAccessTokenRequest, error) {
	d := newDecoder("DeletePersonalAccessToken", b)
	r := DeletePersonalAccessTokenRequest{Name: d.name8("name")}
	d.skipTrailing()
	return r, d.err()
}

// ConsumerOffsetRequest is GetConsumerOffset (120), StoreConsumerOffset (121) or DeleteConsumerOffset
// (122): Consumer, Ident stream, Ident topic, OptPartition, then 121: offset u64 + ack u8; 122: ack u8.
type ConsumerOffsetRequest struct {
	Command   CommandCode
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition OptPartition
	Offset    uint64   // 121 only
	Ack       AckLevel // 121 and 122
}

func (r ConsumerOffsetRequest) Code() CommandCode { return r.Command }
func (r ConsumerOffsetRequest) AppendBody(b []byte) []byte {
	b = r.Partition.Append(r.Topic.Append(r.Stream.Append(r.Consumer.Append(b))))
	switch r.Command {
	case CodeStoreConsumerOffset:
		b = appendU8(appendU64(b, r.Offset), uint8(r.Ack))
	case CodeDeleteConsumerOffset:
		b = appendU8(b, uint8(r.Ack))
	}
	return b
}

func decodeConsumerOffset(code CommandCode, b []byte) (ConsumerOffsetRequest, error) {
	d := newDecoder(code.String(), b)
	r := ConsumerOffsetRequest{Command: code, Consumer: d.consumer("consumer"), Stream: d.ident("stream_id"),
		Topic: d.ident("topic_id"), Partition: d.optPartition("partition")}
	switch code {
	case CodeStoreConsumerOffset:
		r.Offset = d.u64("offset")
		r.Ack = d.ackLevel("ack")
	case CodeDeleteConsumerOffset:
		r.Ack = d.ackLevel("ack")
	}
	d.skipTrailing()
	return r, d.err()
}

// GetClientRequest (21): client_id u32.
type GetClientRequest struct{ ClientID uint32 }

func (r GetClientRequest) Code() CommandCode          { return CodeGetClient }
func (r GetClientRequest) AppendBody(b []byte) []byte { return appendU32(b, r.ClientID) }

// DescribeScope is the DescribeOptions scope byte.
type DescribeScope uint8

const (
	ScopeTopic  DescribeScope = 1
	ScopeStream DescribeScope = 2
	ScopeUser   DescribeScope = 3
)

// DescribeOptionsRequest (13): [scope u8].
type DescribeOptionsRequest struct{ Scope DescribeScope }

func (r DescribeOptionsRequest) Code() CommandCode          { return CodeDescribeOptions }
func (r DescribeOptionsRequest) AppendBody(b []byte) []byte { return appendU8(b, uint8(r.Scope)) }

// GetSnapshotFileRequest (11): [compression u8][n u8][type u8 × n].
type GetSnapshotFileRequest struct {
	Compression uint8
	Types       []uint8
}

func (r GetSnapshotFileRequest) Code() CommandCode { return CodeGetSnapshotFile }
func (r GetSnapshotFileRequest) AppendBody(b []byte) []byte {
	return appendBytes8(appendU8(b, r.Compression), r.Types)
}
