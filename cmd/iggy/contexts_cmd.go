package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// contextCreateKeys are the options of 'context create', as upstream: flag name, context key,
// and whether the value is hidden by 'context show'.
var contextCreateKeys = []struct {
	flag, short, key, label string
	masked                  bool
}{
	{"transport", "", "transport", "Transport", false},
	{"tcp-server-address", "", "tcp_server_address", "TCP Server Address", false},
	{"http-api-url", "", "http_api_url", "HTTP API URL", false},
	{"quic-server-address", "", "quic_server_address", "QUIC Server Address", false},
	{"username", "u", "username", "Username", false},
	{"password", "p", "password", "Password", true},
	{"token", "t", "token", "Token", true},
	{"token-name", "n", "token_name", "Token Name", false},
}

func (a *app) contextCommand() *cobra.Command {
	list := a.contextListCommand()
	use := &cobra.Command{
		Use:     "use CONTEXT_NAME",
		Aliases: []string{"u"},
		Short:   "Set the active context",
		Example: "  iggy context use dev\n  iggy context use default",
		Args:    exactArgs(1, "CONTEXT_NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			contexts, _, err := a.loadContexts()
			if err != nil {
				return err
			}
			if _, ok := contexts[args[0]]; !ok {
				return fmt.Errorf("context %q is missing from %s; create it with 'iggy context create %s ...'", args[0], contextsFileName, args[0])
			}
			if err := a.saveActiveContext(args[0]); err != nil {
				return err
			}
			a.say("active context set to '%s'", args[0])
			return nil
		},
	}
	del := &cobra.Command{
		Use:     "delete CONTEXT_NAME",
		Aliases: []string{"d"},
		Short:   "Delete a context (the active context then resets to default)",
		Args:    exactArgs(1, "CONTEXT_NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			name := args[0]
			if name == defaultContextName {
				return usagef("cannot delete the '%s' context", defaultContextName)
			}
			contexts, active, err := a.loadContexts()
			if err != nil {
				return err
			}
			if _, ok := contexts[name]; !ok {
				return fmt.Errorf("context %q not found in %s", name, contextsFileName)
			}
			if active == name {
				if err := a.saveActiveContext(defaultContextName); err != nil {
					return err
				}
			}
			delete(contexts, name)
			delete(contexts, defaultContextName) // implicit: never written unless it holds options
			if err := a.saveContexts(contexts); err != nil {
				return err
			}
			a.say("context '%s' deleted successfully", name)
			return nil
		},
	}
	show := &cobra.Command{
		Use:     "show CONTEXT_NAME",
		Aliases: []string{"s"},
		Short:   "Show the options of a context (secrets masked)",
		Args:    exactArgs(1, "CONTEXT_NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			contexts, active, err := a.loadContexts()
			if err != nil {
				return err
			}
			c, ok := contexts[args[0]]
			if !ok {
				return fmt.Errorf("context %q not found", args[0])
			}
			return a.emit("", contextView(args[0], args[0] == active, c))
		},
	}
	return group("context", "ctx", "context operations (named server profiles)", list, use, a.contextCreateCommand(), del, show)
}

func (a *app) contextListCommand() *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"l"},
		Short:   "List all contexts (the active one marked with *)",
		Args:    noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			contexts, active, err := a.loadContexts()
			if err != nil {
				return err
			}
			names := contextNames(contexts, active)
			rows := make([][]string, len(names))
			for i, n := range names {
				rows[i] = []string{n}
			}
			return a.emit(mode, view{json: map[string]any{"active": active, "contexts": names}, headers: []string{"Name"}, rows: rows})
		},
	}
	listModeFlag(cmd, &mode)
	return cmd
}

func (a *app) contextCreateCommand() *cobra.Command {
	values := make([]string, len(contextCreateKeys))
	var tls bool
	cmd := &cobra.Command{
		Use:     "create CONTEXT_NAME",
		Aliases: []string{"c"},
		Short:   "Create a named context; activate it with 'iggy context use NAME'",
		Example: "  iggy context create production --transport tcp --tcp-server-address 10.0.0.1:8090\n" +
			"  iggy context create local --username iggy --password iggy",
		Args: exactArgs(1, "CONTEXT_NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := validateContextName(name); err != nil {
				return err
			}
			if name == defaultContextName {
				return usagef("cannot create a context named '%s': it is reserved", defaultContextName)
			}
			contexts, _, err := a.loadContexts()
			if err != nil {
				return err
			}
			if _, ok := contexts[name]; ok {
				return fmt.Errorf("context %q already exists in %s", name, contextsFileName)
			}
			c := contextConfig{}
			for i, k := range contextCreateKeys {
				if cmd.Flags().Changed(k.flag) {
					c[k.key] = values[i]
				}
			}
			if t, ok := c["transport"].(string); ok && !isTransportName(t) {
				return usagef("invalid transport %q - valid values are: tcp, quic, http, ws", t)
			}
			if cmd.Flags().Changed("tcp-tls-enabled") {
				c["tcp_tls_enabled"] = tls
			}
			contexts[name] = c
			delete(contexts, defaultContextName)
			if err := a.saveContexts(contexts); err != nil {
				return err
			}
			a.say("context '%s' created successfully", name)
			return nil
		},
	}
	for i, k := range contextCreateKeys {
		cmd.Flags().StringVarP(&values[i], k.flag, k.short, "", "context "+strings.ReplaceAll(k.key, "_", " "))
	}
	cmd.Flags().BoolVar(&tls, "tcp-tls-enabled", false, "context: enable TLS for the TCP transport")
	return cmd
}

func isTransportName(t string) bool {
	switch strings.ToLower(t) {
	case "tcp", "quic", "http", "ws":
		return true
	}
	return false
}

// contextView shows a context's options, known ones with their labels, secrets masked.
func contextView(name string, active bool, c contextConfig) view {
	display := name
	if active {
		display += "*"
	}
	pairs := [][2]string{{"Name", display}}
	known := map[string]bool{}
	for _, k := range contextCreateKeys {
		known[k.key] = true
		if v, ok := c[k.key]; ok {
			pairs = append(pairs, [2]string{k.label, maskIf(k.masked, v)})
		}
	}
	var rest []string
	for k := range c {
		if !known[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		pairs = append(pairs, [2]string{k, maskIf(k == "encryption_key", c[k])})
	}
	masked := map[string]any{"name": name, "active": active}
	for _, p := range pairs[1:] {
		masked[p[0]] = p[1]
	}
	return propertyView(masked, pairs...)
}

func maskIf(mask bool, v any) string {
	if mask {
		return "********"
	}
	return fmt.Sprint(v)
}
