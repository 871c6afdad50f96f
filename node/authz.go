package node

import "github.com/lodestream/lodestream/metadata"

// preAuthorize denies, before consensus, a write the acting user may not
// perform on entities that exist. Apply re-checks with the committed state
// (and decides for entities that do not resolve here), so this is an early
// answer, not the authority.
func (n *Node) preAuthorize(userID uint32, cmd metadata.Command) bool {
	if userID == metadata.RootUserID {
		return true
	}
	switch c := cmd.(type) {
	case metadata.CreateStream:
		return n.state.Authorize(userID, metadata.PermCreateStream, 0, 0)
	case metadata.UpdateStream:
		return n.streamAllowed(userID, metadata.PermManageStream, c.Stream)
	case metadata.DeleteStream:
		return n.streamAllowed(userID, metadata.PermManageStream, c.Stream)
	case metadata.PurgeStream:
		return n.streamAllowed(userID, metadata.PermManageStream, c.Stream)
	case metadata.CreateTopic:
		return n.streamAllowed(userID, metadata.PermCreateTopic, c.Stream)
	case metadata.UpdateTopic:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.DeleteTopic:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.PurgeTopic:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.CreatePartitions:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.DeletePartitions:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.TruncatePartition:
		return n.topicAllowed(userID, metadata.PermManageTopic, c.Stream, c.Topic)
	case metadata.CreateConsumerGroup:
		return n.topicAllowed(userID, metadata.PermReadTopic, c.Stream, c.Topic)
	case metadata.DeleteConsumerGroup:
		return n.topicAllowed(userID, metadata.PermReadTopic, c.Stream, c.Topic)
	case metadata.JoinConsumerGroup:
		return n.topicAllowed(userID, metadata.PermReadTopic, c.Stream, c.Topic)
	case metadata.LeaveConsumerGroup:
		return n.topicAllowed(userID, metadata.PermReadTopic, c.Stream, c.Topic)
	case metadata.CreateUser, metadata.UpdateUser, metadata.DeleteUser, metadata.UpdatePermissions:
		return n.state.Authorize(userID, metadata.PermManageUsers, 0, 0)
	case metadata.ChangePassword:
		if u, ok := n.state.GetUser(c.User); ok && u.ID == userID {
			return true // a user may change their own password
		}
		return n.state.Authorize(userID, metadata.PermManageUsers, 0, 0)
	}
	// Personal access tokens belong to the acting user.
	return true
}

// streamAllowed: an unresolvable stream is left to apply (not found).
func (n *Node) streamAllowed(userID uint32, perm metadata.Permission, stream metadata.Ident) bool {
	s, ok := n.state.GetStream(stream)
	if !ok {
		return true
	}
	return n.state.Authorize(userID, perm, s.ID, 0)
}

// topicAllowed: an unresolvable topic is left to apply (not found).
func (n *Node) topicAllowed(userID uint32, perm metadata.Permission, stream, topic metadata.Ident) bool {
	t, code := n.state.GetTopic(stream, topic)
	if code != metadata.CodeOK {
		return true
	}
	return n.state.Authorize(userID, perm, t.StreamID, t.ID)
}
