package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lodestream/lodestream/config"
)

// Trusted external issuers (spec http-api §2.4, `[[http.jwt.trusted_issuers]]`): a bearer that is
// not one of ours is classified by its unverified `iss` (scheme and host lowercased); when that
// names a trusted issuer it is verified with the issuer's JWKS key named by the header's `kid`
// (required), with the algorithm of the header (RS*, PS* or ES*, matching the key's type), the
// entry's issuer (exactly, as configured) and audience (unchecked when the entry has none), exp required and nbf checked, both with http.jwt.clock_skew.
// Its `sub` is then replaced by the entry's user_id.
//
// Keys are cached per (issuer, kid). A miss fetches the issuer's key set — one fetch at a time per
// issuer, and at most one per jwksRefetchInterval: inside that window a miss is final, so callers
// replaying unknown kids cannot make the server hammer the issuer. A fetch replaces the issuer's
// cached keys (rotated-away kids are forgotten). Fetches are bounded: jwksFetchTimeout, a body of
// jwksBodyMax bytes, jwksKeysMax keys, no redirects.
const (
	jwksRefetchInterval = 10 * time.Second
	jwksFetchTimeout    = 5 * time.Second
	jwksBodyMax         = 1 << 20
	jwksKeysMax         = 256
)

type trustedIssuers struct {
	byIssuer map[string]*trustedIssuer // by normalized issuer
	client   *http.Client
	skew     time.Duration
	log      *slog.Logger
	now      func() time.Time
	// fetches counts JWKS fetches (tests).
	fetches func()
}

type trustedIssuer struct {
	cfg config.TrustedIssuer

	fetchMu   sync.Mutex // one fetch at a time; guards lastFetch
	lastFetch time.Time

	mu   sync.RWMutex
	keys map[string]any // kid → *rsa.PublicKey or *ecdsa.PublicKey
}

// normalizeIssuer lowercases an issuer URL's scheme and host, keeping its path; without a scheme the
// whole string is lowercased and a trailing slash dropped.
func normalizeIssuer(iss string) string {
	scheme, rest, ok := strings.Cut(iss, "://")
	if !ok {
		return strings.ToLower(strings.TrimRight(iss, "/"))
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	return strings.ToLower(scheme) + "://" + strings.ToLower(host) + path
}

// newTrustedIssuers is nil without trusted issuers. config.Validate has checked the entries.
func newTrustedIssuers(cfg *config.Config, log *slog.Logger) *trustedIssuers {
	entries := cfg.HTTP.JWT.TrustedIssuers
	if len(entries) == 0 {
		return nil
	}
	t := &trustedIssuers{byIssuer: make(map[string]*trustedIssuer, len(entries)), skew: cfg.HTTP.JWT.ClockSkew.Duration,
		log: log, now: time.Now, fetches: func() {},
		client: &http.Client{
			Timeout: jwksFetchTimeout,
			Transport: &http.Transport{
				DialContext:            (&net.Dialer{Timeout: jwksFetchTimeout}).DialContext,
				TLSHandshakeTimeout:    jwksFetchTimeout,
				ResponseHeaderTimeout:  jwksFetchTimeout,
				MaxResponseHeaderBytes: 64 << 10,
				DisableKeepAlives:      true, // at most one fetch per issuer per 10 s: nothing to keep alive
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("JWKS redirects are not followed") },
		}}
	for _, e := range entries {
		t.byIssuer[normalizeIssuer(e.Issuer)] = &trustedIssuer{cfg: e, keys: map[string]any{}}
		if e.Audience == "" {
			log.Warn("trusted issuer without an audience: its tokens' aud is not checked", "issuer", e.Issuer)
		}
	}
	return t
}

var errNotTrusted = errors.New("token is not from a trusted issuer")

// externalAlgs are the algorithms a trusted issuer's token may name.
var externalAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// verify checks an external token; it returns the configured user id and the token's issuer entry.
// errNotTrusted: the token names no trusted issuer (the caller tries other readings).
func (t *trustedIssuers) verify(ctx context.Context, token string) (uint32, *trustedIssuer, error) {
	if t == nil {
		return 0, nil, errNotTrusted
	}
	var unverified jwt.RegisteredClaims
	parsed, _, err := jwt.NewParser().ParseUnverified(token, &unverified)
	if err != nil {
		return 0, nil, errNotTrusted
	}
	ti, ok := t.byIssuer[normalizeIssuer(unverified.Issuer)]
	if !ok {
		return 0, nil, errNotTrusted
	}
	kid, _ := parsed.Header["kid"].(string)
	if kid == "" {
		return 0, ti, errors.New("trusted-issuer token without a kid header")
	}
	key, err := t.key(ctx, ti, kid)
	if err != nil {
		return 0, ti, err
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(externalAlgs), jwt.WithLeeway(t.skew), jwt.WithExpirationRequired(),
		jwt.WithIssuer(ti.cfg.Issuer), jwt.WithTimeFunc(t.now)}
	if ti.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(ti.cfg.Audience))
	}
	var c jwt.RegisteredClaims
	if _, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return key, nil }, opts...); err != nil {
		return 0, ti, fmt.Errorf("trusted-issuer token: %w", err)
	}
	return ti.cfg.UserID, ti, nil // sub is replaced by the configured user
}

// key is the issuer's key kid, fetched on a miss within the refetch bound.
func (t *trustedIssuers) key(ctx context.Context, ti *trustedIssuer, kid string) (any, error) {
	if k := ti.cached(kid); k != nil {
		return k, nil
	}
	ti.fetchMu.Lock()
	defer ti.fetchMu.Unlock()
	if k := ti.cached(kid); k != nil {
		return k, nil // fetched while this caller waited
	}
	if !ti.lastFetch.IsZero() && t.now().Sub(ti.lastFetch) < jwksRefetchInterval {
		return nil, fmt.Errorf("kid %q not in the key set of %s (fetched %s ago)", kid, ti.cfg.Issuer, t.now().Sub(ti.lastFetch).Round(time.Millisecond))
	}
	ti.lastFetch = t.now() // a failing issuer is rate-limited too
	t.fetches()
	keys, err := t.fetch(ctx, ti.cfg.JWKSURL)
	if err != nil {
		t.log.Warn("cannot fetch the JWKS of a trusted issuer", "issuer", ti.cfg.Issuer, "url", ti.cfg.JWKSURL, "err", err)
		return nil, err
	}
	ti.mu.Lock()
	ti.keys = keys
	ti.mu.Unlock()
	if k := ti.cached(kid); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("kid %q not in the key set of %s", kid, ti.cfg.Issuer)
}

func (ti *trustedIssuer) cached(kid string) any {
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.keys[kid]
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// fetch reads a key set: RSA and EC (P-256/384/521) signing keys with a kid; others are skipped.
func (t *trustedIssuers) fetch(ctx context.Context, url string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksBodyMax+1))
	if err != nil {
		return nil, fmt.Errorf("jwks read: %w", err)
	}
	if len(body) > jwksBodyMax {
		return nil, fmt.Errorf("jwks above %d bytes", jwksBodyMax)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("jwks parse: %w", err)
	}
	if len(set.Keys) > jwksKeysMax {
		return nil, fmt.Errorf("jwks holds %d keys, more than %d", len(set.Keys), jwksKeysMax)
	}
	out := make(map[string]any, len(set.Keys))
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		key, err := k.publicKey()
		if err != nil {
			return nil, fmt.Errorf("jwks key %q: %w", k.Kid, err)
		}
		if key != nil {
			out[k.Kid] = key
		}
	}
	return out, nil
}

func b64url(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// publicKey decodes an RSA or EC key; nil for key types not used for signatures here.
func (k jwk) publicKey() (any, error) {
	switch k.Kty {
	case "RSA":
		n, err := b64url(k.N)
		if err != nil || len(n) == 0 {
			return nil, errors.New("bad RSA modulus")
		}
		e, err := b64url(k.E)
		if err != nil || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA exponent")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key of %d bits, want at least 2048", pub.N.BitLen())
		}
		return pub, nil
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, nil
		}
		x, errX := b64url(k.X)
		y, errY := b64url(k.Y)
		if errX != nil || errY != nil {
			return nil, errors.New("bad EC coordinates")
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, errors.New("EC coordinates of the wrong size")
		}
		// Checked on the curve by parsing the uncompressed point.
		point := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return nil, fmt.Errorf("EC point: %w", err)
		}
		return pub, nil
	}
	return nil, nil
}
