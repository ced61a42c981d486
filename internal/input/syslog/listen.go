// Package syslog receives log lines as syslog datagrams on a unix datagram socket or a UDP
// port: nginx's `access_log syslog:server=unix:/path,tag=nginx main;` reaches the exporter
// with no file, no rotation and no volume to fill.
//
// One goroutine drains the socket into a bounded in-process queue and another hands the
// messages on, so parsing never holds up the socket. That matters most for unix datagram
// sockets: the kernel queues only net.unix.max_dgram_qlen datagrams (10 by default) for an
// unconnected receiver, and a sender that meets a full queue (nginx writes without
// blocking) loses the line on its side, where no counter of ours can see it.
package syslog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// DefaultSocketMode lets the socket's owner and group write to it, not any local user: a
// line sent to the socket creates series, so a stranger must not be able to send one.
// nginx's workers run as their own user, so they must share the socket's group: in
// Kubernetes the pod's fsGroup, which every container gets as a supplementary group and
// which a volume's directory, set-group-ID, gives the files made in it.
const DefaultSocketMode fs.FileMode = 0o660

// Queue bounds. Datagrams wait here between the socket and the handler; past either bound
// they are dropped and counted, rather than left to the kernel where the loss may be
// invisible.
const (
	defaultQueueDatagrams = 4096
	queueBytes            = 16 << 20
)

// defaultMaxDatagram is the largest datagram read when Options.MaxLineBytes is not set,
// matching follow's default line cap.
const defaultMaxDatagram = 64 << 10

// maxUDPDatagram is the most a UDP datagram carries: its header's length is 16 bits (IPv4
// carries 65,507 bytes of it, IPv6 65,527), so a UDP read needs no larger buffer whatever
// the line cap.
const maxUDPDatagram = 1<<16 - 1

// Options configure a Listener.
type Options struct {
	// Network is "unixgram" or "udp"; Addr the socket's absolute path or host:port, as
	// config checked them.
	Network, Addr string
	// SocketMode is the unix socket file's mode; 0 means DefaultSocketMode.
	SocketMode fs.FileMode
	// MaxLineBytes caps a datagram; longer ones are skipped and counted. 0: 64 KiB.
	MaxLineBytes int
	// QueueDatagrams bounds the datagrams waiting for the handler; 0: 4096.
	QueueDatagrams int
	Logger         *slog.Logger
	// Header, when set, is given each datagram's header (an empty one when the datagram
	// has none) right before its message goes to the handler, from the same goroutine;
	// its slices are valid until the handler returns.
	Header func(Header)
	// Batch, when set, is called from the handler's goroutine before the first datagram
	// of each batch: the datagrams taken from the queue one after another while it held
	// more, at most batchDatagrams of them. A caller reading its clock there reads it
	// once per batch, which under load spans far less than a second, rather than once
	// per datagram.
	Batch func()
	// BatchEnd, when set, is called from the handler's goroutine after the last datagram
	// of each batch was handed on: a handler that holds what the datagrams made (a
	// batching sink) writes it there, at the latest when the queue runs dry.
	BatchEnd func()
	// Quiet, when set, is called from the handler's goroutine every QuietInterval while
	// no datagram waits: a handler that holds lines for the ones after them (while their
	// format is chosen) lets them go there once none came for long enough, as a
	// follower's CaughtUp lets it. Datagrams that keep coming settle such lines
	// themselves, so it is not called between them.
	Quiet func()
	// QuietInterval is how often Quiet is called while the socket is quiet; 0: 250ms.
	QuietInterval time.Duration
	// CheckInterval is how often a unix socket's path is looked at, to bind again a socket
	// whose file was removed or replaced; 0: 250ms.
	CheckInterval time.Duration
	// Stopped, when set, is called from the handler's goroutine once Stop closed the
	// socket and every datagram queued was handed on, before Stop returns: a handler that
	// holds lines for the ones after them lets them go there, as a follower's Closed lets
	// those of a file.
	Stopped func()
	// received, when set (tests), is called by a socket's reading goroutine once it
	// counted a datagram received, before the datagram is queued or dropped.
	received func()
	// stopping, when set (tests), is called once a socket's reader was told to stop (by
	// Stop, or as the socket is bound again: retire), before it is waited for.
	stopping func()
}

// defaultQuietInterval is Options.QuietInterval's default, the followers' poll interval.
const defaultQuietInterval = 250 * time.Millisecond

// batchDatagrams bounds a batch (Options.Batch): at about a microsecond a datagram, a
// batch is handled within a millisecond.
const batchDatagrams = 256

// Listener is one bound syslog socket.
type Listener struct {
	opts Options
	// conn, reading and unixID are replaced when a unix socket is bound again, by the
	// check goroutine, which Stop waits for before it reads them. reading is closed once
	// conn's reader returned.
	conn    net.PacketConn
	reading chan struct{}
	// udp is the UDP socket, never bound again, whose drops a look at the counters reads
	// from the kernel (Arrivals); nil for a unix socket, which drops nothing.
	udp *net.UDPConn
	// lastDrops is the kernel's count of udp's drops as last read (observeDrops).
	dropsMu   sync.Mutex
	lastDrops uint32
	// readBytes is the read buffer's size: one more than the longest datagram handed on,
	// so that a longer one shows. The buffer lives as long as the socket and the heap
	// counts it whole, so it is no larger than the socket's datagrams can be.
	readBytes int
	unixPath  string
	unixID    fileID // the socket file bound, so Stop removes only that one
	// lost is set while the socket file at unixPath is not the one bound: its loss and the
	// first failure to bind again are logged once, not at every check.
	lost     bool
	queue    chan []byte
	free     chan []byte
	queued   atomic.Int64   // bytes in queue
	wg       sync.WaitGroup // deliver
	checking sync.WaitGroup
	stop     chan struct{}
	stopOnce sync.Once

	received, malformed, tooLong, droppedKernel, droppedQueue, errs, lines atomic.Uint64
	// socketLost counts the times the socket file was found removed or replaced.
	socketLost atomic.Uint64
}

// Listen binds the socket and starts handing messages to h (the datagram without its
// syslog header, with an empty source), from one goroutine. A unix socket file left by a
// process that died is replaced; a live socket or any other file at the path is an error.
// Once Listen returns, the socket is bound: datagrams sent from then on are received.
func Listen(opts Options, h input.Handler) (*Listener, error) {
	var err error
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = defaultMaxDatagram
	}
	if opts.SocketMode == 0 {
		opts.SocketMode = DefaultSocketMode
	}
	if opts.QueueDatagrams <= 0 {
		opts.QueueDatagrams = defaultQueueDatagrams
	}
	if opts.QuietInterval <= 0 {
		opts.QuietInterval = defaultQuietInterval
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = defaultQuietInterval
	}
	l := &Listener{opts: opts, queue: make(chan []byte, opts.QueueDatagrams), free: make(chan []byte, opts.QueueDatagrams),
		stop: make(chan struct{})}
	switch opts.Network {
	case "unixgram":
		err = l.listenUnix(opts.Addr)
	case "udp":
		err = l.listenUDP(opts.Addr)
	default:
		err = fmt.Errorf("syslog: network %q is neither unixgram nor udp", opts.Network)
	}
	if err != nil {
		return nil, err
	}
	l.startReading(l.conn)
	l.wg.Add(1)
	go l.deliver(h)
	if l.unixPath != "" {
		l.checking.Add(1)
		go l.check()
	}
	return l, nil
}

// startReading starts draining c into the queue, as the socket read from now on.
func (l *Listener) startReading(c net.PacketConn) {
	// A unix datagram socket drops nothing (its sender fails instead), and its reads take
	// no control messages (readMsgOf): only UDP's drops are counted.
	if _, udp := c.(*net.UDPConn); udp {
		if err := enableDropCount(c); err != nil {
			l.opts.Logger.Warn("the kernel will not report dropped datagrams", "err", err)
		}
	}
	l.reading = make(chan struct{})
	go l.read(c, l.reading)
}

func (l *Listener) listenUDP(addr string) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return err
	}
	l.conn, l.udp, l.readBytes = c, c, min(l.opts.MaxLineBytes, maxUDPDatagram)+1
	return nil
}

func (l *Listener) listenUnix(path string) error {
	c, id, err := bindUnix(path, l.opts.SocketMode, l.opts.Logger)
	if err != nil {
		return err
	}
	l.conn, l.unixPath, l.unixID, l.readBytes = c, path, id, min(l.opts.MaxLineBytes, maxUnixDatagram())+1
	return nil
}

// check looks at the unix socket's path every CheckInterval until Stop.
func (l *Listener) check() {
	defer l.checking.Done()
	t := time.NewTicker(l.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.checkSocket()
		}
	}
}

// checkSocket binds the socket again when the file at its path is no longer the one bound:
// removed (rm, a volume cleaned) or replaced (another exporter started on the path). The
// socket kept would still be read, but no sender could reach it by its path, so nginx
// would fail to connect and lose every line. bindUnix refuses to replace a live socket or
// a file that is not a socket, and is tried again at the next check.
func (l *Listener) checkSocket() {
	if id, err := statID(l.unixPath); err == nil && id == l.unixID {
		l.lost = false
		return
	}
	if !l.lost {
		l.socketLost.Add(1)
		l.opts.Logger.Warn("the syslog socket's file was removed or replaced; binding it again", "path", l.unixPath)
	}
	c, id, err := bindUnix(l.unixPath, l.opts.SocketMode, l.opts.Logger)
	if err != nil {
		if !l.lost {
			l.opts.Logger.Warn("binding the syslog socket again failed; retrying", "path", l.unixPath, "every", l.opts.CheckInterval, "err", err)
		}
		l.lost = true
		return
	}
	if l.lost {
		l.opts.Logger.Info("the syslog socket is bound again", "path", l.unixPath)
	}
	l.lost = false
	// What the old socket's receive buffer holds is handed on before it is closed, as
	// Stop hands on the last socket's. Senders still connected to it get an error once it
	// is closed and connect again, by the path; the datagram of that error is lost on
	// their side.
	old, oldReading := l.conn, l.reading
	l.startReading(c)
	l.conn, l.unixID = c, id
	l.retire(old, oldReading)
}

type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, nil
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// read drains c into the queue until c is closed or past its read deadline (retire),
// then closes done.
func (l *Listener) read(c net.PacketConn, done chan<- struct{}) {
	defer close(done)
	readMsg := readMsgOf(c)
	buf := make([]byte, l.readBytes)
	oob := make([]byte, 64)
	for {
		n, oobn, flags, err := readMsg(buf, oob)
		if err != nil {
			// Past its deadline: retire, which reads what the socket still holds itself
			// (drainSocket); closed: by Stop when the deadline could not be set.
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			l.errs.Add(1)
			l.opts.Logger.Warn("reading the syslog socket", "err", err)
			// A persistent error must not spin a core.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		// The kernel's drops the datagram tells of are counted before it is (Arrivals).
		if d, ok := dropCount(oob[:oobn]); ok {
			l.observeDrops(d)
		}
		l.take(buf, n, flags, false)
	}
}

// take counts the datagram of n bytes read into buf (with the read's flags) received and
// queues it for the handler, or drops it: too long, blank, or past the queue's bounds.
// With wait, a full queue is waited on rather than dropped from: the drainSocket of a
// socket retired, whose datagrams the handler's goroutine, still running, hands on.
func (l *Listener) take(buf []byte, n, flags int, wait bool) {
	l.received.Add(1)
	if l.opts.received != nil {
		l.opts.received()
	}
	if n > l.opts.MaxLineBytes || flags&syscall.MSG_TRUNC != 0 {
		l.tooLong.Add(1)
		return
	}
	if Blank(buf[:n]) {
		return
	}
	if l.queued.Load()+int64(n) > queueBytes {
		l.droppedQueue.Add(1)
		return
	}
	var b []byte
	select {
	case b = <-l.free:
	default:
	}
	b = append(b[:0], buf[:n]...)
	l.queued.Add(int64(n))
	if wait {
		l.queue <- b
		return
	}
	select {
	case l.queue <- b:
	default:
		l.queued.Add(-int64(n))
		l.droppedQueue.Add(1)
	}
}

// retire stops reading c, whose reader closes reading as it returns, hands on what c's
// receive buffer still holds (drainSocket), and closes it: the socket of Stop, or one
// bound again in its place (checkSocket), whose datagrams sent before were otherwise
// thrown away with it, unseen by any counter.
func (l *Listener) retire(c net.PacketConn, reading <-chan struct{}) {
	// A deadline, not the close, stops the reader: the close would throw away what the
	// kernel still holds for the socket.
	if err := c.SetReadDeadline(time.Now()); err != nil {
		c.Close()
	}
	if l.opts.stopping != nil {
		l.opts.stopping()
	}
	<-reading
	l.drainSocket(c)
	c.Close()
}

// drainSocket takes the datagrams c's receive buffer still holds once its reader
// stopped, at most as many as the queue holds, so that those sent before Stop (or before
// the socket was bound again) are handed on as the queue's are, rather than lost with the
// socket unseen by any counter (a follower stops without losing what its files hold: its
// positions keep it). Those sent past the bound, or once it is reached, are lost as those
// sent to a closed socket are.
// It reads without waiting, and without a control buffer, as the reader of a unix socket
// does (readMsgOf); a UDP socket's drops meanwhile are read from the kernel (Arrivals).
func (l *Listener) drainSocket(c net.PacketConn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, l.readBytes)
	_ = raw.Control(func(fd uintptr) {
		for range cap(l.queue) {
			n, _, flags, _, err := syscall.Recvmsg(int(fd), buf, nil, syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return // EAGAIN: nothing more queued
			}
			l.take(buf, n, flags, true)
		}
	})
}

// readMsgOf is c's ReadMsgUDP or ReadMsgUnix, which reports the flags (MSG_TRUNC) and
// control messages (drop counts) ReadFrom hides. A unix socket is read without a control
// buffer, so that the kernel discards the open files a sender may attach to a datagram
// (SCM_RIGHTS) rather than install them as descriptors of the exporter: anyone who may
// write the socket would otherwise use up the exporter's descriptors, a dozen a datagram,
// or keep deleted files' space in use.
func readMsgOf(c net.PacketConn) func(b, oob []byte) (n, oobn, flags int, err error) {
	switch c := c.(type) {
	case *net.UDPConn:
		return func(b, oob []byte) (int, int, int, error) {
			n, oobn, flags, _, err := c.ReadMsgUDP(b, oob)
			return n, oobn, flags, err
		}
	case *net.UnixConn:
		return func(b, _ []byte) (int, int, int, error) {
			n, _, flags, _, err := c.ReadMsgUnix(b, nil)
			return n, 0, flags, err
		}
	}
	panic(fmt.Sprintf("syslog: a %T is neither a UDP nor a unix socket", c))
}

// maxKeptBuffer is the largest buffer the queue reuses; larger datagrams are rare and
// their buffers go to the garbage collector, so the free list stays small.
const maxKeptBuffer = 4 << 10

// deliver hands queued datagrams to h, header stripped, until the queue is closed.
func (l *Listener) deliver(h input.Handler) {
	defer l.wg.Done()
	var quiet <-chan time.Time
	if l.opts.Quiet != nil {
		t := time.NewTicker(l.opts.QuietInterval)
		defer t.Stop()
		quiet = t.C
	}
	batch := 0 // datagrams of the current batch so far; 0 starts one
	// malformed counts the batch's malformed datagrams, added once the handler wrote what
	// the batch made (BatchEnd): a handler that counts lines as read only then (the
	// pipeline) never has a scrape find more malformed datagrams than lines.
	var malformed uint64
	for {
		b, ok := l.next(quiet)
		if !ok {
			if l.opts.Stopped != nil {
				l.opts.Stopped()
			}
			return
		}
		if batch == 0 && l.opts.Batch != nil {
			l.opts.Batch()
		}
		if batch++; batch == batchDatagrams || len(l.queue) == 0 {
			batch = 0
		}
		last := batch == 0
		l.queued.Add(-int64(len(b)))
		msg, header, ok := Parse(b)
		if !ok {
			malformed++
		}
		l.lines.Add(1)
		if l.opts.Header != nil {
			l.opts.Header(header)
		}
		h("", msg)
		if last {
			if l.opts.BatchEnd != nil {
				l.opts.BatchEnd()
			}
			if malformed > 0 {
				l.malformed.Add(malformed)
				malformed = 0
			}
		}
		if cap(b) <= maxKeptBuffer {
			select {
			case l.free <- b:
			default:
			}
		}
	}
}

// next waits for the next queued datagram, calling Options.Quiet at each tick of quiet
// while none waits; ok is false once the queue is closed and drained.
func (l *Listener) next(quiet <-chan time.Time) (b []byte, ok bool) {
	select {
	case b, ok = <-l.queue:
		return b, ok
	default:
	}
	for {
		select {
		case b, ok = <-l.queue:
			return b, ok
		case <-quiet:
			l.opts.Quiet()
		}
	}
}

// Ready reports whether the socket is bound, which it is from Listen on.
func (l *Listener) Ready() bool { return true }

// Stats returns the counters.
func (l *Listener) Stats() input.Stats {
	errs, lost := l.errs.Load(), l.socketLost.Load()
	// Malformed datagrams are loaded before the lines, which are counted first, and what
	// came in to be lines after them (Arrivals).
	malformed := l.malformed.Load()
	lines := l.lines.Load()
	arr := l.Arrivals()
	return input.Stats{
		LinesRead: lines,
		TooLong:   l.tooLong.Load(),
		Errors:    errs + lost,
		// A socket's errors are failed receives, and for a unix socket the times its file
		// was found removed or replaced.
		ErrorsByReason: map[string]uint64{"receive": errs, "socket": lost},
		Counters:       []input.Counter{arr[0], selfmetric.InputMalformedDatagrams.Count(malformed), arr[1], arr[2]},
	}
}

// observeDrops takes a reading of the kernel's count of the UDP socket's drops: one a
// datagram came with (SO_RXQ_OVFL) or one read at a look at the counters (socketDrops).
// The count is 32 bits and wraps, so what it grew by since the last reading is counted. A
// reading older than the last (a datagram's, queued before a look's reading) is behind
// it by less than half the range and is passed over.
func (l *Listener) observeDrops(d uint32) {
	l.dropsMu.Lock()
	defer l.dropsMu.Unlock()
	if grown := d - l.lastDrops; grown < 1<<31 {
		l.droppedKernel.Add(uint64(grown))
		l.lastDrops = d
	}
}

// Arrivals returns the counters of the datagrams received and of those dropped before
// they became lines (input.Arrivals): datagrams received, dropped by the kernel, dropped
// at the queue. The queue's drops are loaded first: a datagram is received before the
// queue drops it. Those the kernel dropped were never received: their count is read from
// the socket here, after the datagrams received, so that a look shows every datagram
// dropped before the last one it shows received, and those dropped after it, which no
// datagram may come to tell of. Where the kernel cannot be asked (before Linux 4.12),
// the count comes with a datagram received after the drops, and is added before that
// one is counted received.
func (l *Listener) Arrivals() []input.Counter {
	queue := l.droppedQueue.Load()
	received := l.received.Load()
	l.readDrops()
	kernel := l.droppedKernel.Load()
	return []input.Counter{
		selfmetric.InputDatagrams.Count(received),
		selfmetric.InputDroppedDatagrams.Count(kernel, "receive_buffer"),
		selfmetric.InputDroppedDatagrams.Count(queue, "queue"),
	}
}

// readDrops reads the kernel's count of the UDP socket's drops, if there is one.
func (l *Listener) readDrops() {
	if l.udp == nil {
		return
	}
	if d, ok := socketDrops(l.udp); ok {
		l.observeDrops(d)
	}
}

// Stop stops reading the socket, hands on what is queued, in the socket's receive
// buffer too (drainSocket), then calls Options.Stopped, waits for the goroutines, closes
// the socket and removes the unix socket file, unless another has replaced it meanwhile.
func (l *Listener) Stop() {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.checking.Wait() // no socket is bound again from here on
		l.retire(l.conn, l.reading)
		close(l.queue)
		l.wg.Wait()
		if l.unixPath == "" {
			return
		}
		if id, err := statID(l.unixPath); err == nil && id == l.unixID {
			if err := os.Remove(l.unixPath); err != nil {
				l.opts.Logger.Warn("removing the syslog socket", "path", l.unixPath, "err", err)
			}
		}
	})
}
