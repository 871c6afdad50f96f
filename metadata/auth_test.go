package metadata

import (
	"strings"
	"testing"
)

func TestPasswordHashing(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q is not the expected PHC form", h)
	}
	if !VerifyPasswordHash(h, "correct horse") || VerifyPasswordHash(h, "correct horsE") {
		t.Fatal("verification wrong")
	}
	if _, err := HashPassword("ab"); err == nil {
		t.Fatal("2-byte password accepted")
	}
	if _, err := HashPassword(strings.Repeat("p", 101)); err == nil {
		t.Fatal("101-byte password accepted")
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5"} {
		if VerifyPasswordHash(bad, "x") {
			t.Fatalf("malformed hash %q verified", bad)
		}
	}
	r1, _ := RootPasswordHash("cluster-a", "iggy", "iggy")
	r2, _ := RootPasswordHash("cluster-a", "iggy", "iggy")
	r3, _ := RootPasswordHash("cluster-b", "iggy", "iggy")
	if r1 != r2 || r1 == r3 || !VerifyPasswordHash(r1, "iggy") {
		t.Fatal("root hash must be deterministic per cluster and verify")
	}
}

func TestVerifyPassword(t *testing.T) {
	f := newFixture(t)
	if uid, code := f.s.VerifyPassword("alice", "alicepw"); code != CodeOK || uid != aliceID {
		t.Fatalf("alice login: uid %d code %d", uid, code)
	}
	cases := []struct{ user, pass string }{
		{"alice", "wrongpw"}, {"nobody", "alicepw"}, {"bob", "bobpw"}, // bob is inactive
		{"al", "alicepw"}, {"alice", "pw"},
	}
	for _, c := range cases {
		if _, code := f.s.VerifyPassword(c.user, c.pass); code != CodeInvalidCredentials {
			t.Errorf("%s/%s: code %d, want %d", c.user, c.pass, code, CodeInvalidCredentials)
		}
	}
	if err := f.s.SeedRoot("root2", cheapHash("x")); err == nil {
		t.Fatal("second root seeded")
	}
	if err := NewState().SeedRoot("root", "not-a-hash"); err == nil {
		t.Fatal("root with a malformed hash seeded")
	}
}

func TestPersonalAccessTokens(t *testing.T) {
	f := newFixture(t)
	token, hash, err := NewPersonalAccessToken()
	if err != nil || len(token) < 43 || hash != HashToken(token) || !validTokenHash(hash) {
		t.Fatalf("minted token %q hash %q err %v", token, hash, err)
	}
	f.mustOK(aliceID, CreatePersonalAccessToken{Name: "forever", TokenHash: hash})
	short := "short-lived-token"
	f.mustOK(aliceID, CreatePersonalAccessToken{Name: "short", TokenHash: HashToken(short), Expiry: 5000})
	expiresAt := f.nowUs + 5000
	if uid, code := f.s.VerifyPAT(token, f.nowUs); code != CodeOK || uid != aliceID {
		t.Fatalf("verify: uid %d code %d", uid, code)
	}
	if _, code := f.s.VerifyPAT(short, expiresAt-1); code != CodeOK {
		t.Fatalf("short token before expiry: %d", code)
	}
	if _, code := f.s.VerifyPAT(short, expiresAt); code != CodePATExpired {
		t.Fatalf("short token at expiry: %d", code)
	}
	if _, code := f.s.VerifyPAT("guess", f.nowUs); code != CodeInvalidPAT {
		t.Fatalf("unknown token: %d", code)
	}
	pats := f.s.PersonalAccessTokens(aliceID)
	if len(pats) != 2 || pats[0].Name != "forever" || pats[0].ExpiryAt != 0 || pats[1].ExpiryAt != expiresAt {
		t.Fatalf("listing %+v", pats)
	}
	// The cleaner removes only expired tokens, by the op's timestamp.
	if f.s.HasExpiredTokens(expiresAt-1) || !f.s.HasExpiredTokens(expiresAt) {
		t.Fatal("HasExpiredTokens boundary wrong")
	}
	f.nowUs = expiresAt
	f.mustOK(RootUserID, DeleteExpiredTokens{})
	if pats := f.s.PersonalAccessTokens(aliceID); len(pats) != 1 || pats[0].Name != "forever" {
		t.Fatalf("after cleanup %+v", pats)
	}
	// Inactive owner.
	f.mustOK(RootUserID, UpdateUser{User: ByID(aliceID), Status: ptr(UserInactive)})
	if _, code := f.s.VerifyPAT(token, f.nowUs); code != CodeUserInactive {
		t.Fatalf("inactive owner: %d", code)
	}
	f.mustOK(aliceID, DeletePersonalAccessToken{Name: "forever"})
	if _, code := f.s.VerifyPAT(token, f.nowUs); code != CodeInvalidPAT {
		t.Fatalf("deleted token: %d", code)
	}
	// Another user cannot reuse a live token hash.
	f.mustOK(RootUserID, CreatePersonalAccessToken{Name: "root-token", TokenHash: HashToken("shared")})
	f.mustReject(aliceID, CreatePersonalAccessToken{Name: "alice-token", TokenHash: HashToken("shared")}, CodePATAlreadyExists)
}
