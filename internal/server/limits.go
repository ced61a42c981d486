package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/server/status"
)

// connLimiter bounds the connections the server holds, as its http.Server's ConnState:
// past max, a new connection takes the place of the one that has been idle longest
// between requests, or else of the one that has waited longest for its first request,
// if that has waited for grace at least; or else of the one whose replies have waited
// longest for their client, the handlers of its requests all returned, if they have
// waited grace at least (see busy); or else of the one that has waited longest of the
// client (its address: see client) holding the most that wait for their
// first request, when it holds more than one more than the new connection's client; else
// the new connection is closed (an HTTP/2 one idle between requests is sent a GOAWAY
// instead, see end). So held sockets use at most max file descriptors (and a quarter
// more for those GOAWAYs), a
// client that opens many and sends nothing, or reads no reply, cannot keep a scraper out
// for long, nor at all from another address (by opening max connections a second), and a
// burst of new connections cannot close a scraper's before it had the time to send its
// request. (An idle connection may be closed at any time: a client sends its request
// again on a new one.) A connection whose handler runs is left alone: the read and write
// timeouts end it, and the scrape limiter a scrape whose client does not read.
type connLimiter struct {
	max    int
	grace  time.Duration
	logger *slog.Logger

	mu sync.Mutex
	// idle and fresh are the connections waiting for a request, between two or before
	// the first, since when; running are those running a request.
	idle, fresh map[net.Conn]time.Time
	running     map[net.Conn]*busy
	// hosts are the client addresses of the fresh connections, freshBy how many each
	// holds.
	hosts   map[net.Conn]string
	freshBy map[string]int
	// closed counts the connections closed to stay within max, for the log.
	closed int
	// shutting is set by closeFresh: a connection the server accepts after it (its accept
	// loop may lag behind the shutdown) is closed at once too.
	shutting bool
	// goAway are the HTTP/2 connections served (see serveHTTP2), and draining how many of
	// them were sent a GOAWAY to stay within max and are still open.
	goAway   map[net.Conn]*http2Conn
	draining int
}

func newConnLimiter(max int, grace time.Duration, logger *slog.Logger) *connLimiter {
	return &connLimiter{max: max, grace: grace, logger: logger,
		idle: map[net.Conn]time.Time{}, fresh: map[net.Conn]time.Time{}, running: map[net.Conn]*busy{},
		hosts: map[net.Conn]string{}, freshBy: map[string]int{}, goAway: map[net.Conn]*http2Conn{}}
}

// busy is a connection running requests: handlers of them run on it (see handling), or
// none has since when. A connection that runs requests with no handler running writes
// replies its client has not read yet: the streams of an HTTP/2 client that opens no
// flow-control window, which net/http holds until the write timeout, or the end of an
// HTTP/1.1 reply.
//
// fresh is when the connection came, if it had sent no request before: net/http has an
// HTTP/2 connection active once it read its client's preface, and then idle until its
// first request, with no handler run (see track).
type busy struct {
	handlers int
	since    time.Time
	fresh    time.Time
	served   bool
}

// connKey is the context key of a request's connection, for handling.
type connKey struct{}

// connContext is the http.Server's ConnContext: it puts the connection in the context of
// its requests.
func (l *connLimiter) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// handler serves h, telling l when a request's handler runs on its connection.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			defer l.handling(c)()
		}
		h.ServeHTTP(w, r)
	})
}

// handling tells l that a handler runs on c, until the function it returns is called.
func (l *connLimiter) handling(c net.Conn) (done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.running[c]
	if b == nil {
		return func() {}
	}
	b.handlers++
	b.served = true
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if b.handlers--; b.handlers == 0 {
			b.since = time.Now()
		}
	}
}

// stalled is the connection running requests whose handlers all returned before limit,
// the earliest; nil if none. Under l.mu.
func (l *connLimiter) stalled(limit time.Time) net.Conn {
	var c net.Conn
	for x, b := range l.running {
		if b.handlers == 0 && !b.since.After(limit) {
			c, limit = x, b.since
		}
	}
	return c
}

// connHost is the client c counts as (see client).
func connHost(c net.Conn) string {
	addr := c.RemoteAddr()
	if addr == nil {
		return ""
	}
	return client(addr.String())
}

// client is the client a connection or request from addr counts as, where one is held
// to its share: its address without the port; an IPv4 address mapped into IPv6 is the
// IPv4 address. An IPv6 address is not widened to its /64, as internet rate limiters
// count: inside a cluster a /64 is a node's pods (Kubernetes gives each node one), so
// Prometheus would share its share with every pod beside it, and one of them flooding
// would crowd out its scrapes (the scrape limiter tells an address of a /64 it has not
// seen by its /64: see clientGroup). What is no IP address (a unix socket's peer, a
// vsock context ID) is itself.
func client(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return ip.Unmap().String()
}

// clientGroup is the group of client (see client) whose last place the scrape limiter
// tells for a client of it not seen (see scrapeLimiter.placedOrder): an IPv6 address's
// /64, which a host is given at least and may take any address of for each connection,
// so that one host is not as many clients given none lately as it takes addresses. A
// link-local address (fe80::/10), whose /64 every host on the link shares, an IPv4
// address and what is no address are their own group.
func clientGroup(client string) string {
	ip, err := netip.ParseAddr(client)
	if err != nil || !ip.Is6() || ip.IsLinkLocalUnicast() {
		return client
	}
	return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
}

// crowding is the fresh connection that has waited longest of the client address
// holding the most fresh connections, if that holds more than one more than host; nil
// if none does. Under l.mu.
func (l *connLimiter) crowding(host string) net.Conn {
	most, n, found := "", l.freshBy[host]+1, false
	for h, m := range l.freshBy {
		if m > n {
			most, n, found = h, m, true
		}
	}
	if !found {
		return nil
	}
	var c net.Conn
	var since time.Time
	for x, t := range l.fresh {
		if l.hosts[x] == most && (c == nil || t.Before(since)) {
			c, since = x, t
		}
	}
	return c
}

// addFresh counts c, of host, among the fresh connections, since when. Under l.mu.
func (l *connLimiter) addFresh(c net.Conn, host string, since time.Time) {
	l.fresh[c] = since
	l.hosts[c] = host
	l.freshBy[host]++
}

// unfresh takes c out of the fresh connections. Under l.mu.
func (l *connLimiter) unfresh(c net.Conn) {
	if _, ok := l.fresh[c]; !ok {
		return
	}
	delete(l.fresh, c)
	host := l.hosts[c]
	delete(l.hosts, c)
	if l.freshBy[host]--; l.freshBy[host] == 0 {
		delete(l.freshBy, host)
	}
}

// oldest is the connection of m waiting since before limit, the earliest; nil if none.
func oldest(m map[net.Conn]time.Time, limit time.Time) net.Conn {
	var c net.Conn
	for x, t := range m {
		if !t.After(limit) {
			c, limit = x, t
		}
	}
	return c
}

// closeFresh closes the connections that have not sent a request yet, and those accepted
// from now on: at shutdown, as http.Server.Shutdown would wait for each until it is 5 s
// old before taking it for idle.
func (l *connLimiter) closeFresh() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shutting = true
	for c := range l.fresh {
		l.unfresh(c)
		_ = c.Close() // no request read: no TLS alert to write
	}
}

// track is the http.Server's ConnState. It runs on the server's accept loop for a new
// connection, so it must not block: a connection that has served a request is closed on
// a goroutine of its own (closing TLS writes an alert).
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew:
		if l.shutting {
			_ = c.Close() // new: no TLS alert to write
			return
		}
		now := time.Now()
		host := connHost(c)
		if len(l.idle)+len(l.fresh)+len(l.running) >= l.max {
			if l.closed++; l.closed == 1 || l.closed%1000 == 0 {
				l.logger.Warn("connections closed to stay within --web.max-connections", "max_connections", l.max, "closed", l.closed)
			}
			victim := oldest(l.idle, now)
			idle := victim != nil
			if victim == nil {
				victim = oldest(l.fresh, now.Add(-l.grace))
			}
			if victim == nil {
				victim = l.stalled(now.Add(-l.grace))
			}
			if victim == nil {
				victim = l.crowding(host)
			}
			if victim == nil {
				_ = c.Close() // new: no TLS alert to write
				return
			}
			delete(l.idle, victim)
			l.unfresh(victim)
			delete(l.running, victim)
			l.end(victim, idle)
		}
		l.addFresh(c, host, now)
	case http.StateActive:
		delete(l.idle, c)
		fresh := l.fresh[c]
		l.unfresh(c)
		if l.running[c] == nil {
			l.running[c] = &busy{since: time.Now(), fresh: fresh}
		}
	case http.StateIdle:
		// An HTTP/2 connection that read its preface, and no request: still waiting for
		// its first, and kept for the grace as one, not closed at once as one idle
		// between two requests would be (its request may be on its way).
		if b := l.running[c]; b != nil && !b.served && !b.fresh.IsZero() {
			delete(l.running, c)
			l.addFresh(c, connHost(c), b.fresh)
			return
		}
		delete(l.running, c)
		l.idle[c] = time.Now()
	case http.StateHijacked, http.StateClosed:
		delete(l.idle, c)
		l.unfresh(c)
		delete(l.running, c)
	}
}

// scrapeLimiter bounds the scrapes in flight: each holds the rules it reads until they are
// written. A scrape past max waits, up to wait, for a place: one that frees, or that of a
// scrape whose write has been blocked for stall (a client that does not read), which is
// ended. The scrape that came last is given the next place, of the client (its address:
// see client) running the fewest, and of those the one given or refused a place longest
// ago (see next; an IPv6 address not seen is told its /64's, see placedOrder), and when max scrapes wait already, of the clients with the most
// waiting, the one given or refused a place last, its scrape that has waited longest,
// gets 503 at once: so clients that came before and do not read cannot keep out a
// scraper that comes after them, nor can a client sending scrapes faster than places
// free (each 503 sent again at once) put out or go before another client's, nor can
// clients of many addresses each sending its next scrape as soon as one is answered
// (see placedTable), however many. A scrape that waited in vain gets 503 too. The status page has a
// limiter of its own, so that pages asked for cannot keep out a scraper, nor scrapes the
// page.
//
// With a budget, the limiter also bounds the heap the scrapes in flight hold: each is
// charged its cost before it runs (what the last reads of its rules held, see
// scrape.Collector.ScrapeCost, as they tell when it is given its place: reads made while
// it waited may have found its rules grown), and waits, as for a place, until the scrapes
// running leave room for it; a scrape whose cost is unknown or over the budget is charged
// the whole budget, so that it runs alone. A scrape that comes to hold more than it was
// charged (a rule that grew since the read its cost came from) is charged the difference
// before it reads the rule and before it writes what it read, and waits for it as for a
// place (see hold). The charge is given back when its handler returns.
type scrapeLimiter struct {
	max         int
	stall, wait time.Duration
	logger      *slog.Logger
	// budget bounds the sum of the running scrapes' charges; 0 is none. cost reads a
	// request once, outside the lock, into the function that tells its cost as the
	// rules' reads tell it now, and whether it is known, which the limiter calls under
	// its lock whenever it prices the scrape: so a request slow to read (a long query of
	// name[] filters) holds no other scrape.
	budget int64
	cost   func(*http.Request) func() (int64, bool)
	// refused counts the requests answered 503, for the log.
	refused atomic.Int64

	mu      sync.Mutex
	running map[*scrape]struct{}
	waiting []*scrape // a stack
	// places counts the places given and refused; placed tells the count when each
	// client was last given or refused one (see next).
	places uint64
	placed placedTable
	// held is the sum of the running scrapes' charges; refusals count the 503s by
	// refusal, ended the scrapes ended for a client that did not read, alone the scrapes
	// charged the whole budget.
	held     int64
	refusals [numRefusals]uint64
	ended    uint64
	alone    uint64
	// freed is closed when a scrape gives up its charge, for those waiting in hold; nil
	// while none waits.
	freed chan struct{}
	// wanting is what the scrapes waiting in hold want beyond their charges: they hold
	// their reads already, so a scrape waiting for a place does not fit in it (fits),
	// and the room a scrape that ends leaves goes to them first.
	wanting int64
}

// refusal is why a scrape got 503.
type refusal int

const (
	// refusedRequests: max scrapes were running and none gave way within wait.
	refusedRequests refusal = iota
	// refusedBytes: the scrapes running held the budget and none gave way within wait.
	refusedBytes
	// refusedDisplaced: max scrapes waited, and it had waited longest.
	refusedDisplaced
	numRefusals
)

// refusalNames are the reason label values of the refusals.
var refusalNames = [numRefusals]string{"max_requests", "max_scrape_bytes", "displaced"}

func newScrapeLimiter(max int, stall, wait time.Duration, logger *slog.Logger) *scrapeLimiter {
	return &scrapeLimiter{max: max, stall: stall, wait: wait, logger: logger, running: map[*scrape]struct{}{}, placed: newPlacedTable()}
}

// withBudget bounds the heap of the scrapes in flight to budget bytes (0: none), a
// scrape's cost given by what cost returns for its request.
func (l *scrapeLimiter) withBudget(budget int64, cost func(*http.Request) func() (int64, bool)) *scrapeLimiter {
	l.budget, l.cost = budget, cost
	return l
}

// scrape is one scrape in flight, or waiting.
type scrape struct {
	// client is its request's client (see client), which the limiter shares places by,
	// group the client's (see clientGroup).
	client, group string
	// blocked is when its current write to the client began, in Unix nanoseconds; 0
	// outside writes.
	blocked atomic.Int64
	// end ends it: its writes fail from then on.
	end func()
	// cost is its request's cost, which it is charged when it is given a place.
	cost func() (int64, bool)
	// charge is what it is charged of the budget; alone, that it is charged the whole
	// budget because no read told its cost or its cost is past the budget.
	charge int64
	alone  bool
	// wanting is what it wants beyond its charge while it waits in hold (counted in
	// scrapeLimiter.wanting), 0 otherwise.
	wanting int64
	// given says, once, whether it was given a place (true) or put out of the waiting
	// scrapes (false).
	given chan bool
}

// scrapeWriter is the client's ResponseWriter as a scrape writes to it, noting when a
// write blocks.
type scrapeWriter struct {
	http.ResponseWriter
	s *scrape
}

func (w scrapeWriter) Write(p []byte) (int, error) {
	w.s.blocked.Store(time.Now().UnixNano())
	defer w.s.blocked.Store(0)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w scrapeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// handler serves h within the limit.
func (l *scrapeLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		c := client(r.RemoteAddr)
		s := &scrape{client: c, group: clientGroup(c), end: func() { _ = rc.SetWriteDeadline(time.Now()) }, given: make(chan bool, 1)}
		if l.budget > 0 {
			s.cost = l.cost(r)
		}
		if ok, why := l.acquire(r, s); !ok {
			l.logRefusal(r, why)
			http.Error(w, refusalText[why], http.StatusServiceUnavailable)
			return
		}
		defer l.release(s)
		if l.budget > 0 {
			ctx := r.Context()
			r = r.WithContext(exporter.WithHold(ctx, func(bytes int64) error { return l.hold(ctx, s, bytes) }))
		}
		h.ServeHTTP(scrapeWriter{w, s}, r)
	})
}

// refusalText is the body of a 503, by refusal.
var refusalText = [numRefusals]string{
	refusedRequests:  "Too many requests in flight (--web.max-requests): try again later.",
	refusedBytes:     "The scrapes in flight hold the memory scrapes may take (--web.max-scrape-bytes): try again later.",
	refusedDisplaced: "Too many requests in flight (--web.max-requests): try again later.",
}

// logRefusal logs the first 503 and every thousandth.
func (l *scrapeLimiter) logRefusal(r *http.Request, why refusal) {
	n := l.refused.Add(1)
	if n != 1 && n%1000 != 0 {
		return
	}
	if why == refusedBytes {
		l.logger.Warn("requests answered 503 to stay within --web.max-scrape-bytes", "path", r.URL.Path, "max_scrape_bytes", l.budget, "refused", n)
		return
	}
	l.logger.Warn("requests answered 503 to stay within --web.max-requests", "path", r.URL.Path, "max_requests", l.max, "refused", n)
}

// acquire waits until s is given a place, up to l.wait or the end of r; when it is not,
// it says why.
func (l *scrapeLimiter) acquire(r *http.Request, s *scrape) (bool, refusal) {
	l.mu.Lock()
	l.waiting = append(l.waiting, s)
	if len(l.waiting) > l.max {
		i := l.crowding()
		out := l.waiting[i]
		out.given <- false
		l.waiting = slices.Delete(l.waiting, i, i+1)
		l.refuse(out)
		l.refusals[refusedDisplaced]++
	}
	next := l.fill()
	l.mu.Unlock()
	give := time.NewTimer(l.wait)
	defer give.Stop()
	recheck := time.NewTimer(next)
	defer recheck.Stop()
	for {
		select {
		case ok := <-s.given:
			return ok, refusedDisplaced
		case <-recheck.C:
			l.mu.Lock()
			recheck.Reset(l.fill())
			l.mu.Unlock()
			continue
		case <-give.C:
		case <-r.Context().Done():
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		select {
		case ok := <-s.given: // decided while its wait ended
			return ok, refusedDisplaced
		default:
		}
		l.waiting = slices.DeleteFunc(l.waiting, func(x *scrape) bool { return x == s })
		l.refuse(s)
		why := refusedRequests
		if len(l.running) < l.max {
			why = refusedBytes
		}
		l.refusals[why]++
		return false, why
	}
}

// crowding is the index in l.waiting of the scrape to put out of it: of the clients with
// the most waiting, the one given or refused a place last (see placedOrder; or, of those
// given or refused none lately, the first come), the scrape of it that has waited
// longest; so that a client sending scrapes faster than places free puts out its own,
// not another's, and clients sending their next scrape as soon as one is answered, or a
// host taking a new address of its /64 for each, put out theirs, not a scraper's.
// Under l.mu.
func (l *scrapeLimiter) crowding() int {
	waiting := map[string]int{}
	for _, w := range l.waiting {
		waiting[w.client]++
	}
	out := 0
	for i := 1; i < len(l.waiting); i++ {
		a, b := l.waiting[i], l.waiting[out]
		if c := cmp.Or(cmp.Compare(waiting[a.client], waiting[b.client]), l.placedOrder(a, b)); c > 0 {
			out = i
		}
	}
	return out
}

// placedOrder compares when the clients of a and b were last given or refused a place
// (see placedTable), or, for an IPv6 address the table has no entry of, when its /64
// (see clientGroup) last was, and then an address told its /64's before one of it told
// its own, the same: a host taking a new address of its /64 for each scrape is then as
// recent as its last, where each address was one given none lately, gone before a
// Prometheus. The /64's count is not compared for an address that has one of its own: a
// pod flooding beside a Prometheus on a Kubernetes node, whose pods share a /64, would
// have the Prometheus taken for as recent as the flood, and put after every other
// client. Under l.mu.
func (l *scrapeLimiter) placedOrder(a, b *scrape) int {
	atA, groupA := l.placedAt(a)
	atB, groupB := l.placedAt(b)
	switch c := cmp.Compare(atA, atB); {
	case c != 0 || groupA == groupB:
		return c
	case groupA:
		return -1
	}
	return 1
}

// placedAt is the count that placedOrder compares for the client of s, and whether it
// is its /64's. Under l.mu.
func (l *scrapeLimiter) placedAt(s *scrape) (at uint64, group bool) {
	at, known := l.placed.get(s.client)
	if known || s.group == s.client {
		return at, false
	}
	g, _ := l.placed.get(s.group)
	return max(at, g), true
}

// note notes that the client of s, and its group, were given or refused a place now
// (l.places). Under l.mu.
func (l *scrapeLimiter) note(s *scrape) {
	l.placed.set(s.client, l.places)
	if s.group != s.client {
		l.placed.set(s.group, l.places)
	}
}

// next is the index in l.waiting of the scrape to give the next place: the last come of
// the client running the fewest scrapes, of those the one given or refused a place
// longest ago (see placedOrder; or not lately), so that a client sending scrapes faster
// than places free does not take every place that frees: its short scrapes, each ended
// as a place frees, leave it running as few as a scraper that waits. Under l.mu.
func (l *scrapeLimiter) next() int {
	running := map[string]int{}
	for r := range l.running {
		running[r.client]++
	}
	next := len(l.waiting) - 1
	for i := next - 1; i >= 0; i-- {
		a, b := l.waiting[i], l.waiting[next]
		if c := cmp.Or(cmp.Compare(running[a.client], running[b.client]), l.placedOrder(a, b)); c < 0 {
			next = i
		}
	}
	return next
}

// refuse notes that s, out of the waiting scrapes, was refused a place. Under l.mu.
func (l *scrapeLimiter) refuse(s *scrape) {
	l.places++
	l.note(s)
}

// fits reports whether s may run beside the running scrapes. Under l.mu.
func (l *scrapeLimiter) fits(s *scrape) bool {
	return len(l.running) < l.max && (l.budget == 0 || l.held+l.wanting+s.charge <= l.budget)
}

// fill gives places to the waiting scrapes, the last come first, while it fits or can be
// made to fit by ending stalled scrapes. It returns when to look again: when the scrape
// blocked longest will have stalled, or after stall when none is blocked. Under l.mu.
func (l *scrapeLimiter) fill() time.Duration {
	for len(l.waiting) > 0 {
		i := l.next()
		w := l.waiting[i]
		l.price(w)
		if wait := l.makeRoom(nil, func() bool { return l.fits(w) }); wait > 0 {
			return wait
		}
		l.waiting = slices.Delete(l.waiting, i, i+1)
		l.running[w] = struct{}{}
		l.places++
		l.note(w)
		l.held += w.charge
		if w.alone {
			l.alone++
		}
		w.given <- true
	}
	return l.stall
}

// price sets what the waiting scrape s is charged: its cost as the rules' reads tell it
// now, not when it came, since a read made while it waited may have found a rule grown
// (charged the old size, scrapes let in together would each wait in hold for the others'
// room); the whole budget when that cost is unknown or larger. Under l.mu.
func (l *scrapeLimiter) price(s *scrape) {
	if l.budget == 0 {
		return
	}
	s.charge, s.alone = l.budget, true
	if cost, known := s.cost(); known && cost <= l.budget {
		s.charge, s.alone = cost, false
	}
}

// makeRoom ends the running scrapes stalled for l.stall, but self, the one blocked longest
// first, until fit holds; it returns 0 once it does, else when the scrape blocked
// longest will have stalled (l.stall when none is blocked). Under l.mu.
func (l *scrapeLimiter) makeRoom(self *scrape, fit func() bool) time.Duration {
	for !fit() {
		now := time.Now().UnixNano()
		var victim *scrape
		oldest := now
		for x := range l.running {
			if b := x.blocked.Load(); x != self && b != 0 && b < oldest {
				victim, oldest = x, b
			}
		}
		if wait := time.Duration(oldest + int64(l.stall) - now); victim == nil || wait > 0 {
			return max(wait, 1) // 0 says the room is made
		}
		// Ended while it is still in its handler (its release waits for l.mu), so the
		// deadline cannot reach a later request on its connection.
		victim.end()
		l.drop(victim)
		l.ended++
	}
	return 0
}

// errEnded is what hold returns to a scrape ended while it waited for room.
var errEnded = errors.New("scrape ended to make room for others within --web.max-scrape-bytes")

// hold charges the running scrape s for the bytes it holds now, when that is more than
// it was charged (the whole budget at most, and then it runs alone), before it writes
// what it read: scrapes that all began before a read of a rule that grew were charged
// its old size, and each would hold its read while its client stalls. It waits for the
// room, until ctx ends, taking that of stalled scrapes as fill does. While it waits it
// is as blocked as a write to a client that does not read, and is ended as one: so two
// scrapes that each wait for the other's room do not wait for ever, and scrapes waiting
// for room with reads held cannot keep out a scraper. It returns an error when s was
// ended (or ctx ended): s is to end.
func (l *scrapeLimiter) hold(ctx context.Context, s *scrape, bytes int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := min(bytes, l.budget)
	if want <= s.charge {
		return nil
	}
	s.blocked.Store(time.Now().UnixNano())
	defer s.blocked.Store(0)
	s.wanting = want - s.charge
	l.wanting += s.wanting
	defer l.unwant(s) // before the deferred unlock
	for {
		if _, ok := l.running[s]; !ok {
			return errEnded
		}
		wait := l.makeRoom(s, func() bool { return l.held-s.charge+want <= l.budget })
		if wait == 0 {
			l.unwant(s)
			l.held += want - s.charge
			s.charge = want
			if bytes > l.budget && !s.alone {
				s.alone = true
				l.alone++
			}
			return nil
		}
		if l.freed == nil {
			l.freed = make(chan struct{})
		}
		freed := l.freed
		l.mu.Unlock()
		recheck := time.NewTimer(wait)
		select {
		case <-freed:
		case <-recheck.C:
		case <-ctx.Done():
		}
		recheck.Stop()
		l.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// drop takes s out of the running scrapes, with its charge, and wakes those waiting for
// room in hold. Under l.mu.
func (l *scrapeLimiter) drop(s *scrape) {
	delete(l.running, s)
	l.held -= s.charge
	l.unwant(s)
	if l.freed != nil {
		close(l.freed)
		l.freed = nil
	}
}

// unwant takes what s wants beyond its charge in hold out of l.wanting: it has its room,
// or waits no more. Under l.mu.
func (l *scrapeLimiter) unwant(s *scrape) {
	l.wanting -= s.wanting
	s.wanting = 0
}

func (l *scrapeLimiter) release(s *scrape) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.running[s]; ok {
		l.drop(s)
		l.fill()
	}
}

// Describe sends nothing: the limiter is an unchecked collector, as the rules' is.
func (l *scrapeLimiter) Describe(chan<- *prometheus.Desc) {}

// Collect sends the limiter's self-metrics: its 503s by reason, the scrapes it ended, and
// the budget with what the running scrapes are charged of it.
func (l *scrapeLimiter) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	refusals, ended, alone, held := l.refusals, l.ended, l.alone, l.held
	l.mu.Unlock()
	for why, n := range refusals {
		ch <- prometheus.MustNewConstMetric(scrapesRefused, prometheus.CounterValue, float64(n), refusalNames[why])
	}
	ch <- prometheus.MustNewConstMetric(scrapesEnded, prometheus.CounterValue, float64(ended))
	if l.budget > 0 {
		ch <- prometheus.MustNewConstMetric(scrapesAlone, prometheus.CounterValue, float64(alone))
		ch <- prometheus.MustNewConstMetric(scrapeBytes, prometheus.GaugeValue, float64(held))
		ch <- prometheus.MustNewConstMetric(scrapeMaxBytes, prometheus.GaugeValue, float64(l.budget))
	}
}

// The limiter's self-metrics' descriptors.
var (
	scrapesRefused = selfmetric.ScrapesRefused.Desc()
	scrapesEnded   = selfmetric.ScrapesEnded.Desc()
	scrapesAlone   = selfmetric.ScrapesAlone.Desc()
	scrapeBytes    = selfmetric.ScrapeBytes.Desc()
	scrapeMaxBytes = selfmetric.ScrapeMaxBytes.Desc()
)

// connectionLimit is want, or half the open-file limit nofile when that is lower (and
// lowered is set), so that held connections leave the other half to the inputs' files
// and sockets. nofile 0 is unknown.
func connectionLimit(want int, nofile uint64) (limit int, lowered bool) {
	if half := nofile / 2; nofile > 0 && uint64(want) > half {
		return int(max(half, 1)), true
	}
	return want, false
}

// reservedFiles are the descriptors the process holds besides its listeners, its
// connections and the inputs' files: standard input, output and error, the network
// poller's, the storage directory's lock and the snapshot being written, the rule file's
// watch, a directory a follower lists, the rule, web config and TLS files read at a
// reload or a handshake, and a margin.
const reservedFiles = 24

// inputFiles is how many files the inputs may keep open with the open-file limit nofile
// (follow.Files): what is left by the connections held (want, lowered to half nofile as
// connectionLimit does; half nofile when want is 0, no bound), the quarter of them more
// an HTTP/2 GOAWAY may leave open, the listeners and reservedFiles; at least 1. It is 0,
// no bound, when nofile is unknown (0).
func inputFiles(want int, nofile uint64, listeners int) int {
	if nofile == 0 {
		return 0
	}
	conns := int(nofile / 2)
	if want > 0 {
		conns, _ = connectionLimit(want, nofile)
	}
	left := int64(nofile) - int64(conns+conns/4+listeners+reservedFiles)
	return int(max(left, 1))
}

// lowerConnections is the connection limit of o.MaxConnections with the open-file limit
// nofile (see connectionLimit), warning when it is lowered, and of the room it leaves
// when the flags alone left enough (else main warned of them already).
func lowerConnections(o Options, nofile uint64) int {
	limit, lowered := connectionLimit(o.MaxConnections, nofile)
	if lowered {
		o.Logger.Warn("--web.max-connections lowered to half the open-file limit, which leaves the other half to the inputs",
			"max_connections", limit, "open_file_limit", nofile)
		if held, _ := heldByHandlers(o); o.MaxConnections > held {
			WarnConnectionRoom(o, limit, true)
		}
	}
	return limit
}

// WarnConnectionRoom warns, to o.Logger, when the connections held, limit (lowered to
// half the open-file limit, if lowered), are no more than the handlers of bounded
// requests can hold by o (see heldByHandlers): the connection limit takes no connection
// whose handler runs, so those requests could hold every connection, and a scraper's new
// connection would be closed at once while scrapes of clients that read nothing held
// theirs until the write timeout (the scrape limiter ends them only for a scrape waiting
// for a place, which holds a connection too). With no --web.max-requests the scrapes are
// not bounded, and nothing is warned of.
func WarnConnectionRoom(o Options, limit int, lowered bool) {
	held, holders := heldByHandlers(o)
	if o.MaxRequests == 0 || limit > held {
		return
	}
	flag := "--web.max-connections"
	if lowered {
		flag += ", lowered to half the open-file limit,"
	}
	o.Logger.Warn(fmt.Sprintf("%s is not above the %d connections that requests in the exporter's handlers can hold, of which the connection limit takes none: %s; they can hold every connection, and a scraper's new connection is then closed at once",
		flag, held, strings.Join(holders, "; ")), "max_connections", limit, "held_by_handlers", held)
}

// heldByHandlers is how many connections the handlers of bounded requests can hold with
// the flags of o, and what holds them: the scrapes of /metrics running and as many
// waiting for a place, and the status pages alike (each has a limiter of its own); with
// --web.enable-lifecycle, the POST /-/reload requests in a reload (maxReloadWaiting);
// with the line tester, its requests (status.MaxExplainRequests).
func heldByHandlers(o Options) (int, []string) {
	held := 4 * o.MaxRequests
	holders := []string{fmt.Sprintf("%d scrapes and status pages (4 × --web.max-requests: in flight, and as many waiting for a place)", held)}
	if o.Lifecycle {
		held += maxReloadWaiting
		holders = append(holders, fmt.Sprintf("%d POST /-/reload requests in a reload (--web.enable-lifecycle)", maxReloadWaiting))
	}
	if o.LineTester {
		held += status.MaxExplainRequests
		holders = append(holders, fmt.Sprintf("%d line tester requests (POST %s; --no-web.enable-line-tester turns it off)", status.MaxExplainRequests, status.ExplainPath))
	}
	return held, holders
}

// headerTimeout is how long a request's headers may take: 10 s, or the read timeout when
// that is shorter, since net/http holds the headers to their own timeout alone.
func headerTimeout(read time.Duration) time.Duration {
	if read > 0 {
		return min(read, maxHeaderTime)
	}
	return maxHeaderTime
}
