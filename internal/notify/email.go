package notify

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Email goes through one SMTP server, named by CTALK_SMTP_URL:
//
//	smtp://user:pass@mail.example.com:587   STARTTLS, required (default port 587)
//	smtps://user:pass@mail.example.com:465  TLS from the first byte (default port 465)
//	smtp://127.0.0.1:25?tls=none            no TLS: a relay on this machine or its
//	                                        private network; refused with a password
//
// A password never crosses the network in the clear: STARTTLS is mandatory
// unless tls=none is asked for explicitly, and tls=none refuses credentials.

// SMTP is a parsed CTALK_SMTP_URL and the sender address.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password string
	// Implicit is TLS from the first byte (smtps); otherwise STARTTLS.
	Implicit bool
	// NoTLS sends in the clear (tls=none): no credentials allowed.
	NoTLS bool
	// From is the sender (CTALK_SMTP_FROM), an address with an optional name.
	From string
	// Timeout bounds one delivery (default 30 s).
	Timeout time.Duration
	// TLSConfig, when set, replaces the default (the system's roots, the
	// host's name): for tests with a server of their own.
	TLSConfig *tls.Config
}

// ParseSMTP reads CTALK_SMTP_URL and CTALK_SMTP_FROM, with errors that say
// what to write instead. An empty rawURL is nil: no email.
func ParseSMTP(rawURL, from string) (*SMTP, error) {
	rawURL = strings.TrimSpace(rawURL)
	if rawURL == "" {
		return nil, nil
	}
	fail := func(why string) (*SMTP, error) {
		return nil, fmt.Errorf("CTALK_SMTP_URL %s: write it as smtp://user:password@host:587 (STARTTLS), "+
			"smtps://user:password@host:465 (TLS), or smtp://host:25?tls=none for a local relay without TLS", why)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return fail("is not a URL")
	}
	s := &SMTP{Host: u.Hostname(), Timeout: 30 * time.Second}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port, s.Implicit = 465, true
	default:
		return fail(fmt.Sprintf("has the scheme %q", u.Scheme))
	}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil || s.Port < 1 || s.Port > 65535 {
			return fail("has a bad port")
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	switch tls := q.Get("tls"); {
	case tls == "none" && s.Implicit:
		return fail("asks for smtps and tls=none at once")
	case tls == "none" && u.User != nil:
		return fail("sends a password without TLS (tls=none): drop tls=none, or the credentials for an open local relay")
	case tls == "none":
		s.NoTLS = true
	case tls != "":
		return fail(fmt.Sprintf("has tls=%q (only tls=none is known)", tls))
	}
	for k := range q {
		if k != "tls" {
			return fail(fmt.Sprintf("has the unknown option %q", k))
		}
	}
	if strings.TrimSpace(from) == "" {
		return nil, fmt.Errorf("CTALK_SMTP_FROM is not set: give the sender of notification emails, such as \"ctalk <ctalk@example.com>\"")
	}
	if _, err := mail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("CTALK_SMTP_FROM %q is not an email address: write it as ctalk@example.com or \"ctalk <ctalk@example.com>\"", from)
	}
	s.From = strings.TrimSpace(from)
	return s, nil
}

// String describes the server for logs: never the password.
func (s *SMTP) String() string {
	mode := "STARTTLS"
	switch {
	case s.Implicit:
		mode = "TLS"
	case s.NoTLS:
		mode = "no TLS"
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) + " (" + mode + ")"
}

// send delivers one notification email. Its Message-ID names the
// notification, the same on every retry, so a mail system can drop repeats.
func (s *SMTP) send(ctx context.Context, to string, c content) error {
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := m.From(s.From); err != nil {
		return fmt.Errorf("the sender address is refused: %w", err)
	}
	if err := m.To(to); err != nil {
		return fmt.Errorf("the recipient address is refused")
	}
	m.Subject(c.subject())
	m.SetMessageIDWithValue(messageID(c.id, s.From))
	m.SetDate()
	m.SetGenHeader("Auto-Submitted", "auto-generated")
	m.SetBodyString(gomail.TypeTextPlain, c.plain())
	opts := []gomail.Option{gomail.WithPort(s.Port), gomail.WithTimeout(s.Timeout)}
	switch {
	case s.Implicit:
		opts = append(opts, gomail.WithSSL())
	case s.NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(s.TLSConfig))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	client, err := gomail.NewClient(s.Host, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	return client.DialAndSendWithContext(ctx, m)
}

// messageID is the Message-ID of a notification, in the sender's domain.
func messageID(id int64, from string) string {
	domain := "ctalk.invalid"
	if a, err := mail.ParseAddress(from); err == nil {
		if _, d, ok := strings.Cut(a.Address, "@"); ok && d != "" {
			domain = d
		}
	}
	return "ctalk-notification-" + strconv.FormatInt(id, 10) + "@" + domain
}
