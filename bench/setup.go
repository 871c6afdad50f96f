package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodestream/lodestream/client"
	"github.com/lodestream/lodestream/wire"
)

// ErrDurabilityUnsupported marks a server that refused the durability topic option.
var ErrDurabilityUnsupported = errors.New("the server does not support the requested durability")

// connect dials and signs in one actor's (or the setup's) connection.
func connect(ctx context.Context, cfg *Config) (*client.Client, error) {
	c, err := client.Dial(ctx, cfg.Address, client.WithTransport(cfg.Transport))
	if err != nil {
		return nil, fmt.Errorf("connect to %s over %s: %w", cfg.Address, cfg.Transport, err)
	}
	if _, err := c.LoginUser(ctx, cfg.Username, cfg.Password); err != nil {
		c.Close()
		return nil, fmt.Errorf("log in as %q at %s: %w", cfg.Username, cfg.Address, err)
	}
	return c, nil
}

// createStreams creates bench-1..bench-N, each with topic "bench" of cfg.Partitions partitions and
// the requested durability. A leftover stream is an error unless cfg.Recreate, which deletes it first.
func createStreams(ctx context.Context, admin *client.Client, cfg *Config) ([]streamRef, error) {
	refs := make([]streamRef, 0, cfg.Streams)
	for i := range cfg.Streams {
		name := StreamName(i)
		_, err := admin.GetStream(ctx, wire.NamedID(name))
		switch {
		case err == nil && !cfg.Recreate:
			return refs, fmt.Errorf("stream %q already exists (left by a --keep run?): delete it or pass --recreate", name)
		case err == nil:
			if err := admin.DeleteStream(ctx, wire.NamedID(name)); err != nil {
				return refs, fmt.Errorf("delete leftover stream %q: %w", name, err)
			}
		case client.CodeOf(err) != wire.ErrStreamIDNotFound:
			return refs, fmt.Errorf("look up stream %q: %w", name, err)
		}
		stream, err := admin.CreateStream(ctx, name)
		if err != nil {
			return refs, fmt.Errorf("create stream %q: %w", name, err)
		}
		ref := streamRef{Name: name, StreamID: stream.ID}
		refs = append(refs, ref) // registered before the topic so cleanup deletes the stream
		topic, err := admin.CreateTopic(ctx, wire.NumericID(stream.ID), TopicName, uint32(cfg.Partitions),
			wire.OptionString("durability", cfg.Durability))
		if err != nil {
			code := client.CodeOf(err)
			if code == wire.ErrUnsupportedOptionKey || code == wire.ErrInvalidOptionValue {
				return refs, fmt.Errorf("create topic %s/%s with durability=%s: %w (%v)", name, TopicName,
					cfg.Durability, ErrDurabilityUnsupported, err)
			}
			return refs, fmt.Errorf("create topic %s/%s: %w", name, TopicName, err)
		}
		ref.TopicID = topic.ID
		for _, p := range topic.Partitions {
			ref.Partitions = append(ref.Partitions, p.ID)
			ref.StoredMessages = append(ref.StoredMessages, 0)
		}
		if len(ref.Partitions) != cfg.Partitions {
			return refs, fmt.Errorf("topic %s/%s was created with %d partitions, asked for %d", name, TopicName,
				len(ref.Partitions), cfg.Partitions)
		}
		refs[len(refs)-1] = ref
	}
	return refs, nil
}

// findStreams looks up bench-1..bench-N for a consumer-only workload and what each partition stores.
func findStreams(ctx context.Context, admin *client.Client, cfg *Config) ([]streamRef, error) {
	refs := make([]streamRef, 0, cfg.Streams)
	var stored uint64
	for i := range cfg.Streams {
		name := StreamName(i)
		stream, err := admin.GetStream(ctx, wire.NamedID(name))
		if err != nil {
			if client.CodeOf(err) == wire.ErrStreamIDNotFound {
				return nil, fmt.Errorf("stream %q does not exist: run the matching producer workload with --keep first", name)
			}
			return nil, fmt.Errorf("look up stream %q: %w", name, err)
		}
		topic, err := admin.GetTopic(ctx, wire.NumericID(stream.ID), wire.NamedID(TopicName))
		if err != nil {
			return nil, fmt.Errorf("look up topic %s/%s: %w", name, TopicName, err)
		}
		ref := streamRef{Name: name, StreamID: stream.ID, TopicID: topic.ID}
		for _, p := range topic.Partitions {
			ref.Partitions = append(ref.Partitions, p.ID)
			ref.StoredMessages = append(ref.StoredMessages, p.MessagesCount)
			stored += p.MessagesCount
		}
		refs = append(refs, ref)
	}
	if stored == 0 {
		return nil, fmt.Errorf("streams bench-1..bench-%d hold no messages: run the matching producer workload with --keep first", cfg.Streams)
	}
	return refs, nil
}

// deleteStreams removes the streams a run created; it tries every one and joins the failures.
func deleteStreams(ctx context.Context, admin *client.Client, refs []streamRef) error {
	var errs []error
	for _, r := range refs {
		if err := admin.DeleteStream(ctx, wire.NumericID(r.StreamID)); err != nil {
			errs = append(errs, fmt.Errorf("delete stream %q: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}
