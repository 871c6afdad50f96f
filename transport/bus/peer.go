package bus

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// batchWriteTimeout bounds one coalesced socket write: a peer that stops
// reading for this long loses its connection (the dialer side redials).
const batchWriteTimeout = 30 * time.Second

// tlsWriteBufferBytes is the buffer that coalesces a batch into few TLS
// records (plain TCP writes the batch with one writev instead).
const tlsWriteBufferBytes = 64 << 10

// invalidLogFirst / invalidLogEvery bound the log lines of invalid frames
// per connection: the first few, then one in every invalidLogEvery.
const (
	invalidLogFirst = 8
	invalidLogEvery = 1024
)

// peerConn is one authenticated connection to one peer: a bounded send
// queue drained by a writer goroutine, and a reader goroutine that decodes
// frames and hands them to the bus.
type peerConn struct {
	bus   *TCPBus
	peer  uint8
	nc    net.Conn
	queue chan outFrame // never closed: Send may race with close
	// queued is the bytes in queue (peer_queue_bytes_max bounds it).
	queued atomic.Int64

	stop      chan struct{} // closed to stop the writer (after draining, if graceful)
	stopOnce  sync.Once
	closeOnce sync.Once
	writerOut chan struct{} // closed when the writer returned
	readerOut chan struct{} // closed when the reader returned

	invalid uint64 // reader goroutine only
	// bufs: the writer's scratch list of a batch's slices (writer goroutine only).
	bufs net.Buffers
}

func newPeerConn(b *TCPBus, peer uint8, nc net.Conn) *peerConn {
	return &peerConn{
		bus: b, peer: peer, nc: nc,
		queue:     make(chan outFrame, b.queueCapacity),
		stop:      make(chan struct{}),
		writerOut: make(chan struct{}),
		readerOut: make(chan struct{}),
	}
}

// start runs the writer and reader; the bus's WaitGroup tracks both (the
// caller holds the bus lock and has checked it is not closed).
func (pc *peerConn) start() {
	pc.bus.wg.Add(2)
	go func() { defer pc.bus.wg.Done(); pc.writer() }()
	go func() { defer pc.bus.wg.Done(); pc.reader() }()
}

// outFrame is one queued frame: head, then body (nil for a frame encoded
// whole). A prepare's body is not copied into a frame buffer: the writer
// hands it to the socket from where consensus keeps it (Codec.EncodeSplit).
type outFrame struct {
	head, body []byte
}

// bytes is what the frame holds.
func (f outFrame) bytes() int64 { return int64(len(f.head) + len(f.body)) }

// enqueue adds a frame without blocking; false when the queue is full, in
// frames or in bytes (a frame larger than the byte budget still goes when
// nothing else is queued).
func (pc *peerConn) enqueue(frame outFrame) bool {
	n := frame.bytes()
	if after := pc.queued.Add(n); after > pc.bus.queueBytesMax && after != n {
		pc.queued.Add(-n)
		return false
	}
	select {
	case pc.queue <- frame:
		return true
	default:
		pc.queued.Add(-n)
		return false
	}
}

// batchBytes is what a batch holds; taken before write, which clears the
// batch (a count taken after it released nothing, so the budget filled up
// for good after 128 MiB of traffic and every later frame was dropped).
func batchBytes(batch []outFrame) int64 {
	var n int64
	for _, f := range batch {
		n += f.bytes()
	}
	return n
}

// dequeued releases a written (or dropped) batch's bytes from the budget.
func (pc *peerConn) dequeued(n int64) { pc.queued.Add(-n) }

func (pc *peerConn) writer() {
	defer close(pc.writerOut)
	maxBatch := pc.bus.maxBatch
	batch := make([]outFrame, 0, maxBatch)
	var bw *bufio.Writer
	if _, isTLS := pc.nc.(*tls.Conn); isTLS {
		bw = bufio.NewWriterSize(pc.nc, tlsWriteBufferBytes)
	}
	for {
		batch = batch[:0]
		select {
		case f := <-pc.queue:
			batch = append(batch, f)
		case <-pc.stop:
			// Graceful close: flush what is queued now, in batches.
			for {
				batch = batch[:0]
				batch = pc.fill(batch, maxBatch)
				if len(batch) == 0 {
					return
				}
				n := batchBytes(batch)
				err := pc.write(bw, batch)
				pc.dequeued(n)
				if err != nil {
					return
				}
			}
		}
		batch = pc.fill(batch, maxBatch)
		n := batchBytes(batch)
		err := pc.write(bw, batch)
		pc.dequeued(n)
		if err != nil {
			pc.bus.log.Debug("replica connection write failed", "peer", pc.peer, "err", err)
			pc.close(false)
			return
		}
	}
}

// fill adds queued frames to batch without blocking, up to maxBatch.
func (pc *peerConn) fill(batch []outFrame, maxBatch int) []outFrame {
	for len(batch) < maxBatch {
		select {
		case f := <-pc.queue:
			batch = append(batch, f)
		default:
			return batch
		}
	}
	return batch
}

// write sends one batch in one socket write (writev on TCP, one buffered
// flush on TLS).
func (pc *peerConn) write(bw *bufio.Writer, batch []outFrame) error {
	if err := pc.nc.SetWriteDeadline(time.Now().Add(batchWriteTimeout)); err != nil {
		return err
	}
	if bw != nil {
		for _, f := range batch {
			if _, err := bw.Write(f.head); err != nil {
				return err
			}
			if _, err := bw.Write(f.body); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	} else {
		bufs := pc.bufs[:0]
		for _, f := range batch {
			bufs = append(bufs, f.head)
			if len(f.body) > 0 {
				bufs = append(bufs, f.body)
			}
		}
		pc.bufs = bufs
		_, err := bufs.WriteTo(pc.nc) // consumes its copy of the slice
		clear(pc.bufs)                // drop references to sent frames
		if err != nil {
			return err
		}
	}
	pc.bus.stats.noteBatch(len(batch))
	clear(batch) // drop references to sent frames
	return nil
}

func (pc *peerConn) reader() {
	defer close(pc.readerOut)
	defer pc.close(false)
	b := pc.bus
	header := make([]byte, HeaderBytes)
	for {
		if _, err := io.ReadFull(pc.nc, header); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				b.log.Info("replica connection closed", "peer", pc.peer, "err", err)
			}
			return
		}
		size := FrameSize(header)
		if size < HeaderBytes || uint64(size) > b.maxMessageBytes {
			b.stats.closedOversize.Add(1)
			b.log.Warn("replica frame size out of bounds: closing connection",
				"peer", pc.peer, "size", size, "max_message_size", b.maxMessageBytes)
			return
		}
		frame := newFrameBuffer(int(size))
		copy(frame, header)
		if _, err := io.ReadFull(pc.nc, frame[HeaderBytes:]); err != nil {
			b.log.Info("replica connection closed mid-frame", "peer", pc.peer, "err", err)
			return
		}
		if IsForwardCommand(FrameCommand(header)) {
			pc.readForward(frame)
			continue
		}
		if IsFetchCommand(FrameCommand(header)) {
			pc.readFetch(frame)
			continue
		}
		m, err := b.codec.Decode(frame)
		if err == nil && m.From != pc.peer {
			err = invalid("sender replica %d on the connection of replica %d", m.From, pc.peer)
		}
		if err != nil {
			pc.dropInvalid(header, err)
			continue
		}
		m.To = b.selfID
		b.stats.framesReceived.Add(1)
		b.onMessage(m)
	}
}

// readForward decodes a forward frame and hands it to OnForward (reader
// goroutine).
func (pc *peerConn) readForward(frame []byte) {
	b := pc.bus
	f, err := b.codec.DecodeForward(frame)
	if err == nil && f.From != pc.peer {
		err = invalid("sender replica %d on the connection of replica %d", f.From, pc.peer)
	}
	if err != nil {
		pc.dropInvalid(frame[:HeaderBytes], err)
		return
	}
	if b.onForward == nil {
		if b.stats.droppedNoHandler.Add(1) == 1 {
			b.log.Warn("dropping forward frame: no forward handler", "peer", pc.peer, "kind", f.Kind)
		}
		return
	}
	f.To = b.selfID
	b.stats.framesReceived.Add(1)
	b.onForward(f)
}

// readFetch decodes a fetch frame and hands it to OnFetch (reader
// goroutine). frame is freshly allocated: the records may alias it.
func (pc *peerConn) readFetch(frame []byte) {
	b := pc.bus
	f, err := b.codec.DecodeFetch(frame)
	if err == nil && f.From != pc.peer {
		err = invalid("sender replica %d on the connection of replica %d", f.From, pc.peer)
	}
	if err != nil {
		pc.dropInvalid(frame[:HeaderBytes], err)
		return
	}
	if b.onFetch == nil {
		if b.stats.droppedNoHandler.Add(1) == 1 {
			b.log.Warn("dropping fetch frame: no fetch handler", "peer", pc.peer, "kind", f.Kind)
		}
		return
	}
	f.To = b.selfID
	b.stats.framesReceived.Add(1)
	b.onFetch(f)
}

// dropInvalid counts and (rate-limited) logs an invalid frame.
func (pc *peerConn) dropInvalid(header []byte, err error) {
	b := pc.bus
	b.stats.framesInvalid.Add(1)
	pc.invalid++
	if pc.invalid <= invalidLogFirst || pc.invalid%invalidLogEvery == 0 {
		b.log.Warn("dropping invalid replica frame", "peer", pc.peer,
			"command", header[offCommand], "size", FrameSize(header), "invalid_total", pc.invalid, "err", err)
	}
}

// close tears the connection down. graceful: the writer first flushes what
// is queued (bounded by close_peer_timeout), then the socket is shut down
// (bounded by close_grace: TLS close_notify or a TCP FIN) and closed.
// Otherwise the socket closes at once. Safe to call more than once and
// from any goroutine; the bus forgets the connection.
func (pc *peerConn) close(graceful bool) {
	pc.bus.forget(pc)
	if !graceful {
		pc.stopOnce.Do(func() { close(pc.stop) })
		pc.closeOnce.Do(func() { _ = pc.nc.Close() })
		return
	}
	pc.stopOnce.Do(func() { close(pc.stop) })
	timer := time.NewTimer(pc.bus.closePeerTimeout)
	defer timer.Stop()
	select {
	case <-pc.writerOut:
	case <-timer.C:
		// The writer is stuck in a write: a shutdown would queue behind it.
		pc.bus.log.Warn("replica connection drain exceeded close_peer_timeout; closing", "peer", pc.peer,
			"close_peer_timeout", pc.bus.closePeerTimeout)
		pc.closeOnce.Do(func() { _ = pc.nc.Close() })
		return
	}
	pc.closeOnce.Do(func() {
		_ = pc.nc.SetDeadline(time.Now().Add(pc.bus.closeGrace))
		switch c := pc.nc.(type) {
		case *tls.Conn:
			_ = c.CloseWrite() // close_notify
		case *net.TCPConn:
			_ = c.CloseWrite() // FIN
		}
		_ = pc.nc.Close()
	})
}
