package wire

// Response bodies of §4.3 for users, personal access tokens, clients, consumer offsets and group
// assignments.

// User is §4.3.5: [id u32][created_at u64][status u8][Name8 username][options len u32 + TLV].
type User struct {
	ID        uint32
	CreatedAt uint64
	Status    UserStatus
	Username  string
	Options   Options
}

func (u *User) Append(b []byte) []byte {
	b = appendU32(b, u.ID)
	b = appendU64(b, u.CreatedAt)
	b = appendU8(b, uint8(u.Status))
	b = appendName8(b, u.Username)
	return u.Options.AppendPrefixed(b)
}

func (d *decoder) user() User {
	return User{
		ID:        d.u32("user.id"),
		CreatedAt: d.u64("user.created_at"),
		Status:    d.userStatus("user.status"),
		Username:  d.name8("user.username"),
		Options:   d.optionsPrefixed("user.options"),
	}
}

// DecodeUsers decodes a GetUsers payload (users concatenated).
func DecodeUsers(b []byte) ([]User, error) {
	d := newDecoder("Users", b)
	var out []User
	for d.remaining() > 0 && !d.failed() {
		out = append(out, d.user())
	}
	return out, d.err()
}

// UserDetails is User followed by [1 u8][perm_len u32][Permissions], or by four zero bytes when the user
// has no permissions (the asymmetric encoding of §4.3.5).
type UserDetails struct {
	User
	Permissions *Permissions
}

func (u *UserDetails) Append(b []byte) []byte {
	b = u.User.Append(b)
	if u.Permissions == nil {
		return appendU32(b, 0)
	}
	return appendPermissionsBlock(appendU8(b, 1), u.Permissions)
}

// DecodeUserDetails decodes a GetUser / CreateUser payload.
func DecodeUserDetails(b []byte) (UserDetails, error) {
	d := newDecoder("UserDetails", b)
	u := UserDetails{User: d.user()}
	switch flag := d.u8("has_permissions"); {
	case d.failed():
	case flag == 0:
		if pad := d.take("has_permissions.padding", 3); pad != nil && (pad[0]|pad[1]|pad[2]) != 0 {
			d.fail("has_permissions.padding", "no-permissions marker must be four zero bytes")
		}
	case flag == 1:
		u.Permissions = d.permissionsBlock("permissions")
	default:
		d.fail("has_permissions", "flag %d is not 0 or 1", flag)
	}
	d.end()
	return u, d.err()
}

// PersonalAccessToken is a PAT list entry (§4.3.6): [Name8 name][expiry_at u64 µs; 0 = never].
type PersonalAccessToken struct {
	Name     string
	ExpiryAt uint64
}

func (p *PersonalAccessToken) Append(b []byte) []byte {
	return appendU64(appendName8(b, p.Name), p.ExpiryAt)
}

// DecodePersonalAccessTokens decodes a GetPersonalAccessTokens payload (entries concatenated; may be empty).
func DecodePersonalAccessTokens(b []byte) ([]PersonalAccessToken, error) {
	d := newDecoder("PersonalAccessTokens", b)
	var out []PersonalAccessToken
	for d.remaining() > 0 && !d.failed() {
		out = append(out, PersonalAccessToken{Name: d.name8("pat.name"), ExpiryAt: d.u64("pat.expiry_at")})
	}
	return out, d.err()
}

// RawToken is the CreatePersonalAccessToken reply payload: Name8 token.
type RawToken struct{ Token string }

func (t *RawToken) Append(b []byte) []byte { return appendName8(b, t.Token) }

// DecodeRawToken decodes a CreatePersonalAccessToken payload.
func DecodeRawToken(b []byte) (RawToken, error) {
	d := newDecoder("RawToken", b)
	t := RawToken{Token: d.name8("token")}
	d.end()
	return t, d.err()
}

// Transport byte of Client.
const (
	TransportTCP       uint8 = 1
	TransportQUIC      uint8 = 2
	TransportWebSocket uint8 = 4
)

// NoUser is Client.UserID for a connection with no signed-in user.
const NoUser = ^uint32(0)

// Client is §4.3.7: [client_id u32][user_id u32][transport u8][addr Str32][consumer_groups_count u32].
type Client struct {
	ClientID            uint32
	UserID              uint32 // NoUser = none
	Transport           uint8
	Address             string
	ConsumerGroupsCount uint32
}

func (c *Client) Append(b []byte) []byte {
	b = appendU32(b, c.ClientID)
	b = appendU32(b, c.UserID)
	b = appendU8(b, c.Transport)
	b = appendStr32(b, c.Address)
	return appendU32(b, c.ConsumerGroupsCount)
}

func (d *decoder) client() Client {
	return Client{
		ClientID:            d.u32("client.client_id"),
		UserID:              d.u32("client.user_id"),
		Transport:           d.u8("client.transport"),
		Address:             d.str32("client.address"),
		ConsumerGroupsCount: d.u32("client.consumer_groups_count"),
	}
}

// DecodeClients decodes a GetClients payload (clients concatenated).
func DecodeClients(b []byte) ([]Client, error) {
	d := newDecoder("Clients", b)
	var out []Client
	for d.remaining() > 0 && !d.failed() {
		out = append(out, d.client())
	}
	return out, d.err()
}

// ClientGroup is one consumer-group membership of ClientDetails.
type ClientGroup struct {
	StreamID, TopicID, GroupID uint32
}

// ClientDetails is Client followed by consumer_groups_count × [stream u32][topic u32][group u32].
type ClientDetails struct {
	Client
	ConsumerGroups []ClientGroup
}

func (c *ClientDetails) Append(b []byte) []byte {
	h := c.Client
	h.ConsumerGroupsCount = uint32(len(c.ConsumerGroups))
	b = h.Append(b)
	for _, g := range c.ConsumerGroups {
		b = appendU32(appendU32(appendU32(b, g.StreamID), g.TopicID), g.GroupID)
	}
	return b
}

// DecodeClientDetails decodes a GetMe / GetClient payload.
func DecodeClientDetails(b []byte) (ClientDetails, error) {
	d := newDecoder("ClientDetails", b)
	c := ClientDetails{Client: d.client()}
	if !d.failed() && uint64(c.ConsumerGroupsCount)*12 != uint64(d.remaining()) {
		d.fail("client.consumer_groups_count", "count %d needs %d bytes, %d left", c.ConsumerGroupsCount,
			uint64(c.ConsumerGroupsCount)*12, d.remaining())
	}
	if !d.failed() {
		c.ConsumerGroups = make([]ClientGroup, 0, c.ConsumerGroupsCount)
		for i := 0; i < int(c.ConsumerGroupsCount); i++ {
			c.ConsumerGroups = append(c.ConsumerGroups, ClientGroup{
				StreamID: d.u32("group.stream_id"), TopicID: d.u32("group.topic_id"), GroupID: d.u32("group.group_id")})
		}
	}
	d.end()
	return c, d.err()
}

// ConsumerOffset is §4.3.8 (20 bytes): [partition_id u32][current_offset u64][stored_offset u64].
type ConsumerOffset struct {
	PartitionID   uint32
	CurrentOffset uint64
	StoredOffset  uint64
}

func (o *ConsumerOffset) Append(b []byte) []byte {
	return appendU64(appendU64(appendU32(b, o.PartitionID), o.CurrentOffset), o.StoredOffset)
}

// DecodeConsumerOffset decodes a non-empty GetConsumerOffset payload.
func DecodeConsumerOffset(b []byte) (ConsumerOffset, error) {
	d := newDecoder("ConsumerOffset", b)
	o := ConsumerOffset{PartitionID: d.u32("partition_id"), CurrentOffset: d.u64("current_offset"), StoredOffset: d.u64("stored_offset")}
	d.end()
	return o, d.err()
}

// Assignment is §4.3.9 (SyncConsumerGroup): [generation u64][n u32][partition_id u32 × n].
type Assignment struct {
	Generation uint64
	Partitions []uint32
}

func (a *Assignment) Append(b []byte) []byte {
	b = appendU32(appendU64(b, a.Generation), uint32(len(a.Partitions)))
	for _, p := range a.Partitions {
		b = appendU32(b, p)
	}
	return b
}

// DecodeAssignment decodes a non-empty SyncConsumerGroup payload.
func DecodeAssignment(b []byte) (Assignment, error) {
	d := newDecoder("Assignment", b)
	a := Assignment{Generation: d.u64("generation")}
	n := d.count("partitions_count", 4)
	if !d.failed() {
		a.Partitions = make([]uint32, 0, n)
		for i := 0; i < n; i++ {
			a.Partitions = append(a.Partitions, d.u32("partition_id"))
		}
	}
	d.end()
	return a, d.err()
}
