package httpapi

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/zeebo/blake3"

	"github.com/lodestream/lodestream/config"
)

func jwtConfig(t *testing.T, mutate func(*config.Config)) *config.Config {
	t.Helper()
	cfg, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(cfg)
	}
	return cfg
}

func TestJWTKeyDerivedFromClusterPSK(t *testing.T) {
	psk := strings.Repeat("k", 32)
	cfg := jwtConfig(t, func(c *config.Config) {
		c.Cluster.Enabled, c.Cluster.Auth.Enabled, c.Cluster.Auth.SharedSecret = true, true, config.Secret(psk)
	})
	a, err := newTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want [32]byte
	blake3.DeriveKey("apache-iggy server http-jwt v1 psk->hs256-key", []byte(psk), want[:])
	if string(a.key) != hex.EncodeToString(want[:]) || len(a.key) != 64 {
		t.Fatalf("key %q, want lowercase hex of the derived key", a.key)
	}
	// A second node with the same PSK verifies the first one's tokens.
	b, _ := newTokens(cfg)
	tok, _, err := a.issue(3)
	if err != nil {
		t.Fatal(err)
	}
	if uid, _, err := b.verify(tok); err != nil || uid != 3 {
		t.Fatalf("cross-node verify: %d %v", uid, err)
	}
	// Explicit secrets win over the PSK.
	cfg.HTTP.JWT.EncodingSecret = "explicit-secret"
	c, _ := newTokens(cfg)
	if string(c.key) != "explicit-secret" {
		t.Fatalf("explicit secret lost: %q", c.key)
	}
	if _, _, err := c.verify(tok); err == nil {
		t.Fatal("a token signed with the PSK key verified under the explicit secret")
	}
}

func TestJWTKeySources(t *testing.T) {
	cfg := jwtConfig(t, func(c *config.Config) {
		c.HTTP.JWT.DecodingSecret = config.Secret(base64.StdEncoding.EncodeToString([]byte("raw-key-bytes")))
		c.HTTP.JWT.UseBase64Secret = true
	})
	tk, err := newTokens(cfg)
	if err != nil || string(tk.key) != "raw-key-bytes" {
		t.Fatalf("base64 decoding secret: %q %v", tk.key, err)
	}
	cfg.HTTP.JWT.EncodingSecret = "other"
	cfg.HTTP.JWT.UseBase64Secret = false
	if _, err := newTokens(cfg); err == nil || strings.Contains(err.Error(), "other") {
		t.Fatalf("differing secrets: %v (and the error must not reveal them)", err)
	}
	r1, _ := newTokens(jwtConfig(t, nil))
	r2, _ := newTokens(jwtConfig(t, nil))
	if len(r1.key) < 32 || len(r1.key) > 63 || string(r1.key) == string(r2.key) {
		t.Fatalf("random keys %q %q", r1.key, r2.key)
	}
	if _, err := newTokens(jwtConfig(t, func(c *config.Config) { c.HTTP.JWT.Algorithm = "RS256" })); err == nil {
		t.Fatal("RS256 accepted")
	}
}

func TestJWTClaimsAndValidation(t *testing.T) {
	cfg := jwtConfig(t, func(c *config.Config) {
		c.HTTP.JWT.EncodingSecret = "s3cret"
		c.HTTP.JWT.Algorithm = "HS384"
	})
	tk, err := newTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tk.now = func() time.Time { return now }
	tok, exp, err := tk.issue(7)
	if err != nil {
		t.Fatal(err)
	}
	if exp != uint64(now.Unix())+3600 {
		t.Fatalf("exp %d", exp)
	}
	parts := strings.Split(tok, ".")
	var header, claims map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(hb, &header)
	_ = json.Unmarshal(cb, &claims)
	if header["alg"] != "HS384" || header["typ"] != "JWT" {
		t.Fatalf("header %v", header)
	}
	if claims["sub"] != "7" || claims["aud"] != "iggy.apache.org" || claims["iss"] != "iggy.apache.org" ||
		claims["iat"] != float64(now.Unix()) || claims["nbf"] != float64(now.Unix()) || len(claims["jti"].(string)) != 36 {
		t.Fatalf("claims %v", claims)
	}
	// Expired beyond the clock skew: refused; within it: accepted.
	now = now.Add(time.Hour + 4*time.Second)
	if _, _, err := tk.verify(tok); err != nil {
		t.Fatalf("within skew: %v", err)
	}
	now = now.Add(2 * time.Second)
	if _, _, err := tk.verify(tok); err == nil {
		t.Fatal("expired token accepted")
	}
	now = time.Unix(1_800_000_000, 0)
	// Another algorithm with the same key, a foreign issuer or audience, a
	// non-numeric subject: refused.
	forge := func(method jwt.SigningMethod, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, c).SignedString([]byte("s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "1", "iss": "iggy.apache.org", "aud": "iggy.apache.org", "exp": now.Unix() + 60, "jti": "x"}
	}
	if _, _, err := tk.verify(forge(jwt.SigningMethodHS384, base())); err != nil {
		t.Fatalf("well-formed token refused: %v", err)
	}
	for name, tok := range map[string]string{
		"alg":      forge(jwt.SigningMethodHS256, base()),
		"issuer":   forge(jwt.SigningMethodHS384, func() jwt.MapClaims { c := base(); c["iss"] = "evil"; return c }()),
		"audience": forge(jwt.SigningMethodHS384, func() jwt.MapClaims { c := base(); c["aud"] = []string{"evil"}; return c }()),
		"subject":  forge(jwt.SigningMethodHS384, func() jwt.MapClaims { c := base(); c["sub"] = "root"; return c }()),
		"no exp":   forge(jwt.SigningMethodHS384, func() jwt.MapClaims { c := base(); delete(c, "exp"); return c }()),
		"nbf":      forge(jwt.SigningMethodHS384, func() jwt.MapClaims { c := base(); c["nbf"] = now.Unix() + 60; return c }()),
	} {
		if _, _, err := tk.verify(tok); err == nil {
			t.Errorf("%s: forged token accepted", name)
		}
	}
}

func TestByteSizeStrings(t *testing.T) {
	for v, want := range map[uint64]string{0: "0 B", 1: "1 B", 999: "999 B", 1000: "1 KB", 1024: "1 KiB", 69092: "69.092 KB",
		150949888: "147412 KiB", 1 << 20: "1 MiB", 1_500_000: "1.5 MB", 1537: "1.537 KB", 12345: "12.345 KB", 1234567: "1234.567 KB", 1234: "1.234 KB", 12341: "12.341 KB", 123456789: "123456.789 KB", 1 << 30: "1 GiB"} {
		if got := byteSize(v).String(); got != want {
			t.Errorf("%d: %q, want %q", v, got, want)
		}
	}
}
