package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

type clientJSON struct {
	ClientID       uint32 `json:"client_id"`
	UserID         string `json:"user_id"`
	Address        string `json:"address"`
	Transport      string `json:"transport"`
	ConsumerGroups uint32 `json:"consumer_groups_count"`
}

func toClientJSON(c *wire.Client) clientJSON {
	user := "-" // not logged in
	if c.UserID != wire.NoUser {
		user = fmt.Sprint(c.UserID)
	}
	return clientJSON{ClientID: c.ClientID, UserID: user, Address: c.Address, Transport: transportName(c.Transport), ConsumerGroups: c.ConsumerGroupsCount}
}

func (a *app) clientCommand() *cobra.Command {
	get := &cobra.Command{
		Use:     "get CLIENT_ID",
		Aliases: []string{"g"},
		Short:   "Get details of a single client with given ID (a connection, not a user)",
		Example: "  iggy client get 42",
		Args:    exactArgs(1, "CLIENT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return usagef("CLIENT_ID %q is not a whole number; list clients with 'iggy client list'", args[0])
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				d, err := c.GetClient(ctx, uint32(id))
				if err != nil {
					return err
				}
				j := toClientJSON(&d.Client)
				pairs := [][2]string{
					{"Client ID", fmt.Sprint(j.ClientID)}, {"User ID", j.UserID}, {"Address", j.Address},
					{"Transport", j.Transport}, {"Consumer Groups Count", fmt.Sprint(len(d.ConsumerGroups))},
				}
				for _, g := range d.ConsumerGroups {
					pairs = append(pairs, [2]string{"Consumer Group", fmt.Sprintf("stream %d, topic %d, group %d", g.StreamID, g.TopicID, g.GroupID)})
				}
				return a.emit("", propertyView(j, pairs...))
			})
		},
	}
	list := a.listCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"l"},
		Short:   "List all clients connected to the server",
	}, func(ctx context.Context, c *client.Client) (view, error) {
		clients, err := c.GetClients(ctx)
		if err != nil {
			return view{}, err
		}
		j := make([]clientJSON, 0, len(clients))
		var rows [][]string
		for i := range clients {
			cj := toClientJSON(&clients[i])
			j = append(j, cj)
			rows = append(rows, []string{fmt.Sprint(cj.ClientID), cj.UserID, cj.Address, cj.Transport, fmt.Sprint(cj.ConsumerGroups)})
		}
		return view{json: j, headers: []string{"Client ID", "User ID", "Address", "Transport", "Consumer Groups"}, rows: rows}, nil
	})
	return group("client", "c", "client operations", get, list)
}
