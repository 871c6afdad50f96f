package wire

import (
	"fmt"
	"sort"
)

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

// Size limits that keep decoding bounded regardless of input (each stream entry is ≥ 12 bytes and each
// topic entry ≥ 9, so the body length bounds these too; the constants make the bound explicit).
const (
	permissionStreamsMax = 1 << 20
	permissionTopicsMax  = 1 << 20
)

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
	p := &Permissions{}
	g := &p.Global
	for i, dst := range []*bool{&g.ManageServers, &g.ReadServers, &g.ManageUsers, &g.ReadUsers, &g.ManageStreams,
		&g.ReadStreams, &g.ManageTopics, &g.ReadTopics, &g.PollMessages, &g.SendMessages} {
		*dst = d.bool(fmt.Sprintf("%s.global[%d]", field, i))
	}
	more := d.bool(field + ".has_streams")
	seenStreams := map[uint32]bool{}
	for more && !d.failed() {
		if len(p.Streams) >= permissionStreamsMax {
			d.fail(field+".streams", "more than %d streams", permissionStreamsMax)
			return nil
		}
		sf := fmt.Sprintf("%s.streams[%d]", field, len(p.Streams))
		s := StreamPermissions{StreamID: d.u32(sf + ".stream_id")}
		if !d.failed() && seenStreams[s.StreamID] {
			d.fail(sf+".stream_id", "duplicate stream id %d", s.StreamID)
			return nil
		}
		seenStreams[s.StreamID] = true
		for i, dst := range []*bool{&s.ManageStream, &s.ReadStream, &s.ManageTopics, &s.ReadTopics, &s.PollMessages, &s.SendMessages} {
			*dst = d.bool(fmt.Sprintf("%s.flags[%d]", sf, i))
		}
		moreTopics := d.bool(sf + ".has_topics")
		seenTopics := map[uint32]bool{}
		for moreTopics && !d.failed() {
			if len(s.Topics) >= permissionTopicsMax {
				d.fail(sf+".topics", "more than %d topics", permissionTopicsMax)
				return nil
			}
			tf := fmt.Sprintf("%s.topics[%d]", sf, len(s.Topics))
			t := TopicPermissions{TopicID: d.u32(tf + ".topic_id")}
			if !d.failed() && seenTopics[t.TopicID] {
				d.fail(tf+".topic_id", "duplicate topic id %d", t.TopicID)
				return nil
			}
			seenTopics[t.TopicID] = true
			for i, dst := range []*bool{&t.ManageTopic, &t.ReadTopic, &t.PollMessages, &t.SendMessages} {
				*dst = d.bool(fmt.Sprintf("%s.flags[%d]", tf, i))
			}
			s.Topics = append(s.Topics, t)
			moreTopics = d.bool(tf + ".has_next_topic")
		}
		p.Streams = append(p.Streams, s)
		more = d.bool(sf + ".has_next_stream")
	}
	if d.failed() {
		return nil
	}
	return p
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
