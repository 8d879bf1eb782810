package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// privateRanges are the addresses a host's own proxy connects from when it
// forwards over the host's internal network: RFC 1918, the shared address
// space (RFC 6598) some hosts use internally, IPv6 unique local addresses
// and loopback.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
}

// proxyPresets name the proxies of the hosts ctalk documents. None of them
// publishes its proxies' addresses; each forwards from its private network,
// so each preset is the private ranges.
var proxyPresets = map[string][]netip.Prefix{
	"private": privateRanges,
	"railway": privateRanges,
	"render":  privateRanges,
	"fly":     privateRanges,
}

// ParseTrustedProxies parses a comma-separated list of CIDRs (10.0.0.0/8),
// single addresses (192.0.2.7) and preset names (private, railway, render,
// fly) into the prefixes whose X-Forwarded-For ctalk believes. The empty
// string trusts nobody.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if preset, ok := proxyPresets[strings.ToLower(item)]; ok {
			out = append(out, preset...)
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			if p.Addr().Is4In6() && p.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(item); err == nil && a.Zone() == "" {
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		return nil, fmt.Errorf("trusted proxies: %q is not a CIDR (such as 10.0.0.0/8 or fd00::/8), "+
			"an IP address, or a preset (private, railway, render, fly); separate entries with commas", item)
	}
	return out, nil
}

// proxies decides whose forwarding headers count.
type proxies struct {
	trusted []netip.Prefix
	// header, if set, is a header a trusted proxy sets to the client's
	// address (Fly-Client-IP); it wins over X-Forwarded-For.
	header string
}

func (p proxies) trusts(a netip.Addr) bool {
	for _, pre := range p.trusted {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// fromTrusted reports whether r came straight from a trusted proxy.
func (p proxies) fromTrusted(r *http.Request) bool {
	if len(p.trusted) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	return err == nil && p.trusts(peer.WithZone("").Unmap())
}

// clientKey is the key password throttling counts a caller's failures
// against. A connection from an untrusted peer is the client itself, and
// whatever it says in X-Forwarded-For is ignored (it could rotate it to dodge
// the throttle). From a trusted proxy, X-Forwarded-For is walked from the
// right, skipping trusted hops: the first untrusted address is the one the
// outermost trusted proxy saw, which no client can forge. IPv6 clients are
// keyed by their /64, which one subscriber usually holds whole.
func (p proxies) clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.WithZone("").Unmap()
	if !p.trusts(peer) {
		return addrKey(peer)
	}
	if p.header != "" {
		if a, ok := parseHop(r.Header.Get(p.header)); ok {
			return addrKey(a)
		}
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break // garbage or none: the hop to its right is the last we can vouch for
		}
		client = a
		if !p.trusts(a) {
			break
		}
	}
	return addrKey(client)
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port or IPv6 brackets.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// addrKey is a's throttle key: the address itself, or an IPv6 address's /64.
func addrKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
