package server

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/internal/server/status"
)

// unverifiedAtOnce is how many requests whose credentials have not passed before may be
// in exporter-toolkit's password check at once, from as many client addresses;
// waitersPerCheck how many more with the same credentials may wait for each check;
// knownCredentials how many credentials that passed are remembered.
const (
	unverifiedAtOnce = 2
	waitersPerCheck  = 3
	knownCredentials = 1024
)

// front is the server's handler, in front of what exporter-toolkit puts in front of the
// exporter's handlers (its basic auth, rate limit and headers; reached marks where they
// begin), so that what the toolkit does before them holds no more of the server than
// the handlers do:
//
//   - A request with a body is served without it (status.LeaveBodyUnread), but at the
//     line tester (status.ExplainPath) once it reaches the handlers: it reads its own,
//     bounded, and leaves unread what it refuses. A request the toolkit answers itself
//     (401, 429) leaves its body unread too: else net/http would read it, until the read
//     timeout when it trickles.
//   - The toolkit checks passwords with bcrypt one at a time, each taking tens of
//     milliseconds (seconds at a higher cost), and caches a hundred checks: clients
//     guessing passwords would each hold a connection while they wait their turn, until
//     they filled --web.max-connections, and push the scraper's check out of the cache,
//     to wait behind theirs. Requests whose credentials have not reached the handlers
//     before are let in unverifiedAtOnce at a time, one per client address, so that
//     guesses from one address leave room for a scraper's first check; one more gets 429
//     at once. Those whose credentials did pass go straight on, and wait behind
//     unverifiedAtOnce checks at most. Requests without basic auth credentials cost no
//     check.
//   - A request whose credentials are in the check already (two scrapers sharing them
//     behind one proxy, a page and its favicon, after a start) waits for that check,
//     waitersPerCheck of them at most (one more gets 429), rather than being refused for
//     its address: when the credentials pass it goes on as known; when they do not, it
//     gets the check's reply without a check of its own. The toolkit would give it the
//     same (its cache keeps failures too), and checking it in turn would hold it for a
//     second check, or, once the cache dropped them, spend one outside these bounds. So a
//     client repeating one wrong password holds 1+waitersPerCheck connections per check
//     at most, none longer than the check.
type front struct {
	next   http.Handler
	logger *slog.Logger
	// refused counts the 429s, for the log.
	refused atomic.Int64

	mu sync.Mutex
	// known are the keys of credentials that reached the handlers; checks those of the
	// requests in the toolkit's check whose credentials are not known.
	known  map[[sha256.Size]byte]struct{}
	checks map[[sha256.Size]byte]*check
}

// check is a request in the toolkit's check with credentials not known, from client (see
// client: an address; net/http leaves it empty for a connection without
// one), and the requests
// with the same credentials waiting for it. over is closed as it ends, passed or with
// the status and header of the toolkit's reply.
type check struct {
	client  string
	waiters int
	over    chan struct{}
	passed  bool
	status  int
	header  http.Header
}

func newFront(next http.Handler, logger *slog.Logger) *front {
	return &front{next: next, logger: logger, known: map[[sha256.Size]byte]struct{}{}, checks: map[[sha256.Size]byte]*check{}}
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := &passage{ResponseWriter: w, r: r, front: f}
	if r.URL.Path != status.ExplainPath {
		status.LeaveBodyUnread(w, r)
	} else {
		p.gated = r.ProtoMajor == 1 && r.ContentLength != 0
	}
	// The toolkit checks with bcrypt only basic auth credentials it can read: a bearer
	// token, another scheme or basic auth that does not decode costs no check, and is
	// never refused. The key is a hash: the credentials are not kept.
	if _, _, ok := r.BasicAuth(); ok {
		p.key = sha256.Sum256([]byte(r.Header.Get("Authorization")))
		c, ok := f.admit(p)
		if !ok {
			f.refuse(w, r)
			return
		}
		if c != nil && !f.await(c, w, r) {
			return
		}
	}
	if !p.gated && p.check == nil {
		f.next.ServeHTTP(w, r)
		return
	}
	defer p.done()
	f.next.ServeHTTP(p, r)
}

// admit reports whether p may go on: to the toolkit's check, as its credentials are
// known, or fewer than unverifiedAtOnce requests with unknown ones are being checked,
// none from its client (its address, see client: every peer of a unix
// socket has one, "@", as every client behind a proxy has the proxy's; a vsock peer has
// its context ID's), p then being
// in the check until it leaves it; or to wait for the check of its credentials, c, with
// fewer than waitersPerCheck others.
func (f *front) admit(p *passage) (c *check, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.known[p.key]; ok {
		return nil, true
	}
	if c := f.checks[p.key]; c != nil {
		if c.waiters >= waitersPerCheck {
			return nil, false
		}
		c.waiters++
		return c, true
	}
	from := client(p.r.RemoteAddr)
	if len(f.checks) >= unverifiedAtOnce {
		return nil, false
	}
	for _, c := range f.checks {
		if c.client == from {
			return nil, false
		}
	}
	p.check = &check{client: from, over: make(chan struct{})}
	f.checks[p.key] = p.check
	return nil, true
}

// await waits for c, the check of the credentials of r, and reports whether they passed,
// r going on; else r is answered as the check was, or not at all when its client went
// away first.
func (f *front) await(c *check, w http.ResponseWriter, r *http.Request) bool {
	select {
	case <-c.over:
	case <-r.Context().Done():
	}
	f.mu.Lock()
	c.waiters--
	f.mu.Unlock()
	select {
	case <-c.over:
	default:
		return false
	}
	if c.passed {
		return true
	}
	if c.status == 0 { // the check ended without a reply (a panic)
		f.refuse(w, r)
		return false
	}
	// The toolkit's reply to these credentials, with the headers of its web config, but
	// for whether the connection stays open, which is the waiter's own.
	h := w.Header()
	for k, v := range c.header {
		if k != "Connection" {
			h[k] = slices.Clone(v)
		}
	}
	status.LeaveBodyUnread(w, r)
	http.Error(w, http.StatusText(c.status), c.status)
	return false
}

// refuse answers 429 to a request admit refused, logging the first and every thousandth.
func (f *front) refuse(w http.ResponseWriter, r *http.Request) {
	if n := f.refused.Add(1); n == 1 || n%1000 == 0 {
		f.logger.Warn("requests answered 429: more credentials that have not passed before than are checked at once (passwords guessed?)",
			"checked_at_once", unverifiedAtOnce, "refused", n, "client", r.RemoteAddr)
	}
	status.LeaveBodyUnread(w, r)
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many credentials being checked: try again in a second.", http.StatusTooManyRequests)
}

// passage is the ResponseWriter of a request the front watches until it reaches the
// handlers (reached unwraps it): one with a body to the line tester (gated), one whose
// credentials are being checked (check).
type passage struct {
	http.ResponseWriter
	r     *http.Request
	front *front
	key   [sha256.Size]byte
	gated bool
	// check is set while the request is in the toolkit's check with credentials not
	// known.
	check *check
	// arrived is set once the request reached the handlers, shut once its body was
	// left unread.
	arrived, shut bool
}

// arrive is called as the request reaches the handlers: its credentials passed, its
// body is the line tester's.
func (p *passage) arrive() {
	p.arrived = true
	p.leaveCheck()
}

// leaveCheck ends p's check, if it is in one, and with it the wait of those waiting for
// it: its credentials are remembered if they passed (reached the handlers), forgetting
// others when knownCredentials are.
func (p *passage) leaveCheck() {
	c := p.check
	if c == nil {
		return
	}
	p.check = nil
	f := p.front
	f.mu.Lock()
	delete(f.checks, p.key)
	if p.arrived {
		remember(f.known, p.key)
	}
	f.mu.Unlock()
	c.passed = p.arrived
	close(c.over)
}

// remember adds key to known, the keys of credentials that passed, forgetting another
// when knownCredentials are there: one at a time, so that credentials used over and over
// stay, however many others come and go.
func remember(known map[[sha256.Size]byte]struct{}, key [sha256.Size]byte) {
	if len(known) >= knownCredentials {
		for k := range known {
			delete(known, k)
			break
		}
	}
	known[key] = struct{}{}
}

// answered is called before the toolkit writes a reply of its own: the body is left
// unread.
func (p *passage) answered() {
	if p.gated && !p.arrived && !p.shut {
		p.shut = true
		status.LeaveBodyUnread(p.ResponseWriter, p.r)
	}
}

// done is called as the front's handler returns, answered by the toolkit or not (net/http
// would write 200 and read the body).
func (p *passage) done() {
	p.answered()
	p.leaveCheck()
}

func (p *passage) WriteHeader(code int) {
	if c := p.check; c != nil && c.status == 0 {
		c.status, c.header = code, p.ResponseWriter.Header().Clone()
	}
	p.answered()
	p.ResponseWriter.WriteHeader(code)
}

func (p *passage) Write(b []byte) (int, error) {
	p.answered()
	return p.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (p *passage) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// reached serves h, the exporter's handlers, behind the front and what exporter-toolkit
// puts in front of them: a request that gets here passed the toolkit's checks, and is
// served if it passes what the web config's watch asks of it besides (mustPassKey), else
// refused as the toolkit refuses a wrong password, the web config's headers set.
func reached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pass, ok := r.Context().Value(mustPassKey{}).(func(*http.Request) bool); ok && !pass(r) {
			w.Header().Set("WWW-Authenticate", "Basic")
			http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
			return
		}
		if p, ok := w.(*passage); ok {
			p.arrive()
			w = p.ResponseWriter
		}
		h.ServeHTTP(w, r)
	})
}
