package transport

// Kind names the client transport a connection arrived on.
type Kind uint8

// Client transports. TLS on TCP is KindTCP; WSS is KindWebSocket.
const (
	KindTCP Kind = iota + 1
	KindQUIC
	KindWebSocket
)

func (k Kind) String() string {
	switch k {
	case KindTCP:
		return "tcp"
	case KindQUIC:
		return "quic"
	case KindWebSocket:
		return "websocket"
	}
	return "unknown"
}

// WireByte is the transport byte of a Client entry (wire-protocol §8.6:
// 1 TCP, 2 QUIC, 4 WebSocket).
func (k Kind) WireByte() uint8 {
	switch k {
	case KindQUIC:
		return 2
	case KindWebSocket:
		return 4
	}
	return 1
}
