package wire

import "sort"

// GlobalPermissions are the ten server-wide flags, in wire order.
type GlobalPermissions struct {
	ManageServers, ReadServers, ManageUsers, ReadUsers, ManageStreams,
	ReadStreams, ManageTopics, ReadTopics, PollMessages, SendMessages bool
}

// StreamPermissions are one stream's six flags plus its per-topic entries.
type StreamPermissions struct {
	StreamID                                                                       uint32
	ManageStream, ReadStream, ManageTopics, ReadTopics, PollMessages, SendMessages bool
	Topics                                                                         []TopicPermissions
}

// TopicPermissions are one topic's four flags.
type TopicPermissions struct {
	TopicID                                            uint32
	ManageTopic, ReadTopic, PollMessages, SendMessages bool
}

// Permissions is WirePermissions (§4.1): global flags, then a linked list of streams, each with a linked
// list of topics ("has next" bytes between entries).
type Permissions struct {
	Global  GlobalPermissions
	Streams []StreamPermissions
}

// PermissionEntriesMax bounds the stream plus topic entries one Permissions value may carry, so a
// hostile body cannot make the decoder build millions of entries (a body of 64 MiB could otherwise
// describe five million). Far above any real deployment's stream × topic grants.
const PermissionEntriesMax = 1 << 16

// Append encodes the permissions. Streams and topics are written sorted by id so the encoding is
// deterministic.
func (p *Permissions) Append(b []byte) []byte {
	g := p.Global
	for _, v := range []bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams,
		g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages} {
		b = appendBool(b, v)
	}
	streams := append([]StreamPermissions(nil), p.Streams...)
	sort.Slice(streams, func(i, j int) bool { return streams[i].StreamID < streams[j].StreamID })
	b = appendBool(b, len(streams) > 0)
	for i, s := range streams {
		b = appendU32(b, s.StreamID)
		for _, v := range []bool{s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages} {
			b = appendBool(b, v)
		}
		topics := append([]TopicPermissions(nil), s.Topics...)
		sort.Slice(topics, func(i, j int) bool { return topics[i].TopicID < topics[j].TopicID })
		b = appendBool(b, len(topics) > 0)
		for j, t := range topics {
			b = appendU32(b, t.TopicID)
			for _, v := range []bool{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages} {
				b = appendBool(b, v)
			}
			b = appendBool(b, j+1 < len(topics))
		}
		b = appendBool(b, i+1 < len(streams))
	}
	return b
}

// Bytes returns the encoding as a new slice.
func (p *Permissions) Bytes() []byte { return p.Append(nil) }

func (d *decoder) permissions(field string) *Permissions {
	// Field names are constant inside the loops (no per-element formatting on the hot path); a failure
	// is annotated with the element index afterwards.
	p := &Permissions{}
	g := &p.Global
	gf := field + ".global"
	g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers = d.bool(gf), d.bool(gf), d.bool(gf), d.bool(gf)
	g.ManageStreams, g.ReadStreams, g.ManageTopics, g.ReadTopics = d.bool(gf), d.bool(gf), d.bool(gf), d.bool(gf)
	g.PollMessages, g.SendMessages = d.bool(gf), d.bool(gf)
	more := d.bool(field + ".has_streams")
	seenStreams := map[uint32]bool{}
	entries := 0
	for more && !d.failed() {
		s := d.streamPermissions(field+".stream", &entries)
		if !d.failed() && seenStreams[s.StreamID] {
			d.fail(field+".stream.stream_id", "duplicate stream id %d", s.StreamID)
		}
		d.annotate(len(p.Streams))
		seenStreams[s.StreamID] = true
		p.Streams = append(p.Streams, s)
		more = d.bool(field + ".has_next_stream")
	}
	if d.failed() {
		return nil
	}
	return p
}

func (d *decoder) streamPermissions(field string, entries *int) StreamPermissions {
	if *entries++; *entries > PermissionEntriesMax {
		d.fail(field, "more than %d stream and topic entries", PermissionEntriesMax)
		return StreamPermissions{}
	}
	s := StreamPermissions{StreamID: d.u32(field + ".stream_id")}
	sf := field + ".flags"
	s.ManageStream, s.ReadStream, s.ManageTopics = d.bool(sf), d.bool(sf), d.bool(sf)
	s.ReadTopics, s.PollMessages, s.SendMessages = d.bool(sf), d.bool(sf), d.bool(sf)
	more := d.bool(field + ".has_topics")
	var seen map[uint32]bool
	for more && !d.failed() {
		if *entries++; *entries > PermissionEntriesMax {
			d.fail(field+".topic", "more than %d stream and topic entries", PermissionEntriesMax)
			return s
		}
		if seen == nil {
			seen = map[uint32]bool{}
		}
		t := TopicPermissions{TopicID: d.u32(field + ".topic.topic_id")}
		if !d.failed() && seen[t.TopicID] {
			d.fail(field+".topic.topic_id", "duplicate topic id %d", t.TopicID)
		}
		tf := field + ".topic.flags"
		t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages = d.bool(tf), d.bool(tf), d.bool(tf), d.bool(tf)
		d.annotate(len(s.Topics))
		seen[t.TopicID] = true
		s.Topics = append(s.Topics, t)
		more = d.bool(field + ".topic.has_next_topic")
	}
	return s
}

// permissionsBlock decodes [perm_len u32][Permissions] where the permissions must fill perm_len exactly.
func (d *decoder) permissionsBlock(field string) *Permissions {
	n := d.u32(field + ".length")
	if d.failed() {
		return nil
	}
	if uint64(n) > uint64(d.remaining()) {
		d.fail(field, "permissions length %d exceeds the %d bytes left", n, d.remaining())
		return nil
	}
	start := d.off
	block := d.take(field, int(n))
	sub := &decoder{body: d.body, buf: block}
	p := sub.permissions(field)
	sub.end()
	if sub.failure != nil {
		sub.failure.Offset += start
		d.failure = sub.failure
		return nil
	}
	return p
}

// appendPermissionsBlock writes [perm_len u32][Permissions].
func appendPermissionsBlock(b []byte, p *Permissions) []byte {
	start := len(b)
	b = appendU32(b, 0)
	b = p.Append(b)
	putU32At(b, start, uint32(len(b)-start-4))
	return b
}

// DecodePermissions decodes a body that is exactly one Permissions encoding.
func DecodePermissions(b []byte) (*Permissions, error) {
	d := newDecoder("Permissions", b)
	p := d.permissions("permissions")
	d.end()
	return p, d.err()
}
