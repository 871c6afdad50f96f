package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// globalPermissionNames maps upstream's -g/--global-permissions names (short and long) to a setter.
var globalPermissionNames = map[string]func(*wire.GlobalPermissions){
	"m_srv": func(g *wire.GlobalPermissions) { g.ManageServers = true }, "manage_servers": func(g *wire.GlobalPermissions) { g.ManageServers = true },
	"r_srv": func(g *wire.GlobalPermissions) { g.ReadServers = true }, "read_servers": func(g *wire.GlobalPermissions) { g.ReadServers = true },
	"m_usr": func(g *wire.GlobalPermissions) { g.ManageUsers = true }, "manage_users": func(g *wire.GlobalPermissions) { g.ManageUsers = true },
	"r_usr": func(g *wire.GlobalPermissions) { g.ReadUsers = true }, "read_users": func(g *wire.GlobalPermissions) { g.ReadUsers = true },
	"m_str": func(g *wire.GlobalPermissions) { g.ManageStreams = true }, "manage_streams": func(g *wire.GlobalPermissions) { g.ManageStreams = true },
	"r_str": func(g *wire.GlobalPermissions) { g.ReadStreams = true }, "read_streams": func(g *wire.GlobalPermissions) { g.ReadStreams = true },
	"m_top": func(g *wire.GlobalPermissions) { g.ManageTopics = true }, "manage_topics": func(g *wire.GlobalPermissions) { g.ManageTopics = true },
	"r_top": func(g *wire.GlobalPermissions) { g.ReadTopics = true }, "read_topics": func(g *wire.GlobalPermissions) { g.ReadTopics = true },
	"p_msg": func(g *wire.GlobalPermissions) { g.PollMessages = true }, "poll_messages": func(g *wire.GlobalPermissions) { g.PollMessages = true },
	"s_msg": func(g *wire.GlobalPermissions) { g.SendMessages = true }, "send_messages": func(g *wire.GlobalPermissions) { g.SendMessages = true },
}

// parseGlobalPermissions reads a comma-separated list like "m_str,r_top,send_messages".
func parseGlobalPermissions(s string) (*wire.Permissions, error) {
	p := &wire.Permissions{}
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		set, ok := globalPermissionNames[name]
		if !ok {
			return nil, usagef("unknown global permission %q; use m_srv, r_srv, m_usr, r_usr, m_str, r_str, m_top, r_top, p_msg, s_msg (or their long names)", name)
		}
		set(&p.Global)
	}
	return p, nil
}

func globalPermissionList(g wire.GlobalPermissions) []string {
	var out []string
	for _, e := range []struct {
		on   bool
		name string
	}{
		{g.ManageServers, "manage_servers"}, {g.ReadServers, "read_servers"}, {g.ManageUsers, "manage_users"},
		{g.ReadUsers, "read_users"}, {g.ManageStreams, "manage_streams"}, {g.ReadStreams, "read_streams"},
		{g.ManageTopics, "manage_topics"}, {g.ReadTopics, "read_topics"}, {g.PollMessages, "poll_messages"},
		{g.SendMessages, "send_messages"},
	} {
		if e.on {
			out = append(out, e.name)
		}
	}
	return out
}

func parseUserStatus(s string) (wire.UserStatus, error) {
	switch strings.ToLower(s) {
	case "active":
		return wire.UserActive, nil
	case "inactive":
		return wire.UserInactive, nil
	}
	return 0, usagef("user status %q: use active or inactive", s)
}

type userJSON struct {
	ID                uint32   `json:"id"`
	CreatedAt         uint64   `json:"created_at"`
	Status            string   `json:"status"`
	Username          string   `json:"username"`
	GlobalPermissions []string `json:"global_permissions,omitempty"`
	StreamPermissions int      `json:"stream_permissions_count,omitempty"`
	Streams           []string `json:"stream_permissions,omitempty"` // in -s syntax, long names
}

func usersView(users []wire.User) view {
	j := make([]userJSON, 0, len(users))
	var rows [][]string
	for _, u := range users {
		j = append(j, userJSON{ID: u.ID, CreatedAt: u.CreatedAt, Status: u.Status.String(), Username: u.Username})
		rows = append(rows, []string{fmt.Sprint(u.ID), formatMicros(u.CreatedAt), u.Status.String(), u.Username})
	}
	return view{json: j, headers: []string{"ID", "Created", "Status", "Username"}, rows: rows}
}

func userDetailsView(d *wire.UserDetails) view {
	j := userJSON{ID: d.ID, CreatedAt: d.CreatedAt, Status: d.Status.String(), Username: d.Username}
	perms := "none"
	if d.Permissions != nil {
		j.GlobalPermissions = globalPermissionList(d.Permissions.Global)
		j.StreamPermissions = len(d.Permissions.Streams)
		for _, sp := range d.Permissions.Streams {
			j.Streams = append(j.Streams, formatStreamPermissions(sp))
		}
		perms = strings.Join(j.GlobalPermissions, ", ")
		if perms == "" {
			perms = "-"
		}
	}
	return propertyView(j,
		[2]string{"User ID", fmt.Sprint(j.ID)},
		[2]string{"Created", formatMicros(j.CreatedAt)},
		[2]string{"Status", j.Status},
		[2]string{"Username", j.Username},
		[2]string{"Global permissions", perms},
		[2]string{"Stream permissions", strings.Join(append([]string{fmt.Sprint(j.StreamPermissions)}, j.Streams...), " ")})
}

func (a *app) userCommand() *cobra.Command {
	var status, globalPerms string
	var streamPerms []string
	create := &cobra.Command{
		Use:     "create USERNAME PASSWORD",
		Aliases: []string{"c"},
		Short:   "Create user with given username and password",
		Example: "  iggy user create testuser pass#1%X!\n  iggy user create guest guess --user-status inactive\n  iggy user create admin pass -g m_str,r_str",
		Args:    exactArgs(2, "USERNAME", "PASSWORD"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseUserStatus(status)
			if err != nil {
				return err
			}
			perms, err := buildPermissions(globalPerms, streamPerms)
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				u, err := c.CreateUser(ctx, args[0], args[1], st, perms)
				if err != nil {
					return err
				}
				a.say("User with username: %s and ID: %d created", u.Username, u.ID)
				return nil
			})
		},
	}
	create.Flags().StringVarP(&status, "user-status", "u", "active", "user status: active or inactive")
	permissionFlags(create, &globalPerms, &streamPerms)

	userAction := func(fn func(context.Context, *client.Client, wire.Identifier, []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			id, err := parseIdentifier("user ID", args[0])
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error { return fn(ctx, c, id, args) })
		}
	}
	get := &cobra.Command{
		Use:     "get USER_ID",
		Aliases: []string{"g"},
		Short:   "Get details of a single user with given ID (a number or a username)",
		Args:    exactArgs(1, "USER_ID"),
		RunE: userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, _ []string) error {
			d, err := c.GetUser(ctx, id)
			if err != nil {
				return err
			}
			return a.emit("", userDetailsView(d))
		}),
	}
	list := a.listCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"l"},
		Short:   "List all users",
	}, func(ctx context.Context, c *client.Client) (view, error) {
		users, err := c.GetUsers(ctx)
		if err != nil {
			return view{}, err
		}
		return usersView(users), nil
	})
	del := &cobra.Command{
		Use:     "delete USER_ID",
		Aliases: []string{"d"},
		Short:   "Delete user with given ID",
		Args:    exactArgs(1, "USER_ID"),
		RunE: userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.DeleteUser(ctx, id); err != nil {
				return err
			}
			a.say("User with ID: %s deleted", args[0])
			return nil
		}),
	}
	name := &cobra.Command{
		Use:     "name USER_ID USERNAME",
		Aliases: []string{"n"},
		Short:   "Change username for user with given ID",
		Args:    exactArgs(2, "USER_ID", "USERNAME"),
		RunE: userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.UpdateUser(ctx, id, &args[1], nil); err != nil {
				return err
			}
			a.say("User with ID: %s updated with username: %s", args[0], args[1])
			return nil
		}),
	}
	statusCmd := &cobra.Command{
		Use:     "status USER_ID active|inactive",
		Aliases: []string{"s"},
		Short:   "Change status for user with given ID",
		Args:    exactArgs(2, "USER_ID", "STATUS"),
		RunE: userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			st, err := parseUserStatus(args[1])
			if err != nil {
				return err
			}
			if err := c.UpdateUser(ctx, id, nil, &st); err != nil {
				return err
			}
			a.say("User with ID: %s updated with status: %s", args[0], st)
			return nil
		}),
	}
	password := &cobra.Command{
		Use:     "password USER_ID CURRENT_PASSWORD NEW_PASSWORD",
		Aliases: []string{"pwd"},
		Short:   "Change password for user with given ID",
		Args:    exactArgs(3, "USER_ID", "CURRENT_PASSWORD", "NEW_PASSWORD"),
		RunE: userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
			if err := c.ChangePassword(ctx, id, args[1], args[2]); err != nil {
				return err
			}
			a.say("Password for user with ID: %s changed", args[0])
			return nil
		}),
	}
	return group("user", "u", "user operations", create, del, get, list, name, statusCmd, password, a.userPermissionsCommand(userAction))
}

// permissionFlags adds upstream's -g/--global-permissions and -s/--stream-permissions.
func permissionFlags(cmd *cobra.Command, global *string, streams *[]string) {
	cmd.Flags().StringVarP(global, "global-permissions", "g", "", "comma-separated global permissions, e.g. m_str,r_top,p_msg")
	cmd.Flags().StringArrayVarP(streams, "stream-permissions", "s", nil,
		"stream permissions STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]..., e.g. 1:m_str,r_top#2:s_msg (repeatable)")
}

func (a *app) userPermissionsCommand(userAction func(func(context.Context, *client.Client, wire.Identifier, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	var globalPerms string
	var streamPerms []string
	cmd := &cobra.Command{
		Use:     "permissions USER_ID",
		Aliases: []string{"p"},
		Short:   "Set permissions for user with given ID (none given: remove them)",
		Example: "  iggy user permissions 2\n  iggy user permissions client -g r_str,p_msg -s 1:s_msg#2:p_msg",
		Args:    exactArgs(1, "USER_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			perms, err := buildPermissions(globalPerms, streamPerms)
			if err != nil {
				return err
			}
			return userAction(func(ctx context.Context, c *client.Client, id wire.Identifier, args []string) error {
				if err := c.UpdatePermissions(ctx, id, perms); err != nil {
					return err
				}
				a.say("Permissions for user with ID: %s updated", args[0])
				return nil
			})(cmd, args)
		},
	}
	permissionFlags(cmd, &globalPerms, &streamPerms)
	return cmd
}

// formatStreamPermissions renders one stream's permissions in -s syntax with long names.
func formatStreamPermissions(sp wire.StreamPermissions) string {
	names := func(flags []bool, labels []string) string {
		var on []string
		for i, f := range flags {
			if f {
				on = append(on, labels[i])
			}
		}
		if len(on) == 0 {
			return ""
		}
		return ":" + strings.Join(on, ",")
	}
	out := fmt.Sprint(sp.StreamID) + names(
		[]bool{sp.ManageStream, sp.ReadStream, sp.ManageTopics, sp.ReadTopics, sp.PollMessages, sp.SendMessages},
		[]string{"manage_stream", "read_stream", "manage_topics", "read_topics", "poll_messages", "send_messages"})
	for _, t := range sp.Topics {
		out += fmt.Sprintf("#%d", t.TopicID) + names(
			[]bool{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages},
			[]string{"manage_topic", "read_topic", "poll_messages", "send_messages"})
	}
	return out
}
