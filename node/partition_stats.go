package node

import (
	"github.com/lodestream/lodestream/metadata"
	"github.com/lodestream/lodestream/wire"
)

// Message, size and segment figures of the read views come from the logs.

type logTotals struct {
	sizeBytes, messages uint64
	segments            uint32
}

func (n *Node) topicTotals(streamID uint32, t metadata.Topic) logTotals {
	var tot logTotals
	for _, p := range t.Partitions {
		st := n.plane.partitionStats(partitionKey{streamID, t.ID, p.ID})
		tot.sizeBytes += st.SizeBytes
		tot.messages += st.MessagesCount
		tot.segments += st.SegmentsCount
	}
	return tot
}

func (n *Node) streamWithStats(s metadata.Stream) wire.Stream {
	ws := wireStream(s)
	for _, t := range s.Topics {
		tot := n.topicTotals(s.ID, t)
		ws.SizeBytes += tot.sizeBytes
		ws.MessagesCount += tot.messages
	}
	return ws
}

func (n *Node) topicHeaderWithStats(t metadata.Topic) wire.TopicHeader {
	h := wireTopicHeader(t)
	tot := n.topicTotals(t.StreamID, t)
	h.SizeBytes, h.MessagesCount = tot.sizeBytes, tot.messages
	return h
}

func (n *Node) appendStreamDetailsWithStats(b []byte, s metadata.Stream) []byte {
	d := wire.StreamDetails{Stream: n.streamWithStats(s)}
	for _, t := range s.Topics {
		d.Topics = append(d.Topics, n.topicHeaderWithStats(t))
	}
	return d.Append(b)
}

func (n *Node) appendTopicDetailsWithStats(b []byte, t metadata.Topic) []byte {
	d := wire.TopicDetails{TopicHeader: n.topicHeaderWithStats(t)}
	for _, p := range t.Partitions {
		st := n.plane.partitionStats(partitionKey{t.StreamID, t.ID, p.ID})
		d.Partitions = append(d.Partitions, wire.Partition{
			ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: st.SegmentsCount,
			CurrentOffset: st.CurrentOffset, SizeBytes: st.SizeBytes, MessagesCount: st.MessagesCount,
		})
	}
	return d.Append(b)
}

// planeTotals sums every log (GetStats).
func (n *Node) planeTotals() logTotals {
	var tot logTotals
	for _, s := range n.state.Streams() {
		for _, t := range s.Topics {
			tt := n.topicTotals(s.ID, t)
			tot.sizeBytes += tt.sizeBytes
			tot.messages += tt.messages
			tot.segments += tt.segments
		}
	}
	return tot
}
