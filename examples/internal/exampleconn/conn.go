// Package exampleconn holds what the examples share: the connection and topic flags, and a
// signed-in, leader-aware client.
package exampleconn

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// Flags are the connection and topic options every example takes.
type Flags struct {
	addr, username, password, stream, topic *string
}

// Register adds --addr, --username, --password, --stream and --topic to the default flag set.
func Register() *Flags {
	return &Flags{
		addr:     flag.String("addr", "127.0.0.1:8090", "server TCP address (comma-separated seeds for a cluster)"),
		username: flag.String("username", "iggy", "user name"),
		password: flag.String("password", "iggy", "password"),
		stream:   flag.String("stream", "demo", "stream ID or name"),
		topic:    flag.String("topic", "events", "topic ID or name"),
	}
}

// Dial signs in (following the cluster leader) and returns the client with the parsed stream
// and topic identifiers.
func (f *Flags) Dial(ctx context.Context) (*client.Client, wire.Identifier, wire.Identifier, error) {
	stream, err := client.ParseIdentifier(*f.stream)
	if err != nil {
		return nil, wire.Identifier{}, wire.Identifier{}, err
	}
	topic, err := client.ParseIdentifier(*f.topic)
	if err != nil {
		return nil, wire.Identifier{}, wire.Identifier{}, err
	}
	c, err := client.DialCluster(ctx, strings.Split(*f.addr, ","), client.WithCredentials(*f.username, *f.password))
	if err != nil {
		return nil, wire.Identifier{}, wire.Identifier{}, fmt.Errorf("connect to %s: %w", *f.addr, err)
	}
	return c, stream, topic, nil
}

// Where names the topic for messages ("demo/events").
func (f *Flags) Where() string { return *f.stream + "/" + *f.topic }
