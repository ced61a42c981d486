package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// keptConn is a TLS connection served, with the TLS config its client was last known to
// be accepted by: the one kept when it was accepted (its handshake follows, with that
// config or a later one), then each one recheck found accepting it.
type keptConn struct {
	conn     *tls.Conn
	accepted atomic.Pointer[tls.Config]
}

// keptConnKey is the context key of a request's keptConn.
type keptConnKey struct{}

// connContext is the ConnContext of a server whose TLS config's GetConfigForClient is c's
// get: it puts the connection, as a keptConn, in the context of its requests. It runs on
// the accept loop, before the handshake, and takes no lock.
func (c *tlsConfigs) connContext(ctx context.Context, conn net.Conn) context.Context {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return ctx
	}
	k := &keptConn{conn: tc}
	k.accepted.Store(c.config.Load())
	return context.WithValue(ctx, keptConnKey{}, k)
}

// recheck serves h the requests of the connections whose client the web config's current
// TLS config accepts, as it would at a handshake. Certificates are checked at handshakes
// only, and a scraper keeps its connection alive for as long as it scrapes: a client
// whose CA was taken out of client_ca_file would be served on it until the exporter
// restarts. So when the web config or a file it names changed since a connection was
// last found accepted, its next request once the change settled checks its client again
// (see verifyClient), which costs that request a certificate's verification and the
// others a look at the files' stamps, as a handshake's; a client no longer accepted has
// its connection closed, unanswered, so that a client that sends its request again on a
// new connection is told by that handshake what the web config says of it. A TLS config that does not load is
// the web config's failure, which its errors tell: the connection is served as before.
func (c *tlsConfigs) recheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k, ok := r.Context().Value(keptConnKey{}).(*keptConn); ok {
			if err := c.accepts(k); err != nil {
				if n := c.closed.Add(1); n == 1 || n%1000 == 0 {
					c.errors.logger.Warn("connections closed at a request: the client, accepted at its handshake, is no longer accepted by the web config, which changed since (its certificate's CA taken out of client_ca_file, its SAN out of client_allowed_sans, its TLS version out of min_version and max_version); the first and every 1000th are logged",
						"closed", n, "client", r.RemoteAddr, "err", err)
				}
				_ = k.conn.Close() // every stream of an HTTP/2 connection with it
				panic(http.ErrAbortHandler)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// recheckWait is how long a request kept alive waits for the stamps, or the load, of the
// web config's files (see accepts): a stat takes microseconds, unless its file system
// hangs.
const recheckWait = time.Second

// accepts returns why the current TLS config would refuse the client of k, if it would
// and the config is not the one k was last accepted by. A config of files changed within
// racyAge may be of the middle of a save in place (a client CA bundle cut short): k is
// checked once they settled, by their times or by what they are read as (see steady),
// against the config handshakes are then held to. Nor is
// k checked while another holds c's lock: a handshake reading the files (slowly, on a
// network file system that hangs; over and over, while they do not load) would hold
// every request kept alive, which it did not before; a later request checks k. Nor,
// past recheckWait, while its own look at the files lasts: their file system hung, it
// would hold the request (and a scraper's connection, which its timeout then closes) for
// as long as the hang, where the other requests kept alive are served; the look goes on
// with the lock, and a later request checks k.
func (c *tlsConfigs) accepts(k *keptConn) error {
	if !c.mu.TryLock() {
		return nil
	}
	type current struct {
		config *tls.Config
		// settled is whether config is of the files settled (see steady), the one
		// handshakes are held to.
		settled bool
		err     error
	}
	looked := make(chan current, 1)
	go func() {
		config, err := c.currentLocked(&tls.ClientHelloInfo{Conn: k.conn.NetConn()})
		settled := config != nil && config == c.last
		c.mu.Unlock()
		looked <- current{config, settled, err}
	}()
	wait := time.NewTimer(recheckWait)
	defer wait.Stop()
	var config *tls.Config
	select {
	case cur := <-looked:
		if cur.err != nil || !cur.settled {
			return nil
		}
		config = cur.config
	case <-wait.C:
		return nil
	}
	if k.accepted.Load() == config {
		return nil
	}
	if err := verifyClient(config, k.conn.ConnectionState()); err != nil {
		return err
	}
	k.accepted.Store(config)
	return nil
}

// verifyClient returns why config would refuse, at a full handshake, the client of the
// connection of cs: its TLS version, its cipher suite or curve, no certificate where one
// is required, a certificate that does not verify against the client CAs, or
// VerifyPeerCertificate's or VerifyConnection's error (client_allowed_sans). It checks
// what crypto/tls checks of a client, in the same order, at the time config gives.
func verifyClient(config *tls.Config, cs tls.ConnectionState) error {
	switch {
	case config.MinVersion != 0 && cs.Version < config.MinVersion,
		config.MaxVersion != 0 && cs.Version > config.MaxVersion:
		return fmt.Errorf("tls: the connection's version %s is out of min_version and max_version", tls.VersionName(cs.Version))
	case cs.Version < tls.VersionTLS13 && config.CipherSuites != nil && !slices.Contains(config.CipherSuites, cs.CipherSuite):
		return fmt.Errorf("tls: the connection's cipher suite %s is not among cipher_suites", tls.CipherSuiteName(cs.CipherSuite))
	case cs.CurveID != 0 && config.CurvePreferences != nil && !slices.Contains(config.CurvePreferences, cs.CurveID):
		return fmt.Errorf("tls: the connection's curve %s is not among curve_preferences", cs.CurveID)
	}
	var chains [][]*x509.Certificate
	if config.ClientAuth >= tls.RequestClientCert {
		certs := cs.PeerCertificates
		if len(certs) == 0 && (config.ClientAuth == tls.RequireAnyClientCert || config.ClientAuth == tls.RequireAndVerifyClientCert) {
			return errors.New("tls: client didn't provide a certificate")
		}
		if len(certs) > 0 && config.ClientAuth >= tls.VerifyClientCertIfGiven {
			now := time.Now()
			if config.Time != nil {
				now = config.Time()
			}
			opts := x509.VerifyOptions{Roots: config.ClientCAs, CurrentTime: now, Intermediates: x509.NewCertPool(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			for _, cert := range certs[1:] {
				opts.Intermediates.AddCert(cert)
			}
			var err error
			if chains, err = certs[0].Verify(opts); err != nil {
				return fmt.Errorf("tls: failed to verify certificate: %w", err)
			}
		}
		if config.VerifyPeerCertificate != nil {
			raw := make([][]byte, len(certs))
			for i, cert := range certs {
				raw[i] = cert.Raw
			}
			if err := config.VerifyPeerCertificate(raw, chains); err != nil {
				return err
			}
		}
	}
	if config.VerifyConnection != nil {
		// As at a full handshake: checkAllowedSANs' VerifyConnection checks the SANs
		// again for a resumed one, which VerifyPeerCertificate did here.
		cs.VerifiedChains, cs.DidResume = chains, false
		return config.VerifyConnection(cs)
	}
	return nil
}
