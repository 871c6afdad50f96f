package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
)

// Named contexts (server profiles), stored as upstream stores them: $IGGY_HOME/contexts.toml maps
// a context name to its options (snake_case keys, unknown keys kept), and
// $IGGY_HOME/.active_context names the active one. The "default" context always exists and is
// empty. Options given on the command line win over the active context's.
const (
	contextsFileName      = "contexts.toml"
	activeContextFileName = ".active_context"
	defaultContextName    = "default"
	contextsMax           = 1000
)

// contextFlags maps context keys to the global flags they fill in.
var contextFlags = []struct{ key, flag string }{
	{"transport", "transport"},
	{"tcp_server_address", "tcp-server-address"},
	{"http_api_url", "http-api-url"},
	{"username", "username"},
	{"password", "password"},
	{"token", "token"},
	{"token_name", "token-name"},
	{"encryption_key", "encryption-key"},
}

type contextConfig = map[string]any

// loadContexts returns every context (default included) and the active context's name, which
// may be missing from them when contexts.toml was edited by hand.
func (a *app) loadContexts() (map[string]contextConfig, string, error) {
	contexts := map[string]contextConfig{defaultContextName: {}}
	active := defaultContextName
	path, err := a.homeFile(contextsFileName, false)
	if errors.Is(err, errNoHome) {
		return contexts, active, nil
	}
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		stored := map[string]contextConfig{}
		if _, err := toml.Decode(string(data), &stored); err != nil {
			return nil, "", fmt.Errorf("contexts file %s is not valid TOML: %w", path, err)
		}
		for name, c := range stored {
			contexts[name] = c
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, "", fmt.Errorf("read contexts file: %w", err)
	}
	activePath, _ := a.homeFile(activeContextFileName, false)
	if b, err := os.ReadFile(activePath); err == nil {
		active = strings.TrimSpace(string(b)) // may name a deleted context: applyActiveContext says so
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("read active context: %w", err)
	}
	return contexts, active, nil
}

func (a *app) saveContexts(contexts map[string]contextConfig) error {
	if len(contexts) > contextsMax {
		return fmt.Errorf("more than %d contexts", contextsMax)
	}
	path, err := a.homeFile(contextsFileName, true)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(contexts); err != nil {
		return fmt.Errorf("encode contexts: %w", err)
	}
	return writePrivateFile(path, buf.Bytes())
}

func (a *app) saveActiveContext(name string) error {
	path, err := a.homeFile(activeContextFileName, true)
	if err != nil {
		return err
	}
	return writePrivateFile(path, []byte(name))
}

// applyActiveContext fills the global options not given on the command line from the active
// context, for cmd.
func (a *app) applyActiveContext(cmd *cobra.Command) error {
	contexts, active, err := a.loadContexts()
	if err != nil {
		return err
	}
	if _, ok := contexts[active]; !ok {
		if p := cmd.Parent(); p != nil && p.Name() == "context" {
			return nil // the context commands list and repair this
		}
		return fmt.Errorf("active context %q is missing from %s; run 'iggy context use default'", active, contextsFileName)
	}
	pf := cmd.Root().PersistentFlags()
	for _, cf := range contextFlags {
		v, ok := contexts[active][cf.key].(string)
		if !ok || v == "" || pf.Changed(cf.flag) {
			continue
		}
		if err := pf.Set(cf.flag, v); err != nil {
			return fmt.Errorf("context %q: %s: %w", active, cf.key, err)
		}
	}
	return nil
}

func validateContextName(name string) error {
	if strings.TrimSpace(name) == "" {
		return usagef("context name cannot be empty or whitespace-only")
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return usagef("context name %q must contain only letters, digits, hyphens and underscores", name)
		}
	}
	return nil
}

func contextNames(contexts map[string]contextConfig, active string) []string {
	names := make([]string, 0, len(contexts))
	for n := range contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if n == active {
			names[i] = n + "*" // upstream marks the active context
		}
	}
	return names
}
