// Package notify holds the parts of ctalk's notifications (issue 16) that do
// not depend on how they are queued: the guard that keeps webhooks from
// reaching the server's own network, and the signature of a webhook body.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// A webhook URL is chosen by a user, and the server sends to it: without a
// guard, a user could make ctalk call its own database, a cloud metadata
// service (169.254.169.254) or anything else on its network (server-side
// request forgery). The guard refuses such URLs when they are configured,
// and again at every connection (the address a name resolves to can change
// between the two: DNS rebinding) and every redirect.

// ErrBlocked is the error of every refused address or URL.
var ErrBlocked = errors.New("webhook destination refused")

// blockedPrefixes are the address ranges ctalk never sends to unless the
// operator allows private destinations: besides loopback, private,
// link-local, multicast and unspecified addresses (netip's predicates),
// these special-purpose ranges.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT, often a provider's internal network
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, and the broadcast address
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// embeddedIPv4 are IPv6 ranges that carry an IPv4 address a gateway may
// forward to, with where it sits: NAT64 and 6to4.
var embeddedIPv4 = []struct {
	prefix netip.Prefix
	at     int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
}

// Blocked reports whether ip is an address ctalk does not send to by default.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() {
		for _, e := range embeddedIPv4 {
			if e.prefix.Contains(ip) {
				b := ip.As16()
				return Blocked(netip.AddrFrom4([4]byte(b[e.at : e.at+4])))
			}
		}
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Resolver finds the addresses of a host name (net.DefaultResolver does).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard checks webhook destinations.
type Guard struct {
	// AllowPrivate lets webhooks reach private and loopback addresses, and
	// plain http: for an operator whose receivers are on their own network
	// (CTALK_WEBHOOK_ALLOW_PRIVATE), and for tests.
	AllowPrivate bool
	// Resolver resolves host names; nil is net.DefaultResolver.
	Resolver Resolver
}

func (g Guard) resolver() Resolver {
	if g.Resolver == nil {
		return net.DefaultResolver
	}
	return g.Resolver
}

// refuse is the error for a destination, saying what the operator can do.
func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBlocked, fmt.Sprintf(format, args...))
}

const allowHint = "ctalk sends webhooks only to public addresses unless the operator sets CTALK_WEBHOOK_ALLOW_PRIVATE=1"

// CheckURL validates a webhook URL when it is configured: https (http only
// where private destinations are allowed), no user name or password, and a
// host whose every address is public. It returns the parsed URL.
func (g Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, refuse("%q is not an absolute URL such as https://hooks.slack.com/services/…", raw)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate:
	default:
		return nil, refuse("the URL must start with https:// (not %s://)", u.Scheme)
	}
	if u.User != nil {
		return nil, refuse("the URL must not contain a user name or password: put the secret in its path or query")
	}
	host := u.Hostname()
	if g.AllowPrivate {
		return u, nil
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if addrs, err = g.resolver().LookupNetIP(lctx, "ip", host); err != nil || len(addrs) == 0 {
			return nil, refuse("the host %q could not be resolved: check the URL", host)
		}
	}
	for _, ip := range addrs {
		if Blocked(ip) {
			return nil, refuse("%s resolves to %s, a private, loopback or reserved address; %s", host, ip, allowHint)
		}
	}
	return u, nil
}

// control is a net.Dialer's Control: it refuses a connection to a blocked
// address, whatever name led there.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse("cannot check the address %q", address)
	}
	if Blocked(ap.Addr()) {
		return refuse("connection to %s refused: a private, loopback or reserved address; %s", ap.Addr(), allowHint)
	}
	return nil
}

// maxRedirects bounds the redirects a delivery follows.
const maxRedirects = 3

// Client is an HTTP client for deliveries: every connection and every
// redirect passes the guard, environment proxies are not used (a proxy
// would make the connection the guard sees the proxy's), and every request
// has a deadline.
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return refuse("more than %d redirects", maxRedirects)
			}
			_, err := g.CheckURL(req.Context(), req.URL.String())
			return err
		},
	}
}
