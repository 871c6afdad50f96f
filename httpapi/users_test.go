package httpapi

import (
	"strings"
	"testing"
)

func TestUserRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	perms := map[string]any{
		"global": map[string]bool{"manage_servers": false, "read_servers": true, "manage_users": false, "read_users": true,
			"manage_streams": false, "read_streams": true, "manage_topics": false, "read_topics": true,
			"poll_messages": true, "send_messages": true},
		"streams": map[string]any{"0": map[string]any{"manage_stream": false, "read_stream": true, "manage_topics": false,
			"read_topics": true, "poll_messages": true, "send_messages": true,
			"topics": map[string]any{"0": map[string]bool{"manage_topic": false, "read_topic": true, "poll_messages": true, "send_messages": true}}}},
	}
	golden(t, "user_created", expect(t, ts.do("POST", "/users", tok,
		map[string]any{"username": "alice", "password": "secret1", "status": "active", "permissions": perms}), 200, "").body)
	golden(t, "user_created_no_permissions", expect(t, ts.do("POST", "/users", tok,
		map[string]any{"username": "bob", "password": "secret2", "status": "inactive"}), 200, "").body)
	golden(t, "user_already_exists", expect(t, ts.do("POST", "/users", tok,
		map[string]any{"username": "alice", "password": "secret1", "status": "active"}), 400, "user_already_exists").body)
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": "al", "password": "secret1", "status": "active"}), 400, "invalid_username")
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": "carol", "password": "x", "status": "active"}), 400, "invalid_password")
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": "carol", "password": strings.Repeat("p", 300), "status": "active"}), 400, "invalid_password")
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": strings.Repeat("u", 300), "password": "secret", "status": "active"}), 400, "invalid_username")
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": "carol", "password": "secret", "status": "asleep"}), 422, "")

	golden(t, "users_list", expect(t, ts.do("GET", "/users", tok, nil), 200, "").body)
	golden(t, "user_details", expect(t, ts.do("GET", "/users/alice", tok, nil), 200, "").body)
	golden(t, "user_me", expect(t, ts.do("GET", "/users/me", tok, nil), 200, "").body)
	expect(t, ts.do("GET", "/users/404404", tok, nil), 404, "not_found")

	expect(t, ts.do("PUT", "/users/alice", tok, map[string]any{"username": "alice2"}), 204, "")
	expect(t, ts.do("PUT", "/users/alice2", tok, map[string]any{"status": "inactive"}), 204, "")
	expect(t, ts.do("PUT", "/users/ghost", tok, map[string]any{"status": "inactive"}), 404, "resource_not_found")
	expect(t, ts.do("PUT", "/users/alice2", tok, map[string]any{"username": "bob"}), 400, "user_already_exists")
	expect(t, ts.do("PUT", "/users/alice2/permissions", tok, map[string]any{"permissions": nil}), 204, "")
	expect(t, ts.do("PUT", "/users/0/permissions", tok, map[string]any{"permissions": nil}), 400, "cannot_change_permissions")
	expect(t, ts.do("PUT", "/users/alice2/password", tok, map[string]any{"current_password": "wrong1", "new_password": "newpass"}), 400, "invalid_credentials")
	expect(t, ts.do("PUT", "/users/alice2/password", tok, map[string]any{"current_password": "secret1", "new_password": "newpass"}), 204, "")
	expect(t, ts.do("PUT", "/users/alice2", tok, map[string]any{"status": "active"}), 204, "")
	ts.login("alice2", "newpass")
	expect(t, ts.do("DELETE", "/users/0", tok, nil), 400, "cannot_delete_user")
	expect(t, ts.do("DELETE", "/users/bob", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/users/bob", tok, nil), 404, "")
}

func TestPersonalAccessTokenRoutes(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.login("iggy", "iggy")
	r := expect(t, ts.do("POST", "/personal-access-tokens", tok, map[string]any{"name": "ci-token", "expiry": 0}), 200, "")
	golden(t, "pat_created", r.body)
	var raw rawPATJSON
	r.json(t, &raw)
	expect(t, ts.do("POST", "/personal-access-tokens", tok, map[string]any{"name": "ci-token", "expiry": 0}), 400, "personal_access_token_already_exists")
	expect(t, ts.do("POST", "/personal-access-tokens", tok, map[string]any{"name": "dated", "expiry": 3_600_000_000}), 200, "")
	golden(t, "pats_list", expect(t, ts.do("GET", "/personal-access-tokens", tok, nil), 200, "").body)

	// A raw PAT is a bearer on every route; PAT login mints a JWT.
	expect(t, ts.do("GET", "/streams", raw.Token, nil), 200, "")
	golden(t, "identity_info", expect(t, ts.do("POST", "/personal-access-tokens/login", "", map[string]any{"token": raw.Token}), 200, "").body)
	expect(t, ts.do("POST", "/personal-access-tokens/login", "", map[string]any{"token": "nope"}), 401, "invalid_personal_access_token")

	expect(t, ts.do("DELETE", "/personal-access-tokens/ci-token", tok, nil), 204, "")
	expect(t, ts.do("DELETE", "/personal-access-tokens/ci-token", tok, nil), 404, "resource_not_found")
	expect(t, ts.do("GET", "/streams", raw.Token, nil), 401, "unauthenticated")
}

func TestAuthRoutes(t *testing.T) {
	ts := startServer(t, nil)
	expect(t, ts.do("POST", "/users/login", "", map[string]any{"username": "iggy", "password": "wrong"}), 400, "invalid_credentials")
	expect(t, ts.do("POST", "/users/login", "", map[string]any{"username": "ghost", "password": "wrong"}), 400, "invalid_credentials")
	expect(t, ts.do("POST", "/users/login", "", map[string]any{"username": "iggy"}), 422, "")
	tok := ts.login("iggy", "iggy")

	// Inactive users cannot log in, indistinguishably.
	expect(t, ts.do("POST", "/users", tok, map[string]any{"username": "sleepy", "password": "secret", "status": "inactive"}), 200, "")
	expect(t, ts.do("POST", "/users/login", "", map[string]any{"username": "sleepy", "password": "secret"}), 400, "invalid_credentials")

	r := expect(t, ts.do("POST", "/users/refresh-token", "", map[string]any{"token": tok}), 200, "")
	var id identityInfo
	r.json(t, &id)
	if id.UserID != 0 || id.AccessToken == nil || id.AccessToken.Token == tok {
		t.Fatalf("refresh: %s", r.body)
	}
	expect(t, ts.do("POST", "/users/refresh-token", "", map[string]any{"token": "garbage"}), 401, "unauthenticated")
	expect(t, ts.do("GET", "/streams", id.AccessToken.Token, nil), 200, "")
	expect(t, ts.do("GET", "/streams", tok, nil), 200, "") // the old token stays valid

	golden(t, "access_token_missing", expect(t, ts.do("GET", "/streams", "", nil), 401, "access_token_missing").body)
	expect(t, ts.doWith("GET", "/streams", "", nil, map[string]string{"Authorization": "bearer " + tok}), 401, "access_token_missing")
	golden(t, "unauthenticated", expect(t, ts.do("GET", "/streams", "not-a-token", nil), 401, "unauthenticated").body)

	// Logout releases the session; the token is not revoked (spec §2.2).
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s"}), 200, "")
	expect(t, ts.do("DELETE", "/users/logout", tok, nil), 204, "")
	expect(t, ts.do("POST", "/streams", tok, map[string]any{"name": "s2"}), 200, "")
	expect(t, ts.do("DELETE", "/users/logout", "", nil), 401, "access_token_missing")
}
