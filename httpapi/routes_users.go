package httpapi

import (
	"net/http"
	"sort"

	"github.com/lodestream/lodestream/wire"
)

// getUsers: GET /users.
func (c *call) getUsers() {
	if c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetUsers, nil)
	if !ok {
		return
	}
	users, err := wire.DecodeUsers(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]userJSON, 0, len(users))
	for _, u := range users {
		out = append(out, userOf(u))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// userIdent is {user_id}, where "me" is the caller.
func (c *call) userIdent() (wire.Identifier, bool) {
	if c.r.PathValue("user_id") == "me" {
		return wire.NumericID(c.p.UserID), true
	}
	return c.ident("user_id")
}

// getUser: GET /users/{user_id}.
func (c *call) getUser() {
	id, ok := c.userIdent()
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetUser, wire.IdentRequest{Command: wire.CodeGetUser, ID: id}.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	u, err := wire.DecodeUserDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, userDetailsOf(u))
}

var userStatuses = map[string]wire.UserStatus{"active": wire.UserActive, "inactive": wire.UserInactive}

type createUserRequest struct {
	Username    *string          `json:"username"`
	Password    *string          `json:"password"`
	Status      *string          `json:"status"`
	Permissions *permissionsJSON `json:"permissions"`
}

func (r *createUserRequest) validate() error {
	if err := required(r.Username != nil, "username", r.Password != nil, "password", r.Status != nil, "status"); err != nil {
		return err
	}
	return validStatus(*r.Status)
}

func validStatus(s string) error {
	if _, ok := userStatuses[s]; !ok {
		return errorf("unknown variant `%s`, expected `active` or `inactive`", s)
	}
	return nil
}

// createUser: POST /users → 200 UserInfoDetails.
func (c *call) createUser() {
	var req createUserRequest
	if !c.decodeJSON(&req) {
		return
	}
	perms, err := req.Permissions.toWire()
	if err != nil {
		writePlain(c.w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	// The binary body carries one-byte lengths: longer values are refused
	// with the code the node's rules would give.
	if !fitsName8(*req.Username) {
		writeCode(c.w, wire.ErrInvalidUsername)
		return
	}
	if len(*req.Password) > 255 {
		writeCode(c.w, wire.ErrInvalidPassword)
		return
	}
	body := wire.CreateUserRequest{Username: *req.Username, Password: *req.Password, Status: userStatuses[*req.Status], Permissions: perms}
	reply, ok := c.exec(wire.CodeCreateUser, body.AppendBody(nil))
	if !ok {
		return
	}
	u, err := wire.DecodeUserDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, userDetailsOf(u))
}

type updateUserRequest struct {
	Username *string           `json:"username"`
	Status   *string           `json:"status"`
	Options  map[string]string `json:"options"`
}

func (r *updateUserRequest) validate() error {
	if r.Status != nil {
		return validStatus(*r.Status)
	}
	return nil
}

// updateUser: PUT /users/{user_id} → 204.
func (c *call) updateUser() {
	id, ok := c.userIdent()
	if !ok {
		return
	}
	var req updateUserRequest
	if !c.decodeJSON(&req) {
		return
	}
	body := wire.UpdateUserRequest{User: id, Username: req.Username, Options: stringOptions(req.Options)}
	if req.Username != nil && !fitsName8(*req.Username) {
		writeCode(c.w, wire.ErrInvalidUsername)
		return
	}
	if req.Status != nil {
		st := userStatuses[*req.Status]
		body.Status = &st
	}
	c.execNoContent(wire.CodeUpdateUser, body.AppendBody(nil))
}

// deleteUser: DELETE /users/{user_id} → 204.
func (c *call) deleteUser() {
	id, ok := c.userIdent()
	if !ok {
		return
	}
	c.execNoContent(wire.CodeDeleteUser, wire.IdentRequest{Command: wire.CodeDeleteUser, ID: id}.AppendBody(nil))
}

type changePasswordRequest struct {
	CurrentPassword *string `json:"current_password"`
	NewPassword     *string `json:"new_password"`
}

func (r *changePasswordRequest) validate() error {
	return required(r.CurrentPassword != nil, "current_password", r.NewPassword != nil, "new_password")
}

// changePassword: PUT /users/{user_id}/password → 204.
func (c *call) changePassword() {
	id, ok := c.userIdent()
	if !ok {
		return
	}
	var req changePasswordRequest
	if !c.decodeJSON(&req) {
		return
	}
	if len(*req.CurrentPassword) > 255 || len(*req.NewPassword) > 255 {
		writeCode(c.w, wire.ErrInvalidPassword)
		return
	}
	body := wire.ChangePasswordRequest{User: id, CurrentPassword: *req.CurrentPassword, NewPassword: *req.NewPassword}
	c.execNoContent(wire.CodeChangePassword, body.AppendBody(nil))
}

type permissionsRequest struct {
	Permissions *permissionsJSON `json:"permissions"`
}

// updatePermissions: PUT /users/{user_id}/permissions → 204.
func (c *call) updatePermissions() {
	id, ok := c.userIdent()
	if !ok {
		return
	}
	var req permissionsRequest
	if !c.decodeJSON(&req) {
		return
	}
	perms, err := req.Permissions.toWire()
	if err != nil {
		writePlain(c.w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	c.execNoContent(wire.CodeUpdatePermissions, wire.UpdatePermissionsRequest{User: id, Permissions: perms}.AppendBody(nil))
}

// getPATs: GET /personal-access-tokens (the caller's, by name).
func (c *call) getPATs() {
	if c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetPersonalAccessTokens, nil)
	if !ok {
		return
	}
	pats, err := wire.DecodePersonalAccessTokens(reply)
	if !c.decoded(err) {
		return
	}
	sort.Slice(pats, func(i, j int) bool { return pats[i].Name < pats[j].Name })
	out := make([]patJSON, 0, len(pats))
	for _, p := range pats {
		pj := patJSON{Name: p.Name}
		if p.ExpiryAt != 0 {
			at := p.ExpiryAt
			pj.ExpiryAt = &at
		}
		out = append(out, pj)
	}
	writeJSON(c.w, http.StatusOK, out)
}

type createPATRequest struct {
	Name   *string `json:"name"`
	Expiry *uint64 `json:"expiry"`
}

func (r *createPATRequest) validate() error {
	return required(r.Name != nil, "name", r.Expiry != nil, "expiry")
}

// createPAT: POST /personal-access-tokens → 200 {"token"}.
func (c *call) createPAT() {
	var req createPATRequest
	if !c.decodeJSON(&req) {
		return
	}
	if !fitsName8(*req.Name) {
		writeCode(c.w, wire.ErrInvalidPersonalAccessTokenName)
		return
	}
	body := wire.CreatePersonalAccessTokenRequest{Name: *req.Name, ExpiryMicros: uint64(*req.Expiry)}
	reply, ok := c.exec(wire.CodeCreatePersonalAccessToken, body.AppendBody(nil))
	if !ok {
		return
	}
	raw, err := wire.DecodeRawToken(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, rawPATJSON{Token: raw.Token})
}

// deletePAT: DELETE /personal-access-tokens/{name} → 204.
func (c *call) deletePAT() {
	name := c.r.PathValue("name")
	if !fitsName8(name) {
		writeCode(c.w, wire.ErrInvalidPersonalAccessTokenName)
		return
	}
	c.execNoContent(wire.CodeDeletePersonalAccessToken, wire.DeletePersonalAccessTokenRequest{Name: name}.AppendBody(nil))
}

// execNoContent runs a write answered 204.
func (c *call) execNoContent(code wire.CommandCode, body []byte) {
	if _, ok := c.exec(code, body); ok {
		c.w.WriteHeader(http.StatusNoContent)
	}
}

// fitsName8 reports whether s fits a one-byte-length wire name (1..255).
func fitsName8(s string) bool { return len(s) >= 1 && len(s) <= 255 }
