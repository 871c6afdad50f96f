package metadata

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters for new hashes (OWASP baseline: 19 MiB, 2 passes).
// Verification reads the parameters from the PHC string, within bounds.
const (
	argonMemoryKiB    = 19 * 1024
	argonTime         = 2
	argonThreads      = 1
	argonKeyBytes     = 32
	argonSaltBytes    = 16
	argonMemoryKiBMax = 256 * 1024
	argonTimeMax      = 16
	argonThreadsMax   = 16
	argonKeyBytesMax  = 64
	patTokenBytes     = 32
)

type argonParams struct {
	memoryKiB, time uint32
	threads         uint8
}

var defaultArgon = argonParams{memoryKiB: argonMemoryKiB, time: argonTime, threads: argonThreads}

// ErrInvalidPassword is returned when a password breaks the 3..100 byte rule.
var ErrInvalidPassword = errors.New("password must be 3..100 bytes")

// HashPassword validates a password and returns its argon2id PHC string
// with a random salt. The primary calls it before encoding CreateUser or
// ChangePassword; only the hash is replicated.
func HashPassword(password string) (string, error) {
	if !ValidatePassword(password) {
		return "", ErrInvalidPassword
	}
	salt := make([]byte, argonSaltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read password salt: %w", err)
	}
	return hashWith(password, salt, defaultArgon), nil
}

// RootPasswordHash hashes the root password with a salt derived from the
// cluster name and username, so every replica of a cluster seeds a
// byte-identical root user without replicating it.
func RootPasswordHash(clusterName, username, password string) (string, error) {
	if !ValidatePassword(password) {
		return "", ErrInvalidPassword
	}
	sum := sha256.Sum256([]byte("lodestream/root-salt/v1\x00" + clusterName + "\x00" + username))
	return hashWith(password, sum[:argonSaltBytes], defaultArgon), nil
}

func hashWith(password string, salt []byte, p argonParams) string {
	key := argon2.IDKey([]byte(password), salt, p.time, p.memoryKiB, p.threads, argonKeyBytes)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.memoryKiB, p.time, p.threads, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// VerifyPasswordHash checks password against a PHC argon2id string in
// constant time. A malformed or out-of-bounds hash never matches.
func VerifyPasswordHash(hash, password string) bool {
	p, salt, key, err := parsePHC(hash)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, p.time, p.memoryKiB, p.threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

func parsePHC(hash string) (argonParams, []byte, []byte, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return argonParams{}, nil, nil, errors.New("not an argon2id PHC string")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return argonParams{}, nil, nil, fmt.Errorf("unsupported argon2 version %q", parts[2])
	}
	var m, t, th uint64
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &th); err != nil {
		return argonParams{}, nil, nil, fmt.Errorf("argon2 parameters %q: %w", parts[3], err)
	}
	if m < 8 || m > argonMemoryKiBMax || t < 1 || t > argonTimeMax || th < 1 || th > argonThreadsMax {
		return argonParams{}, nil, nil, fmt.Errorf("argon2 parameters %q out of bounds", parts[3])
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return argonParams{}, nil, nil, errors.New("argon2 salt malformed")
	}
	key, err := enc.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > argonKeyBytesMax {
		return argonParams{}, nil, nil, errors.New("argon2 key malformed")
	}
	return argonParams{memoryKiB: uint32(m), time: uint32(t), threads: uint8(th)}, salt, key, nil
}

// NewPersonalAccessToken mints a random token (returned to the caller
// once) and its SHA-256 hex hash (the only thing replicated).
func NewPersonalAccessToken() (token, hash string, err error) {
	raw := make([]byte, patTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("read token bytes: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(raw)
	return token, HashToken(token), nil
}

// HashToken returns the SHA-256 hex hash of a raw token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// dummyHash equalizes the cost of a login for an unknown username; it is
// computed on first use so importing the package costs nothing.
var dummyHash = sync.OnceValue(func() string {
	return hashWith("lodestream-dummy-password", []byte("lodestream-dummy"), defaultArgon)
})

// VerifyPassword checks a login. It returns the user id and CodeOK, or
// CodeInvalidCredentials for an unknown user, a wrong password, a
// malformed input or an inactive user (answered exactly like a wrong
// password, wire-protocol §2.3). The argon2 work runs outside the lock.
func (s *State) VerifyPassword(username, password string) (uint32, uint32) {
	if !validUsername(username) || !ValidatePassword(password) {
		return 0, CodeInvalidCredentials
	}
	s.mu.RLock()
	uid, found := s.userByName[username]
	var hash string
	active := false
	if found {
		u := s.users[uid]
		hash, active = u.passwordHash, u.status == UserActive
	}
	s.mu.RUnlock()
	if !found {
		VerifyPasswordHash(dummyHash(), password)
		return 0, CodeInvalidCredentials
	}
	if !VerifyPasswordHash(hash, password) || !active {
		return 0, CodeInvalidCredentials
	}
	return uid, CodeOK
}

// VerifyPAT checks a token login at nowMicros: CodeOK with the owner id,
// CodeInvalidPAT (unknown or malformed), CodePATExpired, or
// CodeUserInactive (owner inactive). The map lookup is keyed by the
// SHA-256 of the secret, so its timing reveals nothing usable; the final
// comparison is constant time.
func (s *State) VerifyPAT(token string, nowMicros uint64) (uint32, uint32) {
	if len(token) == 0 || len(token) > NameBytesMax {
		return 0, CodeInvalidPAT
	}
	hash := HashToken(token)
	s.mu.RLock()
	defer s.mu.RUnlock()
	ref, ok := s.patByHash[hash]
	if !ok {
		return 0, CodeInvalidPAT
	}
	u, ok := s.users[ref.userID]
	if !ok {
		return 0, CodeInvalidPAT
	}
	p, ok := u.pats[ref.name]
	if !ok || subtle.ConstantTimeCompare([]byte(p.TokenHash), []byte(hash)) != 1 {
		return 0, CodeInvalidPAT
	}
	if p.ExpiryAt != 0 && p.ExpiryAt <= nowMicros {
		return 0, CodePATExpired
	}
	if u.status != UserActive {
		return 0, CodeUserInactive
	}
	return u.id, CodeOK
}

// RootPermissions is the full permission set the root user is seeded with.
func RootPermissions() *Permissions {
	return &Permissions{Global: GlobalPermissions{
		ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true,
		PollMessages: true, SendMessages: true,
	}}
}

// SeedRoot creates the root user (id 0, active, all permissions,
// created_at 0) outside the WAL. Every replica seeds the same bytes when
// given the same hash (see RootPasswordHash). It fails if a root exists.
func (s *State) SeedRoot(username, passwordHash string) error {
	if !validUsername(username) {
		return fmt.Errorf("root username %q: must be %d..%d bytes and not blank", username, UsernameBytesMin, UsernameBytesMax)
	}
	if _, _, _, err := parsePHC(passwordHash); err != nil {
		return fmt.Errorf("root password hash: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.users[RootUserID]; exists {
		return errors.New("root user already exists")
	}
	if _, dup := s.userByName[username]; dup {
		return fmt.Errorf("root username %q already taken", username)
	}
	s.users[RootUserID] = &userState{
		id: RootUserID, username: username, passwordHash: passwordHash, status: UserActive,
		permissions: RootPermissions(), pats: make(map[string]PersonalAccessToken),
	}
	s.userByName[username] = RootUserID
	return nil
}
