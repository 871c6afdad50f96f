package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lodestream/lodestream/config"
)

// jwksServer serves a key set that tests replace, on loopback, and counts fetches.
type jwksServer struct {
	mu      sync.Mutex
	body    []byte
	fetches atomic.Int32
	url     string
}

func newJWKSServer(t *testing.T) *jwksServer {
	j := &jwksServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.fetches.Add(1)
		j.mu.Lock()
		defer j.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(j.body)
	}))
	t.Cleanup(srv.Close)
	j.url = srv.URL + "/.well-known/jwks.json"
	return j
}

func (j *jwksServer) serve(keys ...map[string]string) {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	j.mu.Lock()
	j.body = b
	j.mu.Unlock()
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PrivateKey) map[string]string {
	return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PrivateKey) map[string]string {
	raw, _ := k.PublicKey.Bytes() // 0x04 || X || Y
	n := (len(raw) - 1) / 2
	return map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(raw[1 : 1+n]), "y": b64(raw[1+n:])}
}

// externalToken signs claims with method and key, naming kid ("" for none).
func externalToken(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsFor(iss, aud string, exp time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": iss, "aud": aud, "sub": "someone@idp", "exp": exp.Unix(), "iat": time.Now().Unix()}
}

func TestNormalizeIssuer(t *testing.T) {
	for in, want := range map[string]string{"HTTPS://Example.COM/PATH": "https://example.com/PATH",
		"HTTPS://Example.COM": "https://example.com", "Example.COM/": "example.com", "https://example.com/p": "https://example.com/p"} {
		if got := normalizeIssuer(in); got != want {
			t.Errorf("normalizeIssuer(%q) = %q, want %q", in, got, want)
		}
	}
}

// End to end on a node: a trusted issuer's RS256 and ES256 tokens act as the configured user; every
// way of failing verification is 401; the refresh route refuses external tokens with 78.
func TestTrustedIssuerTokens(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := newJWKSServer(t)
	jwks.serve(rsaJWK("r1", rsaKey), ecJWK("e1", ecKey))
	ts := startServer(t, func(c *config.Config) {
		c.HTTP.JWT.TrustedIssuers = []config.TrustedIssuer{{Issuer: "https://idp.example", Audience: "iggy", JWKSURL: jwks.url, UserID: 1}}
	})
	root := ts.login("iggy", "iggy")
	expect(t, ts.do("POST", "/users", root, map[string]any{"username": "robot", "password": "secret1", "status": "active",
		"permissions": map[string]any{"global": map[string]bool{"manage_servers": false, "read_servers": false, "manage_users": false,
			"read_users": false, "manage_streams": false, "read_streams": true, "manage_topics": false, "read_topics": false,
			"poll_messages": false, "send_messages": false}}}), 200, "")

	exp := time.Now().Add(time.Hour)
	good := externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", claimsFor("https://idp.example", "iggy", exp))
	var me struct {
		ID       uint32 `json:"id"`
		Username string `json:"username"`
	}
	expect(t, ts.do("GET", "/users/me", good, nil), 200, "").json(t, &me)
	if me.ID != 1 || me.Username != "robot" {
		t.Fatalf("external token acts as %+v, want user 1 (robot)", me)
	}
	expect(t, ts.do("GET", "/streams", good, nil), 200, "")
	expect(t, ts.do("POST", "/streams", good, map[string]string{"name": "x"}), 403, "unauthorized") // robot's permissions
	ec := externalToken(t, jwt.SigningMethodES256, ecKey, "e1", claimsFor("https://idp.example", "iggy", exp))
	expect(t, ts.do("GET", "/streams", ec, nil), 200, "")
	fetched := jwks.fetches.Load()
	if fetched != 1 {
		t.Fatalf("JWKS fetched %d times for two cached kids, want 1", fetched)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, tok := range map[string]string{
		"wrong audience": externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", claimsFor("https://idp.example", "else", exp)),
		"expired":        externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", claimsFor("https://idp.example", "iggy", time.Now().Add(-time.Minute))),
		"no kid":         externalToken(t, jwt.SigningMethodRS256, rsaKey, "", claimsFor("https://idp.example", "iggy", exp)),
		"other key":      externalToken(t, jwt.SigningMethodRS256, other, "r1", claimsFor("https://idp.example", "iggy", exp)),
		"alg confusion":  externalToken(t, jwt.SigningMethodHS256, []byte(b64(rsaKey.N.Bytes())), "r1", claimsFor("https://idp.example", "iggy", exp)),
		"ec kid as rsa":  externalToken(t, jwt.SigningMethodRS256, rsaKey, "e1", claimsFor("https://idp.example", "iggy", exp)),
		// Classified by the normalized issuer, but verified against the entry's exact issuer.
		"iss case differs": externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", claimsFor("HTTPS://IdP.Example", "iggy", exp)),
		"untrusted iss":    externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", claimsFor("https://evil.example", "iggy", exp)),
		"no exp": externalToken(t, jwt.SigningMethodRS256, rsaKey, "r1", jwt.MapClaims{"iss": "https://idp.example", "aud": "iggy",
			"sub": "x"}),
	} {
		if r := ts.do("GET", "/streams", tok, nil); r.status != 401 {
			t.Errorf("%s: %d %s, want 401", name, r.status, r.body)
		}
	}
	expect(t, ts.do("POST", "/users/refresh-token", "", map[string]string{"token": good}), 401, "invalid_access_token")
	if n := jwks.fetches.Load(); n != fetched {
		t.Errorf("bad tokens with known kids fetched the JWKS %d more times", n-fetched)
	}
}

// The fetch bound: a miss fetches at most once per issuer per 10 s, concurrent misses share one
// fetch, a fetch replaces the cached keys (a rotated-away kid is forgotten), and oversized or broken
// key sets are refused.
func TestJWKSFetchBounds(t *testing.T) {
	k1, _ := rsa.GenerateKey(rand.Reader, 2048)
	k2, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := newJWKSServer(t)
	jwks.serve(rsaJWK("k1", k1))
	cfg, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTP.JWT.TrustedIssuers = []config.TrustedIssuer{{Issuer: "https://idp", Audience: "iggy", JWKSURL: jwks.url, UserID: 5}}
	ti := newTrustedIssuers(cfg, quietLogger())
	clock := time.Now()
	ti.now = func() time.Time { return clock }
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	verify := func(key *rsa.PrivateKey, kid string) error {
		_, _, err := ti.verify(ctx, externalToken(t, jwt.SigningMethodRS256, key, kid, claimsFor("https://idp", "iggy", exp)))
		return err
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := verify(k1, "k1"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := jwks.fetches.Load(); n != 1 {
		t.Fatalf("8 concurrent first uses fetched %d times, want 1", n)
	}
	// Unknown kids inside the window: refused without fetching.
	for i := range 20 {
		if err := verify(k1, "unknown-"+strings.Repeat("x", i)); err == nil {
			t.Fatal("an unknown kid verified")
		}
	}
	if n := jwks.fetches.Load(); n != 1 {
		t.Fatalf("unknown kids fetched %d times inside the window, want 1 in all", n)
	}
	// The issuer rotates to k2: found once the window has passed; k1 is then forgotten.
	jwks.serve(rsaJWK("k2", k2))
	if err := verify(k2, "k2"); err == nil {
		t.Fatal("k2 verified inside the window")
	}
	clock = clock.Add(jwksRefetchInterval + time.Second)
	if err := verify(k2, "k2"); err != nil {
		t.Fatalf("k2 after the window: %v", err)
	}
	if err := verify(k1, "k1"); err == nil {
		t.Fatal("a rotated-away kid still verifies")
	}
	if n := jwks.fetches.Load(); n != 2 {
		t.Fatalf("fetches %d, want 2", n)
	}
	// An oversized key set is refused (and rate-limited like any failure).
	jwks.mu.Lock()
	jwks.body = []byte(`{"keys":[` + strings.Repeat(" ", jwksBodyMax) + `]}`)
	jwks.mu.Unlock()
	clock = clock.Add(jwksRefetchInterval + time.Second)
	if err := verify(k2, "k3"); err == nil || !strings.Contains(err.Error(), "above") {
		t.Fatalf("oversized JWKS: %v", err)
	}
	// A small RSA key is refused.
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	jwks.serve(rsaJWK("weak", weak))
	clock = clock.Add(jwksRefetchInterval + time.Second)
	if err := verify(weak, "weak"); err == nil {
		t.Fatal("a 1024-bit key verified")
	}
}
