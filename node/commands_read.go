package node

import (
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/transport"
	"github.com/lodestream/lodestream/wire"
)

// handleNonReplicated serves reads and local commands (§3.2): Ping before
// login; everything else needs a bound session. Unknown codes answer 3,
// replicated codes sent as NonReplicated answer 5, legacy login codes evict.
func (n *Node) handleNonReplicated(c *transport.Conn, s *session, hdr wire.RequestHeader, body []byte) {
	info, known := hdr.Code.Info()
	switch {
	case !known:
		n.sendStatus(c, hdr, wire.ErrInvalidCommand)
		return
	case info.Legacy:
		n.evict(c, s, hdr.Client, wire.EvictMalformedLogin)
		return
	case wire.ReplicatedSentAsNonReplicated(hdr.Code):
		n.sendStatus(c, hdr, wire.ErrFeatureUnavailable)
		return
	}
	v := s.view()
	if !v.bound && !wire.PreAuthAllowed(hdr.Code) {
		n.sendStatus(c, hdr, wire.ErrUnauthenticated)
		return
	}
	switch hdr.Code {
	case wire.CodePollMessages:
		n.handlePoll(c, v, hdr, body)
		return
	case wire.CodeFlushUnsavedBuffer:
		// The server has no unsaved buffer to flush (wire-protocol §3.2).
		n.sendStatus(c, hdr, wire.ErrFeatureUnavailable)
		return
	}
	req, err := wire.DecodeRequestBody(hdr.Code, body)
	if err != nil {
		n.sendStatus(c, hdr, bodyErrorCode(err))
		return
	}
	payload, status := n.read(origin{connID: c.ID(), remote: c.RemoteAddr()}, v, req)
	if status != wire.OK {
		n.sendStatus(c, hdr, status)
		return
	}
	n.sendOK(c, hdr, payload)
}

// origin is where a read came from: a binary connection, or an HTTP
// caller (connID 0: no connection of its own).
type origin struct {
	connID uint32
	remote string
}

// read answers one decoded read request.
func (n *Node) read(from origin, v sessionView, req wire.Request) ([]byte, wire.ErrorCode) {
	allowed := func(perm metadata.Permission, streamID, topicID uint32) bool {
		return n.state.Authorize(v.userID, perm, streamID, topicID)
	}
	switch r := req.(type) {
	case wire.EmptyRequest:
		switch r.Command {
		case wire.CodePing:
			return nil, wire.OK
		case wire.CodeGetStats:
			if !allowed(metadata.PermReadServers, 0, 0) {
				return nil, wire.ErrUnauthorized
			}
			st := n.stats()
			return st.Append(nil), wire.OK
		case wire.CodeGetClusterMetadata:
			m := n.clusterMetadataFor(from.remote)
			return m.Append(nil), wire.OK
		case wire.CodeGetMe:
			if d, ok := n.clientDetails(from.connID); from.connID != 0 && ok {
				return d.Append(nil), wire.OK
			}
			return nil, wire.OK
		case wire.CodeGetClients:
			if !allowed(metadata.PermReadServers, 0, 0) {
				return nil, wire.ErrUnauthorized
			}
			var out []byte
			for _, s := range n.sessions.all() {
				cl := n.clientEntry(s.view())
				out = cl.Append(out)
			}
			return out, wire.OK
		case wire.CodeGetUsers:
			if !allowed(metadata.PermReadUsers, 0, 0) {
				return nil, wire.ErrUnauthorized
			}
			var out []byte
			for _, u := range n.state.Users() {
				wu := wireUser(u)
				out = wu.Append(out)
			}
			return out, wire.OK
		case wire.CodeGetPersonalAccessTokens:
			var out []byte
			for _, p := range n.state.PersonalAccessTokens(v.userID) {
				wp := wire.PersonalAccessToken{Name: p.Name, ExpiryAt: p.ExpiryAt}
				out = wp.Append(out)
			}
			return out, wire.OK
		case wire.CodeGetStreams:
			if !allowed(metadata.PermReadStreams, 0, 0) {
				return nil, wire.ErrUnauthorized
			}
			var out []byte
			for _, s := range n.state.Streams() {
				ws := n.streamWithStats(s)
				out = ws.Append(out)
			}
			return out, wire.OK
		}
	case wire.GetClientRequest:
		if !allowed(metadata.PermReadServers, 0, 0) {
			return nil, wire.ErrUnauthorized
		}
		if d, ok := n.clientDetails(r.ClientID); ok {
			return d.Append(nil), wire.OK
		}
		return nil, wire.OK // empty = not found
	case wire.IdentRequest:
		return n.readIdent(v, r, allowed)
	case wire.TopicRequest:
		stream, topic := wireIdent(r.Stream), wireIdent(r.Topic)
		switch r.Command {
		case wire.CodeGetTopic:
			t, code := n.state.GetTopic(stream, topic)
			if code != metadata.CodeOK {
				return nil, wire.OK // empty = not found
			}
			if !allowed(metadata.PermReadTopic, t.StreamID, t.ID) {
				return nil, wire.ErrUnauthorized
			}
			return n.appendTopicDetailsWithStats(nil, t), wire.OK
		case wire.CodeGetConsumerGroups:
			t, code := n.state.GetTopic(stream, topic)
			if code != metadata.CodeOK {
				return nil, wire.ErrorCode(code)
			}
			if !allowed(metadata.PermReadTopic, t.StreamID, t.ID) {
				return nil, wire.ErrUnauthorized
			}
			var out []byte
			for _, g := range t.ConsumerGroups {
				wg := wireGroup(g)
				out = wg.Append(out)
			}
			return out, wire.OK
		}
	case wire.GroupRequest:
		return n.readGroup(v, r, allowed)
	case wire.ConsumerOffsetRequest:
		return n.readConsumerOffset(v, r)
	case wire.GetSnapshotFileRequest:
		if !allowed(metadata.PermReadServers, 0, 0) {
			return nil, wire.ErrUnauthorized
		}
		return n.diagnosticsSnapshot(r)
	case wire.DescribeOptionsRequest:
		return wire.AppendOptionSpecs(nil, wire.OptionSpecsForScope(r.Scope)), wire.OK
	}
	return nil, wire.ErrInvalidCommand
}

func (n *Node) readIdent(v sessionView, r wire.IdentRequest, allowed func(metadata.Permission, uint32, uint32) bool) ([]byte, wire.ErrorCode) {
	id := wireIdent(r.ID)
	switch r.Command {
	case wire.CodeGetStream:
		s, ok := n.state.GetStream(id)
		if !ok {
			return nil, wire.OK // empty = not found
		}
		if !allowed(metadata.PermReadStream, s.ID, 0) {
			return nil, wire.ErrUnauthorized
		}
		return n.appendStreamDetailsWithStats(nil, s), wire.OK
	case wire.CodeGetTopics:
		s, ok := n.state.GetStream(id)
		if !ok {
			return wire.AppendTopics(nil, nil), wire.OK // missing stream → count 0
		}
		if !allowed(metadata.PermReadTopics, s.ID, 0) {
			return nil, wire.ErrUnauthorized
		}
		headers := make([]wire.TopicHeader, 0, len(s.Topics))
		for _, t := range s.Topics {
			headers = append(headers, n.topicHeaderWithStats(t))
		}
		return wire.AppendTopics(nil, headers), wire.OK
	case wire.CodeGetUser:
		u, ok := n.state.GetUser(id)
		if !ok {
			return nil, wire.OK // empty = not found
		}
		if u.ID != v.userID && !allowed(metadata.PermReadUsers, 0, 0) {
			return nil, wire.ErrUnauthorized
		}
		return appendUserDetails(nil, u), wire.OK
	}
	return nil, wire.ErrInvalidCommand
}

func (n *Node) readGroup(v sessionView, r wire.GroupRequest, allowed func(metadata.Permission, uint32, uint32) bool) ([]byte, wire.ErrorCode) {
	stream, topic, group := wireIdent(r.Stream), wireIdent(r.Topic), wireIdent(r.Group)
	t, code := n.state.GetTopic(stream, topic)
	if code != metadata.CodeOK {
		return nil, wire.ErrorCode(code) // missing parents answer 1009/2010
	}
	if !allowed(metadata.PermReadTopic, t.StreamID, t.ID) {
		return nil, wire.ErrUnauthorized
	}
	switch r.Command {
	case wire.CodeGetConsumerGroup:
		g, code := n.state.GetConsumerGroup(stream, topic, group)
		if code != metadata.CodeOK {
			return nil, wire.OK // empty = not found
		}
		return appendGroupDetails(nil, g), wire.OK
	case wire.CodeSyncConsumerGroup:
		generation, partitions, code := n.state.Assignment(stream, topic, group, metadata.ClientID(v.client))
		if code != metadata.CodeOK {
			return nil, wire.OK // empty = not a member
		}
		a := wire.Assignment{Generation: generation, Partitions: partitions}
		return a.Append(nil), wire.OK
	}
	return nil, wire.ErrInvalidCommand
}

// clientEntry is the Client view of one connection.
func (n *Node) clientEntry(v sessionView) wire.Client {
	cl := wire.Client{ClientID: v.connID, UserID: noUserID, Transport: v.transport, Address: v.addr}
	if v.bound {
		cl.UserID = v.userID
		cl.ConsumerGroupsCount = uint32(len(n.state.ClientMemberships(metadata.ClientID(v.client))))
	}
	return cl
}

// clientDetails is the ClientDetails view of a connection by its id.
func (n *Node) clientDetails(connID uint32) (wire.ClientDetails, bool) {
	s, ok := n.sessions.get(connID)
	if !ok {
		return wire.ClientDetails{}, false
	}
	v := s.view()
	d := wire.ClientDetails{Client: n.clientEntry(v)}
	if v.bound {
		for _, m := range n.state.ClientMemberships(metadata.ClientID(v.client)) {
			d.ConsumerGroups = append(d.ConsumerGroups, wire.ClientGroup{StreamID: m.StreamID, TopicID: m.TopicID, GroupID: m.GroupID})
		}
	}
	return d, true
}
