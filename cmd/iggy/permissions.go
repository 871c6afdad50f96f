package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lodestream/lodestream/wire"
)

// Stream and topic permission names of upstream's -s/--stream-permissions, short and long.
var (
	streamPermissionNames = map[string]func(*wire.StreamPermissions){
		"m_str": func(s *wire.StreamPermissions) { s.ManageStream = true }, "manage_stream": func(s *wire.StreamPermissions) { s.ManageStream = true },
		"r_str": func(s *wire.StreamPermissions) { s.ReadStream = true }, "read_stream": func(s *wire.StreamPermissions) { s.ReadStream = true },
		"m_top": func(s *wire.StreamPermissions) { s.ManageTopics = true }, "manage_topics": func(s *wire.StreamPermissions) { s.ManageTopics = true },
		"r_top": func(s *wire.StreamPermissions) { s.ReadTopics = true }, "read_topics": func(s *wire.StreamPermissions) { s.ReadTopics = true },
		"p_msg": func(s *wire.StreamPermissions) { s.PollMessages = true }, "poll_messages": func(s *wire.StreamPermissions) { s.PollMessages = true },
		"s_msg": func(s *wire.StreamPermissions) { s.SendMessages = true }, "send_messages": func(s *wire.StreamPermissions) { s.SendMessages = true },
	}
	topicPermissionNames = map[string]func(*wire.TopicPermissions){
		"m_top": func(t *wire.TopicPermissions) { t.ManageTopic = true }, "manage_topic": func(t *wire.TopicPermissions) { t.ManageTopic = true },
		"r_top": func(t *wire.TopicPermissions) { t.ReadTopic = true }, "read_topic": func(t *wire.TopicPermissions) { t.ReadTopic = true },
		"p_msg": func(t *wire.TopicPermissions) { t.PollMessages = true }, "poll_messages": func(t *wire.TopicPermissions) { t.PollMessages = true },
		"s_msg": func(t *wire.TopicPermissions) { t.SendMessages = true }, "send_messages": func(t *wire.TopicPermissions) { t.SendMessages = true },
	}
)

// setNamed applies the comma-separated permission names of list to target, collecting unknown
// names into the error upstream prints ("Unknown permissions "x", "y" for stream ID: 1").
func setNamed[T any](list, what string, id uint64, names map[string]func(*T), target *T) error {
	var unknown []string
	for _, name := range strings.Split(list, ",") {
		set, ok := names[name]
		if !ok {
			if name == "" {
				name = "[empty]"
			}
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		set(target)
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("unknown permission %s for %s ID: %d", unknown[0], what, id)
	}
	return fmt.Errorf("unknown permissions %s for %s ID: %d", strings.Join(unknown, ", "), what, id)
}

// parseStreamPermissions reads one -s value: STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]... Stream and
// topic IDs are numeric, as upstream's.
func parseStreamPermissions(s string) (wire.StreamPermissions, error) {
	parts := strings.Split(s, "#")
	idText, perms, hasPerms := strings.Cut(parts[0], ":")
	id, err := strconv.ParseUint(idText, 10, 32)
	if err != nil {
		return wire.StreamPermissions{}, usagef("stream permissions %q: invalid stream ID %q (a number)", s, idText)
	}
	sp := wire.StreamPermissions{StreamID: uint32(id)}
	var errs []string
	if hasPerms {
		if err := setNamed(perms, "stream", id, streamPermissionNames, &sp); err != nil {
			errs = append(errs, err.Error())
		}
	}
	seen := map[uint32]bool{}
	for _, tp := range parts[1:] {
		tidText, tperms, hasTPerms := strings.Cut(tp, ":")
		tid, err := strconv.ParseUint(tidText, 10, 32)
		if err != nil {
			errs = append(errs, fmt.Sprintf("invalid topic ID %q", tidText))
			continue
		}
		t := wire.TopicPermissions{TopicID: uint32(tid)}
		if hasTPerms {
			if err := setNamed(tperms, "topic", tid, topicPermissionNames, &t); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		if seen[t.TopicID] {
			errs = append(errs, fmt.Sprintf("topic ID %d given twice", tid))
			continue
		}
		seen[t.TopicID] = true
		sp.Topics = append(sp.Topics, t)
	}
	if len(errs) > 0 {
		return wire.StreamPermissions{}, usagef("stream permissions %q: %s", s, strings.Join(errs, "; "))
	}
	return sp, nil
}

// buildPermissions combines -g and -s as upstream: nil when neither is given, global flags all
// false when only -s is.
func buildPermissions(global string, streams []string) (*wire.Permissions, error) {
	if global == "" && len(streams) == 0 {
		return nil, nil
	}
	p := &wire.Permissions{}
	if global != "" {
		g, err := parseGlobalPermissions(global)
		if err != nil {
			return nil, err
		}
		p.Global = g.Global
	}
	byID := map[uint32]wire.StreamPermissions{}
	for _, s := range streams {
		sp, err := parseStreamPermissions(s)
		if err != nil {
			return nil, err
		}
		byID[sp.StreamID] = sp // a later -s for the same stream wins, as upstream's map
	}
	for _, sp := range byID {
		p.Streams = append(p.Streams, sp)
	}
	sort.Slice(p.Streams, func(i, j int) bool { return p.Streams[i].StreamID < p.Streams[j].StreamID })
	return p, nil
}
