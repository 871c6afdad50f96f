package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/node"
	"github.com/lodestream/lodestream/wire"
)

// bearerPrefix is exact (case-sensitive, one space), as upstream's.
const bearerPrefix = "Bearer "

// authenticate resolves the bearer (spec §2.1): a self-issued JWT first,
// then a trusted issuer's JWT (jwks.go), else a raw personal access token. Missing or malformed → 401 (77); both
// readings failing → 401 (40). Tokens are never logged.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (node.Principal, bool) {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, bearerPrefix) || len(h) == len(bearerPrefix) {
		writeCode(w, wire.ErrAccessTokenMissing)
		return node.Principal{}, false
	}
	credential := h[len(bearerPrefix):]
	if uid, jti, err := s.tokens.verify(credential); err == nil {
		return node.Principal{UserID: uid, Key: "jwt:" + jti, Remote: r.RemoteAddr}, true
	}
	switch uid, ti, err := s.trusted.verify(r.Context(), credential); {
	case err == nil:
		return node.Principal{UserID: uid, Key: "ext:" + metadata.HashToken(credential), Remote: r.RemoteAddr}, true
	case !errors.Is(err, errNotTrusted):
		// It names a trusted issuer but does not verify: fail closed (no PAT reading).
		s.log.Debug("trusted-issuer token refused", "issuer", ti.cfg.Issuer, "err", err)
		writeCode(w, wire.ErrUnauthenticated)
		return node.Principal{}, false
	}
	if uid, code := s.node.CheckPAT(credential); code == wire.OK {
		return node.Principal{UserID: uid, Key: "pat:" + metadata.HashToken(credential), Remote: r.RemoteAddr}, true
	}
	writeCode(w, wire.ErrUnauthenticated)
	return node.Principal{}, false
}

// identityInfo is the login reply (spec §2.3): expiry in seconds.
type identityInfo struct {
	UserID      uint32       `json:"user_id"`
	AccessToken *accessToken `json:"access_token"`
}

type accessToken struct {
	Token  string `json:"token"`
	Expiry uint64 `json:"expiry"`
}

func (c *call) answerIdentity(userID uint32) {
	token, exp, err := c.s.tokens.issue(userID)
	if err != nil {
		c.s.log.Error("issuing an access token", "err", err)
		writeCode(c.w, wire.ErrError)
		return
	}
	writeJSON(c.w, http.StatusOK, identityInfo{UserID: userID, AccessToken: &accessToken{Token: token, Expiry: exp}})
}

type loginRequest struct {
	Username *string `json:"username"`
	Password *string `json:"password"`
	Version  *string `json:"version"`
	Context  *string `json:"context"`
}

func (l *loginRequest) validate() error {
	return required(l.Username != nil, "username", l.Password != nil, "password")
}

// login: POST /users/login. Every failure is 400 invalid_credentials.
func (c *call) login() {
	var req loginRequest
	if !c.decodeJSON(&req) {
		return
	}
	uid, code := c.s.node.CheckPassword(c.r.Context(), c.r.RemoteAddr, *req.Username, *req.Password)
	if code != wire.OK {
		writeCode(c.w, code)
		return
	}
	c.answerIdentity(uid)
}

type tokenRequest struct {
	Token *string `json:"token"`
}

func (t *tokenRequest) validate() error { return required(t.Token != nil, "token") }

// patLogin: POST /personal-access-tokens/login.
func (c *call) patLogin() {
	var req tokenRequest
	if !c.decodeJSON(&req) {
		return
	}
	uid, code := c.s.node.CheckPAT(*req.Token)
	if code != wire.OK {
		writeCode(c.w, code)
		return
	}
	c.answerIdentity(uid)
}

// refreshToken: POST /users/refresh-token. The old token stays valid.
func (c *call) refreshToken() {
	var req tokenRequest
	if !c.decodeJSON(&req) {
		return
	}
	uid, _, err := c.s.tokens.verify(*req.Token)
	if err != nil {
		if _, _, terr := c.s.trusted.verify(c.r.Context(), *req.Token); terr == nil {
			// An external grant keeps the issuer's lifetime: never exchanged for ours.
			writeCode(c.w, wire.ErrInvalidAccessToken)
			return
		}
		writeCode(c.w, wire.ErrUnauthenticated)
		return
	}
	c.answerIdentity(uid)
}

// logout: DELETE /users/logout. Releases the credential's session; the
// token is not revoked (spec §2.2).
func (c *call) logout() {
	c.s.node.EndPrincipal(c.p.Key)
	c.w.WriteHeader(http.StatusNoContent)
}
