package node

import "github.com/lodestream/lodestream/consensus"

// sendAll hands a Ready's messages to the replica bus. A prepare the
// primary broadcasts appears once per backup, identical but for To; it is
// encoded once and the frame shared by the peers' queues (a batch of 1 MB
// was encoded, zeroed and copied once per backup: the primary's largest
// cost in a cluster produce profile). The bus does not copy the body at
// all: its writer sends it from the prepare consensus keeps.
func sendAll(p peerSender, msgs []consensus.Message) {
	var tos [32]uint8 // a group has at most 32 replicas
	for i := 0; i < len(msgs); {
		j := i + 1
		for j < len(msgs) && sameBroadcastPrepare(&msgs[i], &msgs[j]) {
			j++
		}
		if j-i == 1 {
			p.Send(msgs[i].To, &msgs[i])
		} else {
			to := tos[:0]
			for k := i; k < j; k++ {
				to = append(to, msgs[k].To)
			}
			p.SendShared(to, &msgs[i])
		}
		i = j
	}
}

// sameBroadcastPrepare reports whether b is a's prepare to another replica
// (everything a prepare frame encodes is the same).
func sameBroadcastPrepare(a, b *consensus.Message) bool {
	return a.Kind == consensus.MsgPrepare && b.Kind == consensus.MsgPrepare && a.Prepare != nil && a.Prepare == b.Prepare &&
		a.Group == b.Group && a.From == b.From && a.View == b.View && a.To != b.To
}
