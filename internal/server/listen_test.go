package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestServeFailsWhole has Serve start on two addresses where it cannot serve one: it
// returns the error, naming the address, and leaves nothing answering on the other, the
// way it returns to a process that exits on it. Each address had its own listen and
// serve, so the first was served on after the second had failed.
func TestServeFailsWhole(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte("inputs: [{path: "+filepath.Join(dir, "access.log")+"}]\nrules: [{name: r, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	webConfig := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notYAML := webConfig("not-yaml.yml", "basic_auth_users: [\n")
	unknownKey := webConfig("unknown-key.yml", "basic_auth_user:\n  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n")
	notHash := webConfig("not-hash.yml", "basic_auth_users:\n  prometheus: s3cret\n")
	noCert := webConfig("no-cert.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n")
	noBurst := webConfig("no-burst.yml", "rate_limit:\n  interval: 1s\n")
	for _, tc := range []struct {
		name      string
		second    string // the second address
		webConfig string
		want      string
	}{
		{"second address taken", taken.Addr().String(), "", "--web.listen-address=" + taken.Addr().String() + ": listen tcp " + taken.Addr().String() + ": bind: address already in use"},
		{"web config missing", "127.0.0.1:0", filepath.Join(dir, "missing.yml"), "missing.yml: no such file or directory"},
		// A web config that does not load names the file, whatever its error says.
		{"web config not YAML", "127.0.0.1:0", notYAML, "--web.config.file=" + notYAML + ": yaml: line 1"},
		{"web config key unknown", "127.0.0.1:0", unknownKey, "--web.config.file=" + unknownKey + ": yaml: unmarshal errors:\n  line 1: field basic_auth_user not found"},
		{"web config password not hashed", "127.0.0.1:0", notHash, "--web.config.file=" + notHash + `: basic_auth_users: the password of "prometheus" is no bcrypt hash (crypto/bcrypt: hashedSecret too short`},
		{"web config certificate missing", "127.0.0.1:0", noCert, "--web.config.file=" + noCert + ": "},
		// exporter-toolkit would answer every request 429: a rate limit of no burst lets none through.
		{"web config rate limit without burst", "127.0.0.1:0", noBurst, "--web.config.file=" + noBurst + ": rate_limit: burst 0 lets no request through"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			free, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			first := free.Addr().String()
			free.Close()
			cfg, err := config.Load(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			logger := promslog.NewNopLogger()
			systemd := false
			flags := &web.FlagConfig{WebListenAddresses: &[]string{first, tc.second}, WebSystemdSocket: &systemd, WebConfigFile: &tc.webConfig}
			storage := filepath.Join(t.TempDir(), "storage")
			served := make(chan error, 1)
			go func() {
				served <- Serve(cfg, pipeline.Options{Logger: logger, Now: time.Now, StoragePath: storage}, flags, Options{Logger: logger, MetricsPath: "/metrics"})
			}()
			select {
			case err = <-served:
			case <-hung(t):
				t.Fatalf("Serve serves; want an error saying %q", tc.want)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve: %v; want an error saying %q", err, tc.want)
			}
			// A web config that does not load fails the start before the inputs start, and
			// so before their storage is taken.
			if _, err := os.Stat(storage); tc.webConfig != "" && err == nil {
				t.Errorf("the storage directory was made before the web config was read")
			}
			if c, err := net.Dial("tcp", first); err == nil {
				c.Close()
				t.Errorf("%s still answers after Serve returned", first)
			}
		})
	}
}

// TestListenRefuses checks the errors of listen for what it cannot open.
func TestListenRefuses(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		flags web.FlagConfig
		want  string
	}{
		{"no address", web.FlagConfig{WebListenAddresses: &[]string{}, WebSystemdSocket: &no}, "no --web.listen-address"},
		{"vsock port out of range", web.FlagConfig{WebListenAddresses: &[]string{"vsock://:99999999999"}, WebSystemdSocket: &no}, `--web.listen-address=vsock://:99999999999: vsock port "99999999999"`},
		{"vsock without port", web.FlagConfig{WebListenAddresses: &[]string{"vsock://"}, WebSystemdSocket: &no}, "--web.listen-address=vsock://: missing port"},
		// An address without its port (a template's value left empty: ":{{ .port }}")
		// listened on a port the system chose, served where no scraper looks, said only in
		// the log's "Listening on".
		{"empty address", web.FlagConfig{WebListenAddresses: &[]string{""}, WebSystemdSocket: &no}, "--web.listen-address=: no port: give one, as :9907"},
		{"empty port", web.FlagConfig{WebListenAddresses: &[]string{":"}, WebSystemdSocket: &no}, "--web.listen-address=:: no port"},
		{"host and empty port", web.FlagConfig{WebListenAddresses: &[]string{"127.0.0.1:"}, WebSystemdSocket: &no}, "--web.listen-address=127.0.0.1:: no port"},
		{"IPv6 host and empty port", web.FlagConfig{WebListenAddresses: &[]string{"[::1]:"}, WebSystemdSocket: &no}, "--web.listen-address=[::1]:: no port"},
		// The test runs with no LISTEN_FDS of systemd's.
		{"systemd passed none", web.FlagConfig{WebSystemdSocket: &yes}, "--web.systemd-socket: systemd passed no listening socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := listen(&tc.flags, slog.New(slog.DiscardHandler))
			closeAll(ls)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("listen: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// checkWebConfigText runs the start's check of a web config file holding text, and returns
// what it warned of and its error.
func checkWebConfigText(t *testing.T, text string) (warned string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	err = checkWebConfig(path, slog.New(slog.NewTextHandler(&log, nil)))
	return log.String(), err
}

// TestCheckWebConfigAccepts: web configs exporter-toolkit serves as meant pass the
// checks of the start.
func TestCheckWebConfigAccepts(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"headers", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"},
		{"rate limit", "rate_limit:\n  interval: 100ms\n  burst: 10\n"},
		{"rate limit interval in nanoseconds", "rate_limit:\n  interval: 100000000\n  burst: 10\n"},
		{"basic auth", "basic_auth_users:\n  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warned, err := checkWebConfigText(t, tc.text)
			if err != nil {
				t.Error(err)
			}
			if warned != "" {
				t.Errorf("warned of:\n%s", warned)
			}
		})
	}
}

// TestCheckWebConfigWarnsOfNothing: a web config that sets nothing (an empty file, a
// ConfigMap key rendered empty, comments alone, values of no effect) served plain HTTP
// without a password, as no --web.config.file does, said only in an INFO line: a user
// who gives the flag means TLS or passwords. The start warns; a config that sets anything does not warn.
func TestCheckWebConfigWarnsOfNothing(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		warns      bool
	}{
		{"empty", "", true},
		{"comments", "# TLS to come\n", true},
		{"empty sections", "tls_server_config: {}\nbasic_auth_users: {}\nhttp_server_config: {}\n", true},
		{"rate limit off", "rate_limit:\n  burst: 0\n", true}, // accepted, of no effect
		{"http2 off", "http_server_config:\n  http2: false\n", false},
		{"headers", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n", false},
		{"rate limit", "rate_limit:\n  interval: 1s\n  burst: 10\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, err := checkWebConfigText(t, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(log, "sets nothing"); warned != tc.warns {
				t.Errorf("warned of:\n%s\nwant a warning that it sets nothing: %v", log, tc.warns)
			}
		})
	}
}

// TestCheckWebConfigNamesBrokenHash: a basic_auth_users password that is no bcrypt hash
// (the docs' "$2y$10$..." copied as it is, the password itself) failed the start with
// exporter-toolkit's error alone, "crypto/bcrypt: hashedSecret too short to be a
// bcrypted password", naming neither the key nor the user. The error names both, every
// such user, and how to make a hash.
func TestCheckWebConfigNamesBrokenHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	text := "basic_auth_users:\n  prometheus: $2y$10$...\n  grafana: secret\n  usual: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	err := checkWebConfig(path, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("accepted; want refused")
	}
	for _, want := range []string{"basic_auth_users", `"prometheus"`, `"grafana"`, "bcrypt", "htpasswd"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant it to say %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "usual") {
		t.Errorf("%v\nnames a user whose hash is one", err)
	}
}

// TestCheckWebConfigWarnsOfCost: a password hash of a high bcrypt cost makes every check
// of a password not seen before (a scraper's after a start, or after a flood of wrong
// ones pushed it out of exporter-toolkit's cache; every wrong one) take a core for a
// second or more: the start warns, naming the user.
func TestCheckWebConfigWarnsOfCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	// Hashes of cost 10 and 14 (bcrypt.Cost reads the cost from the hash alone).
	text := "basic_auth_users:\n  usual: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n  costly: $2y$14$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if err := checkWebConfig(path, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "user=costly cost=14") {
		t.Errorf("warned of:\n%s\nwant one warning, of user costly, cost 14", got)
	}
}

// TestCheckWebConfigWarnsOfSize: exporter-toolkit reads and parses the web config for
// every request, before the password: with a bundle of CAs inline (client_ca), a few
// milliseconds of a core per request any client can send. The start warns, with the size.
func TestCheckWebConfigWarnsOfSize(t *testing.T) {
	dir := t.TempDir()
	cert, key := newCert(t, "server", 0)
	for _, name := range []string{"cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), map[string][]byte{"cert.pem": cert, "key.pem": key}[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var bundle strings.Builder
	for i := 0; bundle.Len() < 32<<10; i++ {
		ca, _ := newCert(t, fmt.Sprintf("CA %d", i), 0)
		bundle.Write(ca)
	}
	text := "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca: |\n    " +
		strings.ReplaceAll(strings.TrimSpace(bundle.String()), "\n", "\n    ") + "\n"
	path := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if err := checkWebConfig(path, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "client_ca_file") || !strings.Contains(got, fmt.Sprintf("bytes=%d", len(text))) {
		t.Errorf("warned of:\n%s\nwant one warning, of the size, %d bytes", got, len(text))
	}
}

// TestCheckWebConfigTLSMistakes: a certificate expired, or not valid yet, passed the
// start without a word, and every client that verifies it refused the handshake, which
// the log told as the client's failure; a client CA file (or client_ca) that holds no
// certificate (the key, a DER file) passed too, as a pool of none: every client
// certificate refused as of an unknown authority. The start warns of the first, naming
// the certificate's dates, and refuses the second, naming the file.
func TestCheckWebConfigTLSMistakes(t *testing.T) {
	const tlsConfig = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	const clientCAs = tlsConfig + "  client_auth_type: RequireAndVerifyClientCert\n"
	now := time.Now()
	for _, tc := range []struct {
		name, text          string
		notBefore, notAfter time.Time
		wantErr, wantWarn   string // "" for none
	}{
		{"valid", clientCAs + "  client_ca_file: ca.pem\n", now.Add(-time.Hour), now.Add(time.Hour), "", ""},
		{"certificate expired", tlsConfig, now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), "", "has expired"},
		{"certificate not valid yet", tlsConfig, now.Add(24 * time.Hour), now.Add(48 * time.Hour), "", "not valid yet"},
		{"client_ca_file without a certificate", clientCAs + "  client_ca_file: key.pem\n", now.Add(-time.Hour), now.Add(time.Hour), "client_ca_file", ""},
		{"client_ca without a certificate", clientCAs + "  client_ca: not a certificate\n", now.Add(-time.Hour), now.Add(time.Hour), "client_ca", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cert, key := newCertValid(t, "server", 0, tc.notBefore, tc.notAfter)
			ca, _ := newCert(t, "CA", 0)
			for name, data := range map[string][]byte{"cert.pem": cert, "key.pem": key, "ca.pem": ca, "web.yml": []byte(tc.text)} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var log strings.Builder
			err := checkWebConfig(filepath.Join(dir, "web.yml"), slog.New(slog.NewTextHandler(&log, nil)))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "no certificate")) {
				t.Errorf("checkWebConfig: %v; want an error naming %q", err, tc.wantErr)
			}
			got := log.String()
			if tc.wantWarn == "" && got != "" || tc.wantWarn != "" && (strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.wantWarn) || !strings.Contains(got, "not_after=")) {
				t.Errorf("warned of:\n%s\nwant %q", got, tc.wantWarn)
			}
		})
	}
}

// TestListenAddressesOverlap checks the check's verdict on two addresses against the
// kernel's: each pair is listened on in turn, and the check refuses the pair exactly when
// the second cannot be listened on beside the first.
func TestListenAddressesOverlap(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		return port
	}
	ipv6 := true
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		ipv6 = false
	} else {
		l.Close()
	}
	for _, tc := range []struct {
		name        string
		first, then string // with P and Q for two free ports
		needsIPv6   bool
	}{
		{"the same address twice", ":P", ":P", false},
		{"a host beside the wildcard", ":P", "127.0.0.1:P", false},
		{"the wildcard after a host", "127.0.0.1:P", "0.0.0.0:P", false},
		{"the IPv4 wildcard takes IPv6 too", "0.0.0.0:P", "[::1]:P", true},
		{"a name twice", "localhost:P", "localhost:P", false},
		{"an IPv4-mapped address", "[::ffff:127.0.0.1]:P", "127.0.0.1:P", false},
		{"two hosts", "127.0.0.1:P", "127.0.0.2:P", false},
		{"two families", "127.0.0.1:P", "[::1]:P", true},
		{"two ports", "127.0.0.1:P", "127.0.0.1:Q", false},
		{"port 0 twice", "127.0.0.1:0", "127.0.0.1:0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsIPv6 && !ipv6 {
				t.Skip("no IPv6 loopback here")
			}
			// The ports are free when picked, but tests run in parallel in other packages
			// may take one before it is listened on here; a trial that loses its port so
			// (EADDRINUSE where the pair itself cannot be the cause) is tried again on two
			// new ports.
			for try := 1; ; try++ {
				if trialListenOverlap(t, tc.first, tc.then, free(), free()) {
					return
				}
				if try == 5 {
					t.Fatalf("%d trials lost their ports to other processes", try)
				}
			}
		})
	}
}

// trialListenOverlap holds the check and the start against the kernel on first and then,
// with P and Q replaced by the ports p and q. It reports false, having checked nothing,
// when another process took a port during the trial.
func trialListenOverlap(t *testing.T, first, then, p, q string) bool {
	t.Helper()
	no := false
	ports := strings.NewReplacer("P", p, "Q", q)
	first, then = ports.Replace(first), ports.Replace(then)
	a, err := net.Listen("tcp", first)
	if errors.Is(err, syscall.EADDRINUSE) {
		return false
	}
	if err != nil {
		t.Fatalf("listen on %s alone: %v", first, err)
	}
	b, err := net.Listen("tcp", then)
	kernel := err == nil
	if kernel {
		b.Close()
	}
	a.Close()
	flags := web.FlagConfig{WebListenAddresses: &[]string{first, then}, WebSystemdSocket: &no}
	checked := CheckListenAddresses(&flags)
	ls, started := listen(&flags, slog.New(slog.DiscardHandler))
	closeAll(ls)
	if kernel && errors.Is(started, syscall.EADDRINUSE) {
		return false
	}
	want := "--web.listen-address=" + then + ": its port is taken by --web.listen-address=" + first
	for what, err := range map[string]error{"the check": checked, "the start": started} {
		switch {
		case kernel && err != nil:
			t.Errorf("%s refuses %s beside %s, which the kernel lets listen: %v", what, then, first, err)
		case !kernel && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v; want an error saying %q (the kernel refuses it)", what, err, want)
		}
	}
	return true
}

// TestListenAddressesVsockApart: a vsock port is not a TCP port, so a vsock address takes
// nothing from a TCP one of the same number, the wildcard's either, nor from a TCP host
// spelled "vsock"; two vsock addresses of one port do overlap, as vsock.Listen takes the
// port on every CID. (vsock cannot be listened on here: the check alone is held.)
func TestListenAddressesVsockApart(t *testing.T) {
	no := false
	for _, tc := range []struct {
		first, then string
		refused     bool
	}{
		{":9907", "vsock://:9907", false},
		{"vsock://:9907", "0.0.0.0:9907", false},
		{"vsock://:9907", "[::]:9907", false},
		{"vsock:9907", "vsock://:9907", false},
		{"vsock://:9907", "vsock://:9907", true},
		{"vsock://3:9907", "vsock://:9907", true},
		{"vsock://:9907", "vsock://:9908", false},
	} {
		t.Run(tc.first+" "+tc.then, func(t *testing.T) {
			err := CheckListenAddresses(&web.FlagConfig{WebListenAddresses: &[]string{tc.first, tc.then}, WebSystemdSocket: &no})
			want := "--web.listen-address=" + tc.then + ": its port is taken by --web.listen-address=" + tc.first
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%v; want an error saying %q", err, want)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v; a vsock port and a TCP port are apart", err)
			}
		})
	}
}

// TestWebConfigSettledBeforeTheStart: the start reads the web config (its check, the
// toolkit's set-up) and takes what it read for good: whether an address serves TLS among
// it. A web config saved in place as the exporter started, read in the middle of the save,
// empty or cut short, had the exporter serve plain HTTP until a restart, or fail its start
// with the error of a YAML cut short. The start waits for the web config and its files to
// settle, by their times or by what they are read as (a generator writes them again each
// second), and webConfigSettleWait at most, saying so; a file settled long before, or
// missing, is not waited for.
func TestWebConfigSettledBeforeTheStart(t *testing.T) {
	f := newTLSFiles(t, "", "")
	whole := mustRead(t, f.webConfig)
	// in returns, of a save, what the web config holds at each look: the first at the
	// start, the last from then on.
	in := func(saves ...[]byte) func(look int) []byte {
		return func(look int) []byte { return saves[min(look, len(saves)-1)] }
	}
	for _, tc := range []struct {
		name string
		// holds is what the web config holds at each look, saved then; nil is as it was,
		// settled long before, and a nil text none: the file is removed.
		holds func(look int) []byte
		// waited is how long the start waits, at least and less than racyAge more.
		waited time.Duration
		warned bool
	}{
		{"settled long before", nil, 0, false},
		{"read truncated", in([]byte{}, whole), racyAge, false},
		{"read cut short", in(whole[:len(whole)/2], whole), racyAge, false},
		{"written again each look", in(whole), racyAge, false},
		{"changing at each look", func(look int) []byte {
			return fmt.Appendf(slices.Clip(whole), "  min_version: TLS1%d\n", 2+look%2)
		}, webConfigSettleWait, true},
		{"missing", in(nil), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.write(t, "web.yml", whole)
			f.age(t, 0)
			clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
			looks := 0
			save := func() {
				defer func() { looks++ }()
				switch {
				case tc.holds == nil:
				case tc.holds(looks) == nil:
					if err := os.Remove(f.webConfig); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
				default:
					f.saveNow(t, clock, tc.holds(looks))
				}
			}
			save()
			var logged strings.Builder
			start := clock.Now()
			settleWebConfig(f.webConfig, clock.Now, func(d time.Duration) bool {
				clock.Add(d)
				save()
				return true
			}, slog.New(slog.NewTextHandler(&logged, nil)))
			if waited := clock.Now().Sub(start); waited < tc.waited || waited >= tc.waited+racyAge {
				t.Errorf("the start waited %v; want %v or more, less than %v more", waited, tc.waited, racyAge)
			}
			if warned := strings.Contains(logged.String(), "still changes"); warned != tc.warned {
				t.Errorf("warned %v; want %v:\n%s", warned, tc.warned, logged.String())
			}
			if tc.holds != nil && tc.holds(looks) == nil {
				return
			}
			// What the start's check then reads.
			var checked strings.Builder
			if err := checkWebConfig(f.webConfig, slog.New(slog.NewTextHandler(&checked, nil))); err != nil || strings.Contains(checked.String(), "sets nothing") {
				t.Errorf("the start's check once it waited: %v\n%s", err, checked.String())
			}
		})
	}
}

// TestServeSignalsWhileTheWebConfigSettles: signals are caught before the start reads the
// web config, which it may wait for a few seconds to settle (see settleWebConfig): a
// SIGHUP sent meanwhile (a generator that writes the web config and the rules, and sends
// SIGHUP each time) killed the process, with the signal's default action. It is the
// reload it asks for, once the exporter runs; a SIGTERM ends the wait and the start.
func TestServeSignalsWhileTheWebConfigSettles(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte("inputs: [{path: "+filepath.Join(dir, "access.log")+"}]\nrules: [{name: r, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, signal := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(signal.String(), func(t *testing.T) {
			free, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := free.Addr().String()
			free.Close()
			// Written now: the start waits for it to settle.
			webConfig := filepath.Join(t.TempDir(), "web.yml")
			if err := os.WriteFile(webConfig, []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			systemd := false
			flags := &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}
			served := make(chan error, 1)
			go func() {
				served <- Serve(cfg, pipeline.Options{Logger: logger, Now: time.Now}, flags, Options{Logger: logger, MetricsPath: "/metrics"})
			}()
			for !strings.Contains(logged.String(), "starting") {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			if err := syscall.Kill(os.Getpid(), signal); err != nil {
				t.Fatal(err)
			}
			if signal == syscall.SIGHUP {
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(logged.String(), "configuration reloaded") && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !strings.Contains(logged.String(), "configuration reloaded") {
					t.Errorf("a SIGHUP while the web config settled was not taken for a reload:\n%s", logged.String())
				}
				if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve: %v; want it ended by SIGTERM", err)
				}
			case <-hung(t):
				t.Fatal("Serve goes on after SIGTERM")
			}
		})
	}
}

// TestWebConfigProjectedNotWaitedFor: a web config from a Secret or a ConfigMap volume is
// written by the kubelet just before the container starts, so it is always young at the
// start; the kubelet swaps such a volume's files in whole (a new directory, then ..data
// renamed to it), so the start does not wait for them to age. A young file reached any
// other way is still waited for.
func TestWebConfigProjectedNotWaitedFor(t *testing.T) {
	const webConfig = "http_server_config:\n  http2: true\n"
	for _, tc := range []struct {
		name string
		// lay writes web.yml into dir, returning its path.
		lay    func(t *testing.T, dir string) string
		waited time.Duration
	}{
		{"a Secret's volume", func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "..2026_11_29_21_00_00.1", "web.yml"), webConfig)
			mustLink(t, "..2026_11_29_21_00_00.1", filepath.Join(dir, "..data"))
			mustLink(t, "..data/web.yml", filepath.Join(dir, "web.yml"))
			return filepath.Join(dir, "web.yml")
		}, 0},
		{"a file written in place", func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "web.yml"), webConfig)
			return filepath.Join(dir, "web.yml")
		}, racyAge},
		{"..data a directory, not the kubelet's link", func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "..data", "web.yml"), webConfig)
			mustLink(t, "..data/web.yml", filepath.Join(dir, "web.yml"))
			return filepath.Join(dir, "web.yml")
		}, racyAge},
		{"a link elsewhere", func(t *testing.T, dir string) string {
			mustWrite(t, filepath.Join(dir, "conf", "web.yml"), webConfig)
			mustLink(t, "conf/web.yml", filepath.Join(dir, "web.yml"))
			return filepath.Join(dir, "web.yml")
		}, racyAge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.lay(t, t.TempDir())
			clock := testclock.New(time.Now())
			start := clock.Now()
			settleWebConfig(path, clock.Now, func(d time.Duration) bool {
				clock.Add(d)
				return true
			}, slog.New(slog.DiscardHandler))
			if waited := clock.Now().Sub(start); waited < tc.waited || waited >= tc.waited+racyAge {
				t.Errorf("the start waited %v; want %v or more, less than %v more", waited, tc.waited, racyAge)
			}
		})
	}
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestListenerCount: the listeners the inputs' bound of open files leaves a descriptor
// each (inputFiles): one per --web.listen-address, the sockets systemd passes counted as
// one, and one when no address is given (the default's).
func TestListenerCount(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name    string
		addrs   *[]string
		systemd *bool
		want    int
	}{
		{"no flags", nil, nil, 1},
		{"one address", &[]string{":9100"}, &no, 1},
		{"three addresses", &[]string{":9100", ":9101", "vsock://:9102"}, &no, 3},
		{"an empty list", &[]string{}, nil, 1},
		{"systemd's sockets", &[]string{":9100", ":9101"}, &yes, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := listenerCount(&web.FlagConfig{WebListenAddresses: c.addrs, WebSystemdSocket: c.systemd}); got != c.want {
				t.Errorf("listenerCount = %d, want %d", got, c.want)
			}
		})
	}
}
