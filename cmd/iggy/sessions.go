package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
)

// Login sessions, as upstream's: 'iggy login' creates a personal access token named
// iggy-cli-session on the server and stores it (see tokenstore.go); later commands against the
// same server address log in with it before any other credentials, until 'iggy logout' deletes
// it on both sides.

// defaultSessionExpiry is upstream's login session lifetime when none is given.
const defaultSessionExpiry = 15 * time.Minute

func (a *app) loginCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "login [EXPIRY...]",
		Aliases: []string{"li"},
		Short:   "login to Iggy server and store a session token",
		Long: "Log in with the given credentials (-u/-p, -t, -n or IGGY_USERNAME/IGGY_PASSWORD), create a session\n" +
			"token and store it under $IGGY_HOME (default ~/.iggy). Later commands against the same server use it\n" +
			"until 'iggy logout'. EXPIRY is like 1hour 15min (default 15minutes; none = no expiry).",
		Example: "  iggy -u iggy -p iggy login\n  iggy -u iggy -p iggy login 2hours",
		RunE: func(cmd *cobra.Command, args []string) error {
			expiry := uint64(defaultSessionExpiry.Microseconds())
			if len(args) > 0 {
				var err error
				if expiry, err = parsePATExpiry(args); err != nil {
					return err
				}
			}
			a.preferExplicit = true
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error { return a.login(ctx, c, expiry) })
		},
	}
}

func (a *app) login(ctx context.Context, c *client.Client, expiry uint64) error {
	addr := a.globals.tcpServerAddress
	stored, err := a.hasSession(addr)
	if err != nil {
		return err
	}
	pats, err := c.GetPersonalAccessTokens(ctx)
	if err != nil {
		return fmt.Errorf("list personal access tokens on %s: %w", addr, err)
	}
	var onServer, live bool
	now := uint64(time.Now().UnixMicro())
	for _, p := range pats {
		if p.Name == sessionTokenName {
			onServer, live = true, p.ExpiryAt == 0 || p.ExpiryAt > now
		}
	}
	if stored {
		if live {
			a.say("Already logged into Iggy server %s", addr)
			return nil
		}
		if err := a.deleteToken(sessionService(addr), sessionTokenName); err != nil {
			return err
		}
	}
	// Keep the server and the local store in step: an old session token is replaced.
	if onServer {
		if err := c.DeletePersonalAccessToken(ctx, sessionTokenName); err != nil {
			return fmt.Errorf("delete old session token %s: %w", sessionTokenName, err)
		}
	}
	token, err := c.CreatePersonalAccessToken(ctx, sessionTokenName, expiry)
	if err != nil {
		return fmt.Errorf("create session token %s: %w", sessionTokenName, err)
	}
	if err := a.storeToken(sessionService(addr), sessionTokenName, token); err != nil {
		return err
	}
	a.say("Successfully logged into Iggy server %s", addr)
	return nil
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "logout",
		Aliases: []string{"lo"},
		Short:   "logout from Iggy server and remove the stored session token",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr := a.globals.tcpServerAddress
			active, err := a.hasSession(addr)
			if err != nil {
				return err
			}
			if active {
				err := a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
					if err := c.DeletePersonalAccessToken(ctx, sessionTokenName); err != nil {
						return fmt.Errorf("delete session token %s: %w", sessionTokenName, err)
					}
					return nil
				})
				if err != nil {
					return err
				}
				if err := a.deleteToken(sessionService(addr), sessionTokenName); err != nil {
					return err
				}
			}
			a.say("Successfully logged out from Iggy server %s", addr)
			return nil
		},
	}
}

func (a *app) sessionCommand() *cobra.Command {
	status := &cobra.Command{
		Use:     "status",
		Aliases: []string{"s"},
		Short:   "Show whether a login session is stored for the server (no connection is made)",
		Args:    noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			addr := a.globals.tcpServerAddress
			active, err := a.hasSession(addr)
			if err != nil {
				return err
			}
			text := "No"
			if active {
				text = "Yes (token presence only, freshness not verified)"
			}
			return a.emit("", propertyView(map[string]any{"server_address": addr, "session_active": active},
				[2]string{"Server Address", addr}, [2]string{"Session Active", text}))
		},
	}
	return group("session", "sess", "login session operations", status)
}

// hasSession reports whether a login session token is stored for addr.
func (a *app) hasSession(addr string) (bool, error) {
	store, err := a.loadTokens()
	if err != nil {
		return false, err
	}
	_, ok := store.get(sessionService(addr), sessionTokenName)
	return ok, nil
}
