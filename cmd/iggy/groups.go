package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Upstream bounds partition create/delete counts to 1..100000.
const partitionsCountMax = 100_000

func (a *app) partitionCommand() *cobra.Command {
	mk := func(use, alias, short, done string, fn func(*client.Client, context.Context, wire.Identifier, wire.Identifier, uint32) error) *cobra.Command {
		return &cobra.Command{
			Use:     use + " STREAM_ID TOPIC_ID PARTITIONS_COUNT",
			Aliases: []string{alias},
			Short:   short,
			Args:    exactArgs(3, "STREAM_ID", "TOPIC_ID", "PARTITIONS_COUNT"),
			RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, args []string) error {
				n, err := strconv.ParseUint(args[2], 10, 32)
				if err != nil || n < 1 || n > partitionsCountMax {
					return usagef("PARTITIONS_COUNT %q must be a whole number in 1..%d", args[2], partitionsCountMax)
				}
				if err := fn(c, ctx, s, t, uint32(n)); err != nil {
					return err
				}
				a.say("%d partition(s) %s for topic with ID: %s in stream with ID: %s", n, done, args[1], args[0])
				return nil
			}),
		}
	}
	create := mk("create", "c", "Create partitions for the specified topic ID and stream ID", "created", (*client.Client).CreatePartitions)
	del := mk("delete", "d", "Delete partitions (the highest-numbered ones) for the specified topic ID and stream ID", "deleted", (*client.Client).DeletePartitions)
	return group("partition", "p", "partition operations", create, del)
}

type groupJSON struct {
	ID              uint32            `json:"id"`
	Name            string            `json:"name"`
	PartitionsCount uint32            `json:"partitions_count"`
	MembersCount    uint32            `json:"members_count"`
	Members         []groupMemberJSON `json:"members,omitempty"`
}

type groupMemberJSON struct {
	ID         uint32   `json:"id"`
	Partitions []uint32 `json:"partitions"`
}

func groupsView(groups []wire.ConsumerGroup) view {
	j := make([]groupJSON, 0, len(groups))
	var rows [][]string
	for _, g := range groups {
		j = append(j, groupJSON{ID: g.ID, Name: g.Name, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount})
		rows = append(rows, []string{fmt.Sprint(g.ID), g.Name, fmt.Sprint(g.PartitionsCount), fmt.Sprint(g.MembersCount)})
	}
	return view{json: j, headers: []string{"ID", "Name", "Partitions Count", "Members Count"}, rows: rows}
}

func groupDetailsView(d *wire.GroupDetails) view {
	j := groupJSON{ID: d.ID, Name: d.Name, PartitionsCount: d.PartitionsCount, MembersCount: uint32(len(d.Members)), Members: []groupMemberJSON{}}
	pairs := [][2]string{
		{"Consumer group id", fmt.Sprint(d.ID)},
		{"Consumer group name", d.Name},
		{"Partitions count", fmt.Sprint(d.PartitionsCount)},
		{"Members count", fmt.Sprint(len(d.Members))},
	}
	for _, m := range d.Members {
		j.Members = append(j.Members, groupMemberJSON{ID: m.ID, Partitions: append([]uint32{}, m.Partitions...)})
		pairs = append(pairs, [2]string{fmt.Sprintf("Member %d partitions", m.ID), fmt.Sprint(m.Partitions)})
	}
	return propertyView(j, pairs...)
}

func (a *app) consumerGroupCommand() *cobra.Command {
	var groupID uint32
	create := &cobra.Command{
		Use:     "create STREAM_ID TOPIC_ID NAME",
		Aliases: []string{"c"},
		Short:   "Create consumer group with given name for given stream ID and topic ID",
		Example: "  iggy consumer-group create prod sensors workers",
		Args:    exactArgs(3, "STREAM_ID", "TOPIC_ID", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseExplicitID(cmd, "group-id", "consumer group"); err != nil {
				return err
			}
			return a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, args []string) error {
				g, err := c.CreateConsumerGroup(ctx, s, t, args[2])
				if err != nil {
					return err
				}
				a.say("Consumer group with ID: %d and name: %s created for topic with ID: %s in stream with ID: %s", g.ID, g.Name, args[1], args[0])
				return nil
			})(cmd, args)
		},
	}
	create.Flags().Uint32VarP(&groupID, "group-id", "g", 0, "consumer group ID to create (not supported: the server assigns IDs)")

	get := &cobra.Command{
		Use:     "get STREAM_ID TOPIC_ID GROUP_ID",
		Aliases: []string{"g"},
		Short:   "Get details of a single consumer group",
		Args:    exactArgs(3, "STREAM_ID", "TOPIC_ID", "GROUP_ID"),
		RunE: a.groupAction(func(ctx context.Context, c *client.Client, ids []wire.Identifier, _ []string) error {
			d, err := c.GetConsumerGroup(ctx, ids[0], ids[1], ids[2])
			if err != nil {
				return err
			}
			return a.emit("", groupDetailsView(d))
		}),
	}
	del := &cobra.Command{
		Use:     "delete STREAM_ID TOPIC_ID GROUP_ID",
		Aliases: []string{"d"},
		Short:   "Delete consumer group",
		Args:    exactArgs(3, "STREAM_ID", "TOPIC_ID", "GROUP_ID"),
		RunE: a.groupAction(func(ctx context.Context, c *client.Client, ids []wire.Identifier, args []string) error {
			if err := c.DeleteConsumerGroup(ctx, ids[0], ids[1], ids[2]); err != nil {
				return err
			}
			a.say("Consumer group with ID: %s deleted for topic with ID: %s in stream with ID: %s", args[2], args[1], args[0])
			return nil
		}),
	}
	var mode string
	list := &cobra.Command{
		Use:     "list STREAM_ID TOPIC_ID",
		Aliases: []string{"l"},
		Short:   "List all consumer groups for given stream ID and topic ID",
		Args:    exactArgs(2, "STREAM_ID", "TOPIC_ID"),
		RunE: a.topicAction(func(ctx context.Context, c *client.Client, s, t wire.Identifier, _ []string) error {
			f, err := a.format(mode)
			if err != nil {
				return err
			}
			groups, err := c.GetConsumerGroups(ctx, s, t)
			if err != nil {
				return err
			}
			return writeView(a.stdout, f, groupsView(groups))
		}),
	}
	listModeFlag(list, &mode)
	return group("consumer-group", "g", "consumer group operations", create, del, get, list)
}

// groupAction parses STREAM_ID TOPIC_ID GROUP_ID and runs fn logged in.
func (a *app) groupAction(fn func(context.Context, *client.Client, []wire.Identifier, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ids, err := parseIdentifiers(args, "stream ID", "topic ID", "consumer group ID")
		if err != nil {
			return err
		}
		return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
			return fn(ctx, c, ids, args)
		})
	}
}

// Duration units for personal access token expiry, in µs.
var expiryUnits = map[string]uint64{
	"s": 1_000_000, "sec": 1_000_000, "secs": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
	"m": 60_000_000, "min": 60_000_000, "mins": 60_000_000, "minute": 60_000_000, "minutes": 60_000_000,
	"h": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
	"d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
	"w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
	"month": 2_630_016_000_000, "months": 2_630_016_000_000,
	"y": 31_557_600_000_000, "year": 31_557_600_000_000, "years": 31_557_600_000_000,
}

// parsePATExpiry reads upstream-style expiry words ("1hour 15min", "none"); 0 means never.
func parsePATExpiry(words []string) (uint64, error) {
	s := strings.ToLower(strings.TrimSpace(strings.Join(words, " ")))
	switch s {
	case "", "none", "never", "unlimited":
		return 0, nil
	}
	var total uint64
	rest := s
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsDigit(r) })
		if i <= 0 {
			return 0, usagef("expiry %q: expected a number followed by a unit, like 1hour 15min", s)
		}
		n, _ := strconv.ParseUint(rest[:i], 10, 64)
		rest = strings.TrimLeft(rest[i:], " ")
		j := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) })
		if j < 0 {
			j = len(rest)
		}
		unit, ok := expiryUnits[rest[:j]]
		if !ok {
			return 0, usagef("expiry %q: unknown unit %q (use s, min, hour, day, week, month or year)", s, rest[:j])
		}
		total += n * unit
		rest = strings.TrimLeft(rest[j:], " ")
	}
	return total, nil
}

func (a *app) patCommand() *cobra.Command {
	var store bool
	create := &cobra.Command{
		Use:     "create NAME [EXPIRY...]",
		Aliases: []string{"c"},
		Short:   "Create personal access token for the logged-in user and print it",
		Long: "Create a personal access token and print it. With -s/--store-token the token is stored under\n" +
			"$IGGY_HOME (default ~/.iggy) instead of printed, for later use with -n/--token-name NAME; only\n" +
			"tokens without expiry can be stored, as upstream.",
		Example: "  iggy pat create ci\n  iggy pat create ci 1day 12hours\n  iggy pat create --store-token deploy",
		Args:    rangeArgs(1, -1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if store && len(args) > 1 {
				return usagef("--store-token cannot be combined with an expiry: only tokens without expiry are stored")
			}
			expiry, err := parsePATExpiry(args[1:])
			if err != nil {
				return err
			}
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				token, err := c.CreatePersonalAccessToken(ctx, args[0], expiry)
				if err != nil {
					return err
				}
				if store {
					if err := a.storeToken(patService(a.globals.tcpServerAddress), args[0], token); err != nil {
						return err
					}
					a.say("Personal access token with name: %s and without token expire time created and stored; use it with -n %s", args[0], args[0])
					return nil
				}
				if a.globals.output == formatJSON {
					return writeView(a.stdout, formatJSON, view{json: map[string]string{"name": args[0], "token": token}})
				}
				if a.globals.quiet {
					fmt.Fprintln(a.stdout, token) // the token is the result, even in quiet mode
					return nil
				}
				a.say("Personal access token with name: %s created\nToken: %s", args[0], token)
				return nil
			})
		},
	}
	create.Flags().BoolVarP(&store, "store-token", "s", false, "store the token for -n/--token-name instead of printing it")
	del := &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"d"},
		Short:   "Delete personal access token with given name",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, true, func(ctx context.Context, c *client.Client) error {
				if err := c.DeletePersonalAccessToken(ctx, args[0]); err != nil {
					return err
				}
				a.say("Personal access token with name: %s deleted", args[0])
				return nil
			})
		},
	}
	list := a.listCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"l"},
		Short:   "List the logged-in user's personal access tokens",
	}, func(ctx context.Context, c *client.Client) (view, error) {
		pats, err := c.GetPersonalAccessTokens(ctx)
		if err != nil {
			return view{}, err
		}
		type patJSON struct {
			Name     string `json:"name"`
			ExpiryAt uint64 `json:"expiry_at"`
		}
		j := make([]patJSON, 0, len(pats))
		var rows [][]string
		for _, p := range pats {
			j = append(j, patJSON{Name: p.Name, ExpiryAt: p.ExpiryAt})
			exp := "unlimited"
			if p.ExpiryAt != 0 {
				exp = formatMicros(p.ExpiryAt)
			}
			rows = append(rows, []string{p.Name, exp})
		}
		return view{json: j, headers: []string{"Name", "Token Expiry Time"}, rows: rows}, nil
	})
	return group("pat", "", "personal access token operations", create, del, list)
}
