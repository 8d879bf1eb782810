package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
)

// Notifications' test parts (issue 16): a real SMTP server in the test
// process, and a local webhook receiver.

// Mail is one message the SMTP server accepted.
type Mail struct {
	From, To string
	Data     []byte
}

// SMTPServer is an SMTP server (go-smtp) on 127.0.0.1 that offers STARTTLS
// with a certificate for 127.0.0.1 and keeps every message.
type SMTPServer struct {
	Addr string
	// Roots trusts the server's certificate; CertFile holds it as PEM (for
	// SSL_CERT_FILE in a ctalk subprocess).
	Roots    *x509.CertPool
	CertFile string
	mu       sync.Mutex
	mails    []Mail
}

// StartSMTP starts an SMTP server, stopped when the test ends.
func StartSMTP(t testing.TB) *SMTPServer {
	t.Helper()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	s := &SMTPServer{Roots: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	s.CertFile = filepath.Join(t.TempDir(), "smtp-ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(s.CertFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(smtpBackend{s})
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: tlsSrv.TLS.Certificates}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return s
}

// Mails returns the messages received so far.
func (s *SMTPServer) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

type smtpBackend struct{ s *SMTPServer }

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSession{s: b.s}, nil }

type smtpSession struct {
	s        *SMTPServer
	from, to string
}

func (x *smtpSession) Reset()        {}
func (x *smtpSession) Logout() error { return nil }
func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}
func (x *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = to
	return nil
}
func (x *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	x.s.mails = append(x.s.mails, Mail{x.from, x.to, b})
	x.s.mu.Unlock()
	return nil
}

// Hit is one request a Receiver got.
type Hit struct {
	ID, Signature string // the Ctalk-Webhook-Id and Ctalk-Signature headers
	Body          []byte
	Status        int // what the receiver answered
}

// Receiver is a local webhook receiver. Respond decides each request's
// status by its number (from 1); nil answers 200. It may block (a hung
// receiver) until the request's context ends.
type Receiver struct {
	URL  string
	mu   sync.Mutex
	hits []Hit
}

// StartReceiver starts a receiver, stopped when the test ends.
func StartReceiver(t testing.TB, respond func(n int, r *http.Request) int) *Receiver {
	t.Helper()
	rc := &Receiver{}
	var count sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		count.Lock()
		n++
		k := n
		count.Unlock()
		status := http.StatusOK
		if respond != nil {
			status = respond(k, r)
		}
		rc.mu.Lock()
		rc.hits = append(rc.hits, Hit{r.Header.Get("Ctalk-Webhook-Id"), r.Header.Get("Ctalk-Signature"), body, status})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

// Hits returns the requests answered so far.
func (rc *Receiver) Hits() []Hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Hit(nil), rc.hits...)
}

// Delivered counts the requests answered 2xx, by notification id.
func (rc *Receiver) Delivered() map[string]int {
	out := map[string]int{}
	for _, h := range rc.Hits() {
		if h.Status >= 200 && h.Status < 300 {
			out[h.ID]++
		}
	}
	return out
}
