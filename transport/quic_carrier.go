package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// errNoRequestStream: a frame to write with no request stream waiting for
// it (an eviction of an idle connection). QUIC can only answer on a
// request's stream, so the connection is closed instead.
var errNoRequestStream = errors.New("quic: no request stream waiting for a reply")

// quicCarrier carries one request per bidirectional stream: the client
// writes one frame and FINs, the server answers with one frame and FINs.
// Replies are written in request order to the streams waiting for them.
type quicCarrier struct {
	qc *quic.Conn

	mu        sync.Mutex
	waiting   []*quic.Stream // request read, reply not yet written (FIFO)
	lastWrite time.Time
}

// quicCloseGrace: a connection closed right after a reply (an eviction,
// a last answer) lingers this long, or until the client closes it, so
// the reply is delivered before CONNECTION_CLOSE discards unsent data.
const quicCloseGrace = 2 * time.Second

// handshake: quic-go hands out connections once their handshake is done.
func (q *quicCarrier) handshake(*Conn) error { return nil }

func (q *quicCarrier) nextFrame(c *Conn) ([]byte, int64, error) {
	// Waiting for a request has no deadline, as on TCP: the login deadline
	// and the idle timeout bound an idle connection.
	st, err := q.qc.AcceptStream(context.Background())
	if err != nil {
		return nil, 0, err
	}
	frame, held, err := c.readExactFrame(st, func(extra time.Duration) {
		_ = st.SetReadDeadline(time.Now().Add(c.cfg.FrameReadTimeout + extra))
	})
	if err != nil {
		st.CancelRead(quicStreamRefused)
		st.CancelWrite(quicStreamRefused)
		st.ReleaseStreamCredit()
		return nil, 0, fmt.Errorf("quic request stream: %w", err)
	}
	q.mu.Lock()
	q.waiting = append(q.waiting, st)
	q.mu.Unlock()
	return frame, held, nil
}

// writeFrame answers the oldest waiting request stream and FINs it. A
// stream the client abandoned (reset) drops its reply without failing the
// connection.
func (q *quicCarrier) writeFrame(frame []byte, deadline time.Time) error {
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.mu.Unlock()
		return errNoRequestStream
	}
	st := q.waiting[0]
	q.waiting[0] = nil
	q.waiting = q.waiting[1:]
	q.mu.Unlock()
	defer st.ReleaseStreamCredit()
	defer func() {
		q.mu.Lock()
		q.lastWrite = time.Now()
		q.mu.Unlock()
	}()
	_ = st.SetWriteDeadline(deadline)
	_, err := st.Write(frame)
	if err == nil {
		err = st.Close()
	}
	if err != nil && q.qc.Context().Err() == nil {
		// A stream-level failure (the client reset or stopped this
		// stream): only this reply is lost; the connection lives on.
		return nil
	}
	return err
}

func (q *quicCarrier) close() {
	q.mu.Lock()
	linger := time.Until(q.lastWrite.Add(quicCloseGrace))
	q.mu.Unlock()
	if linger <= 0 {
		_ = q.qc.CloseWithError(quicCloseShutdown, "closed")
		return
	}
	go func() {
		t := time.NewTimer(linger)
		defer t.Stop()
		select {
		case <-q.qc.Context().Done():
		case <-t.C:
		}
		_ = q.qc.CloseWithError(quicCloseShutdown, "closed")
	}()
}

func (q *quicCarrier) localAddr() net.Addr { return q.qc.LocalAddr() }
