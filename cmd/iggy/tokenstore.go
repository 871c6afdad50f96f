package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/BurntSushi/toml"
)

// Stored tokens. Upstream keeps them in the platform keyring under a service and an account
// name; here they live in $IGGY_HOME/tokens.toml (mode 0600), under the same service and
// account names, so the two CLIs agree on what is stored where:
//
//	login sessions:         service "iggy-cli-session:<server address>", account "iggy-cli-session"
//	pat create --store-token: service "iggy:<server address>", account <token name>
const (
	tokensFileName     = "tokens.toml"
	sessionServiceName = "iggy-cli-session"
	sessionTokenName   = "iggy-cli-session"
	tokenEntriesMax    = 10_000 // bound on what one file may hold
)

func sessionService(addr string) string { return sessionServiceName + ":" + addr }
func patService(addr string) string     { return "iggy:" + addr }

// tokenStore is the parsed file: service -> account -> token.
type tokenStore map[string]map[string]string

// loadTokens reads the store; a missing file (or home) is an empty store.
func (a *app) loadTokens() (tokenStore, error) {
	path, err := a.homeFile(tokensFileName, false)
	if errors.Is(err, errNoHome) {
		return tokenStore{}, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return tokenStore{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read token store: %w", err)
	}
	s := tokenStore{}
	if _, err := toml.Decode(string(data), &s); err != nil {
		return nil, fmt.Errorf("token store %s is not valid TOML: %w", path, err)
	}
	return s, nil
}

func (s tokenStore) get(service, account string) (string, bool) {
	t, ok := s[service][account]
	return t, ok && t != ""
}

// updateTokens applies fn to the stored tokens and writes them back.
func (a *app) updateTokens(fn func(tokenStore)) error {
	s, err := a.loadTokens()
	if err != nil {
		return err
	}
	fn(s)
	n := 0
	for svc, accounts := range s {
		if len(accounts) == 0 {
			delete(s, svc)
		}
		n += len(accounts)
	}
	if n > tokenEntriesMax {
		return fmt.Errorf("token store would hold %d tokens, more than %d", n, tokenEntriesMax)
	}
	path, err := a.homeFile(tokensFileName, true)
	if err != nil {
		return fmt.Errorf("store token: %w", err)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(s); err != nil {
		return fmt.Errorf("encode token store: %w", err)
	}
	return writePrivateFile(path, buf.Bytes())
}

func (a *app) storeToken(service, account, token string) error {
	return a.updateTokens(func(s tokenStore) {
		if s[service] == nil {
			s[service] = map[string]string{}
		}
		s[service][account] = token
	})
}

func (a *app) deleteToken(service, account string) error {
	return a.updateTokens(func(s tokenStore) { delete(s[service], account) })
}
