package httpapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/zeebo/blake3"

	"github.com/lodestream/lodestream/config"
)

// pskKeyContext is the BLAKE3 derive_key context of the cluster-wide JWT
// key (spec §2.2, server-design §8): every node derives the same key from
// the cluster PSK, so a bearer minted on one node verifies on all.
const pskKeyContext = "apache-iggy server http-jwt v1 psk->hs256-key"

// neverExpireSeconds is the lifetime of "none" tokens (upstream's).
const neverExpireSeconds = 1_000_000_000

// tokens mints and verifies the server's own access tokens.
type tokens struct {
	method         *jwt.SigningMethodHMAC
	key            []byte
	issuer         string
	audience       string
	validIssuers   []string
	validAudiences []string
	lifetime       time.Duration // 0 = never expire
	skew           time.Duration
	notBefore      time.Duration
	// KeySource says where the key came from (logged; never the key).
	keySource string
	now       func() time.Time
}

// claims are the registered claims of an access token.
type claims = jwt.RegisteredClaims

func newTokens(cfg *config.Config) (*tokens, error) {
	j := cfg.HTTP.JWT
	t := &tokens{issuer: j.Issuer, audience: j.Audience, validIssuers: j.ValidIssuers, validAudiences: j.ValidAudiences,
		lifetime: j.AccessTokenExpiry.Duration, skew: j.ClockSkew.Duration, notBefore: j.NotBefore.Duration, now: time.Now}
	switch j.Algorithm {
	case "", "HS256":
		t.method = jwt.SigningMethodHS256
	case "HS384":
		t.method = jwt.SigningMethodHS384
	case "HS512":
		t.method = jwt.SigningMethodHS512
	default:
		return nil, fmt.Errorf("http.jwt.algorithm = %q: must be HS256, HS384 or HS512", j.Algorithm)
	}
	key, source, err := jwtKey(cfg)
	if err != nil {
		return nil, err
	}
	t.key, t.keySource = key, source
	return t, nil
}

// jwtKey picks the HMAC key: explicit http.jwt secrets win; else, in a
// cluster with auth and a PSK, the PSK-derived key; else a random
// per-process secret (tokens die with the process).
func jwtKey(cfg *config.Config) ([]byte, string, error) {
	j := cfg.HTTP.JWT
	enc, dec := j.EncodingSecret.Reveal(), j.DecodingSecret.Reveal()
	if enc != "" || dec != "" {
		if enc != "" && dec != "" && enc != dec {
			return nil, "", errors.New("http.jwt.encoding_secret and http.jwt.decoding_secret differ: HMAC needs one key (set both the same, or only one)")
		}
		secret := enc
		if secret == "" {
			secret = dec
		}
		if !j.UseBase64Secret {
			return []byte(secret), "configured secret", nil
		}
		key, err := base64.StdEncoding.DecodeString(secret)
		if err != nil {
			return nil, "", errors.New("http.jwt secret (masked) is not valid base64 while use_base64_secret = true")
		}
		return key, "configured secret (base64)", nil
	}
	if psk := cfg.Cluster.Auth.SharedSecret.Reveal(); cfg.Cluster.Enabled && cfg.Cluster.Auth.Enabled && psk != "" {
		return derivePSKKey(psk), "derived from the cluster PSK", nil
	}
	key, err := randomAlphanumeric()
	return key, "random per process (tokens are valid on this node until it restarts)", err
}

// derivePSKKey is lowercase hex of BLAKE3 derive_key(pskKeyContext, psk):
// the 64 hex characters are the HMAC key bytes.
func derivePSKKey(psk string) []byte {
	var out [32]byte
	blake3.DeriveKey(pskKeyContext, []byte(psk), out[:])
	return []byte(hex.EncodeToString(out[:]))
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomAlphanumeric is a 32..63 character secret.
func randomAlphanumeric() ([]byte, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(32))
	if err != nil {
		return nil, fmt.Errorf("random jwt secret: %w", err)
	}
	out := make([]byte, 32+n.Int64())
	for i := range out {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphanumeric))))
		if err != nil {
			return nil, fmt.Errorf("random jwt secret: %w", err)
		}
		out[i] = alphanumeric[k.Int64()]
	}
	return out, nil
}

// issue mints a token for userID; it returns the token and its exp
// (seconds).
func (t *tokens) issue(userID uint32) (string, uint64, error) {
	now := t.now()
	iat := now.Unix()
	exp := iat + neverExpireSeconds
	if t.lifetime > 0 {
		exp = iat + int64(t.lifetime/time.Second)
	}
	jti, err := uuidV7(now)
	if err != nil {
		return "", 0, err
	}
	c := claims{
		ID: jti, Issuer: t.issuer, Audience: jwt.ClaimStrings{t.audience}, Subject: strconv.FormatUint(uint64(userID), 10),
		IssuedAt: jwt.NewNumericDate(time.Unix(iat, 0)), NotBefore: jwt.NewNumericDate(time.Unix(iat, 0).Add(t.notBefore)),
		ExpiresAt: jwt.NewNumericDate(time.Unix(exp, 0)),
	}
	signed, err := jwt.NewWithClaims(t.method, singleAudience{c}).SignedString(t.key)
	if err != nil {
		return "", 0, fmt.Errorf("sign access token: %w", err)
	}
	return signed, uint64(exp), nil
}

// singleAudience serialises aud as one string, as upstream stamps it.
type singleAudience struct{ claims }

func (s singleAudience) MarshalJSON() ([]byte, error) {
	type wireClaims struct {
		Jti string `json:"jti"`
		Iss string `json:"iss"`
		Aud string `json:"aud"`
		Sub string `json:"sub"`
		Iat int64  `json:"iat"`
		Nbf int64  `json:"nbf"`
		Exp int64  `json:"exp"`
	}
	aud := ""
	if len(s.Audience) > 0 {
		aud = s.Audience[0]
	}
	return json.Marshal(wireClaims{Jti: s.ID, Iss: s.Issuer, Aud: aud, Sub: s.Subject,
		Iat: s.IssuedAt.Unix(), Nbf: s.NotBefore.Unix(), Exp: s.ExpiresAt.Unix()})
}

// verify checks a token's signature, issuer, audience, exp and nbf (with
// the clock-skew leeway) and returns its user id and jti.
func (t *tokens) verify(token string) (uint32, string, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.key, nil },
		jwt.WithValidMethods([]string{t.method.Alg()}), jwt.WithLeeway(t.skew), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now))
	if err != nil {
		return 0, "", err
	}
	if !slices.Contains(t.validIssuers, c.Issuer) {
		return 0, "", errors.New("token issuer is not accepted")
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(t.validAudiences, a) }) {
		return 0, "", errors.New("token audience is not accepted")
	}
	uid, err := strconv.ParseUint(c.Subject, 10, 32)
	if err != nil {
		return 0, "", errors.New("token subject is not a user id")
	}
	return uint32(uid), c.ID, nil
}

// uuidV7 is an RFC 9562 version-7 UUID (ms timestamp + random).
func uuidV7(now time.Time) (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[6:]); err != nil {
		return "", fmt.Errorf("token id: %w", err)
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
