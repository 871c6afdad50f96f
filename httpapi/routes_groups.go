package httpapi

import (
	"net/http"

	"github.com/lodestream/lodestream/wire"
)

// getGroups: GET …/consumer-groups.
func (c *call) getGroups() {
	s, t, ok := c.topicPath()
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetConsumerGroups, wire.TopicRequest{Command: wire.CodeGetConsumerGroups, Stream: s, Topic: t}.AppendBody(nil))
	if !ok {
		return
	}
	groups, err := wire.DecodeConsumerGroups(reply)
	if !c.decoded(err) {
		return
	}
	out := make([]groupJSON, 0, len(groups))
	for _, g := range groups {
		out = append(out, groupOf(g))
	}
	writeJSON(c.w, http.StatusOK, out)
}

// groupPath is {stream_id}/{topic_id}/{group_id}.
func (c *call) groupPath(code wire.CommandCode) (wire.GroupRequest, bool) {
	ids, ok := c.idents("stream_id", "topic_id", "group_id")
	if !ok {
		return wire.GroupRequest{}, false
	}
	return wire.GroupRequest{Command: code, Stream: ids[0], Topic: ids[1], Group: ids[2]}, true
}

// getGroup: GET …/consumer-groups/{group_id}.
func (c *call) getGroup() {
	req, ok := c.groupPath(wire.CodeGetConsumerGroup)
	if !ok || c.query(true).bad {
		return
	}
	reply, ok := c.exec(wire.CodeGetConsumerGroup, req.AppendBody(nil))
	if !ok {
		return
	}
	if len(reply) == 0 {
		writeNotFound(c.w)
		return
	}
	g, err := wire.DecodeGroupDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, groupDetailsOf(g))
}

type groupNameRequest struct {
	Name *string `json:"name"`
}

func (r *groupNameRequest) validate() error { return required(r.Name != nil, "name") }

// createGroup: POST …/consumer-groups → 200 ConsumerGroupDetails.
func (c *call) createGroup() {
	s, t, ok := c.topicPath()
	if !ok {
		return
	}
	var req groupNameRequest
	if !c.decodeJSON(&req) || !c.checkName(*req.Name, wire.ErrInvalidConsumerGroupName) {
		return
	}
	reply, ok := c.exec(wire.CodeCreateConsumerGroup, wire.CreateConsumerGroupRequest{Stream: s, Topic: t, Name: *req.Name}.AppendBody(nil))
	if !ok {
		return
	}
	g, err := wire.DecodeGroupDetails(reply)
	if !c.decoded(err) {
		return
	}
	writeJSON(c.w, http.StatusOK, groupDetailsOf(g))
}

// deleteGroup: DELETE …/consumer-groups/{group_id} → 204.
func (c *call) deleteGroup() {
	req, ok := c.groupPath(wire.CodeDeleteConsumerGroup)
	if !ok {
		return
	}
	c.execNoContent(wire.CodeDeleteConsumerGroup, req.AppendBody(nil))
}
