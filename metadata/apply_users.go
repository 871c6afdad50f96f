package metadata

// Users and personal access tokens.

func validStatus(st UserStatus) bool { return st == UserActive || st == UserInactive }

func validHash(h string) bool { return len(h) > 0 && len(h) <= PasswordHashBytesMax }

// validPermissions bounds a permission set so snapshots stay bounded.
func validPermissions(p *Permissions) bool {
	if p == nil {
		return true
	}
	if len(p.Streams) > StreamsMax {
		return false
	}
	for _, sp := range p.Streams {
		if len(sp.Topics) > TopicsPerStreamMax {
			return false
		}
	}
	return true
}

func (s *State) applyCreateUser(ctx ApplyContext, c CreateUser) Result {
	if !s.authorize(ctx.UserID, PermManageUsers, 0, 0) {
		return fail(CodeUnauthorized)
	}
	if !validUsername(c.Username) {
		return fail(CodeInvalidUsername)
	}
	if _, dup := s.userByName[c.Username]; dup {
		return fail(CodeUserAlreadyExists)
	}
	if !validStatus(c.Status) {
		return fail(CodeInvalidUserStatus)
	}
	if !validHash(c.PasswordHash) {
		return fail(CodeInvalidPassword)
	}
	if !validPermissions(c.Permissions) {
		return fail(CodeInvalidOptionValue)
	}
	id, ok := lowestFree(s.users, UsersMax, &s.userIDHint)
	if !ok {
		return fail(CodeUsersLimitReached)
	}
	u := &userState{
		id: id, username: c.Username, passwordHash: c.PasswordHash, status: c.Status,
		createdAt: ctx.Timestamp, permissions: c.Permissions.Clone(),
		pats: make(map[string]PersonalAccessToken),
	}
	s.users[id] = u
	s.userByName[u.username] = id
	v := u.view()
	return Result{User: &v}
}

func (s *State) applyUpdateUser(ctx ApplyContext, c UpdateUser) Result {
	if !s.authorize(ctx.UserID, PermManageUsers, 0, 0) {
		return fail(CodeUnauthorized)
	}
	u, code := s.resolveUser(c.User)
	if code != CodeOK {
		return fail(code)
	}
	if c.Username != nil {
		if !validUsername(*c.Username) {
			return fail(CodeInvalidUsername)
		}
		if other, dup := s.userByName[*c.Username]; dup && other != u.id {
			return fail(CodeUserAlreadyExists)
		}
	}
	if c.Status != nil && !validStatus(*c.Status) {
		return fail(CodeInvalidUserStatus)
	}
	if c.Username != nil {
		delete(s.userByName, u.username)
		u.username = *c.Username
		s.userByName[u.username] = u.id
	}
	if c.Status != nil {
		u.status = *c.Status
	}
	return Result{}
}

func (s *State) applyDeleteUser(ctx ApplyContext, c DeleteUser) Result {
	if !s.authorize(ctx.UserID, PermManageUsers, 0, 0) {
		return fail(CodeUnauthorized)
	}
	u, code := s.resolveUser(c.User)
	if code != CodeOK {
		return fail(code)
	}
	if u.id == RootUserID {
		return fail(CodeCannotDeleteUser)
	}
	for _, p := range u.pats {
		delete(s.patByHash, p.TokenHash)
	}
	delete(s.users, u.id)
	delete(s.userByName, u.username)
	lowerHint(&s.userIDHint, u.id)
	return Result{}
}

func (s *State) applyChangePassword(ctx ApplyContext, c ChangePassword) Result {
	u, code := s.resolveUser(c.User)
	if code != CodeOK {
		return fail(code)
	}
	// Changing one's own password is exempt from manage_users.
	if u.id != ctx.UserID && !s.authorize(ctx.UserID, PermManageUsers, 0, 0) {
		return fail(CodeUnauthorized)
	}
	if _, ok := s.users[ctx.UserID]; !ok {
		return fail(CodeUnauthorized)
	}
	if c.CurrentPasswordMismatch {
		return fail(CodeInvalidCredentials)
	}
	if !validHash(c.NewPasswordHash) {
		return fail(CodeInvalidPassword)
	}
	u.passwordHash = c.NewPasswordHash
	return Result{}
}

func (s *State) applyUpdatePermissions(ctx ApplyContext, c UpdatePermissions) Result {
	if !s.authorize(ctx.UserID, PermManageUsers, 0, 0) {
		return fail(CodeUnauthorized)
	}
	u, code := s.resolveUser(c.User)
	if code != CodeOK {
		return fail(code)
	}
	if u.id == RootUserID {
		return fail(CodeCannotChangePerms)
	}
	if !validPermissions(c.Permissions) {
		return fail(CodeInvalidOptionValue)
	}
	u.permissions = c.Permissions.Clone()
	return Result{}
}

func validPATName(name string) bool {
	return len(name) >= PATNameBytesMin && len(name) <= PATNameBytesMax && validName(name)
}

// validTokenHash: 64 lowercase hex characters (SHA-256).
func validTokenHash(h string) bool {
	if len(h) != PATHashHexBytes {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// patExpiryAt converts a lifetime to an absolute expiry (0 = never).
func patExpiryAt(now, lifetime uint64) uint64 {
	if lifetime == 0 || lifetime == Never || now+lifetime < now {
		return 0
	}
	return now + lifetime
}

func (s *State) applyCreatePAT(ctx ApplyContext, c CreatePersonalAccessToken) Result {
	u, ok := s.users[ctx.UserID]
	if !ok {
		return fail(CodeUnauthorized)
	}
	if !validPATName(c.Name) {
		return fail(CodeInvalidPATName)
	}
	if _, dup := u.pats[c.Name]; dup {
		return fail(CodePATAlreadyExists)
	}
	if len(u.pats) >= PATsPerUserMax {
		return fail(CodePATLimitReached)
	}
	if !validTokenHash(c.TokenHash) {
		return fail(CodeInvalidPAT)
	}
	if _, dup := s.patByHash[c.TokenHash]; dup {
		return fail(CodePATAlreadyExists)
	}
	expiryAt := patExpiryAt(ctx.Timestamp, c.Expiry)
	if expiryAt != 0 && expiryAt <= ctx.Timestamp {
		return fail(CodeInvalidPATExpiry)
	}
	u.pats[c.Name] = PersonalAccessToken{Name: c.Name, TokenHash: c.TokenHash, ExpiryAt: expiryAt}
	s.patByHash[c.TokenHash] = patRef{userID: u.id, name: c.Name}
	return Result{}
}

func (s *State) applyDeletePAT(ctx ApplyContext, c DeletePersonalAccessToken) Result {
	u, ok := s.users[ctx.UserID]
	if !ok {
		return fail(CodeUnauthorized)
	}
	p, ok := u.pats[c.Name]
	if !ok {
		return fail(CodeResourceNotFound)
	}
	delete(u.pats, c.Name)
	delete(s.patByHash, p.TokenHash)
	return Result{}
}

func (s *State) applyDeleteExpiredTokens(ctx ApplyContext) Result {
	for _, u := range s.users {
		for name, p := range u.pats {
			if p.ExpiryAt != 0 && p.ExpiryAt <= ctx.Timestamp {
				delete(u.pats, name)
				delete(s.patByHash, p.TokenHash)
			}
		}
	}
	return Result{}
}
