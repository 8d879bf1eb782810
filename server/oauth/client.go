// Package oauth is ctalk's OAuth 2.1 face: the authorization server and the
// protected-resource side of MCP authorization (sign-in page, token,
// registration and revocation endpoints, metadata documents, and the bearer
// check in front of /oauth/mcp). It speaks HTTP and nothing else; the rules
// live in internal/relay.
//
// This file resolves OAuth clients: a client_id that is an https URL names a
// Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document),
// fetched by a Fetcher that refuses private addresses, redirects and large
// bodies, and caches what it got; any other client_id was issued by Dynamic
// Client Registration (RFC 7591), whose request body ValidateRegistration
// checks. RedirectAllowed compares a redirect_uri with the registered ones,
// exactly except for the port of loopback redirects (RFC 8252 §7.3).
package oauth

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Client is an OAuth client as ctalk knows it: from a metadata document
// (Metadata true, ID is the document's URL) or from registration (Metadata
// false, ID assigned by whoever stored it).
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	Metadata     bool   // the client_id is a Client ID Metadata Document URL
	URI          string // client_uri, if the client gave a valid one
}

// Limits on what a client may declare.
const (
	MaxClientNameRunes   = 200
	MaxRedirectURIs      = 20
	MaxRedirectURIBytes  = 2000
	MaxClientIDURLBytes  = 2000
	MaxClientURIBytes    = 2000
	MaxRegistrationBytes = 64 << 10
	DefaultClientName    = "Unnamed client"
)

// ClientError says why a client_id could not be resolved. Code is an OAuth
// error code ("invalid_client" or "invalid_request"); Description is safe to
// show to the person and to log: it names at most the client_id URL, never
// the document's content or the addresses its host resolves to.
type ClientError struct {
	Code        string
	Description string
}

func (e *ClientError) Error() string { return e.Code + ": " + e.Description }

func invalidClient(format string, args ...any) *ClientError {
	return &ClientError{Code: "invalid_client", Description: fmt.Sprintf(format, args...)}
}

// RegistrationError is an RFC 7591 §3.2.2 error: Code is
// "invalid_redirect_uri" or "invalid_client_metadata".
type RegistrationError struct {
	Code        string
	Description string
}

func (e *RegistrationError) Error() string { return e.Code + ": " + e.Description }

// IsMetadataURL reports whether clientID names a Client ID Metadata Document:
// an https URL with a host and a path, no user or password, no fragment and
// no "." or ".." path segments (draft-ietf-oauth-client-id-metadata-document
// §3). A port and a query are allowed.
func IsMetadataURL(clientID string) bool {
	_, err := parseClientIDURL(clientID, nil)
	return err == nil
}

// IsMetadataURL is the package's IsMetadataURL that also accepts http URLs
// of the origins in FetcherOptions.Allow (tests serve documents that way).
// A client_id for which it is true goes to Get; any other is a registered
// (DCR) client's.
func (f *Fetcher) IsMetadataURL(clientID string) bool {
	_, err := parseClientIDURL(clientID, func(o string) bool { return f.allowOrigin[o] })
	return err == nil
}

// parseClientIDURL checks clientID against the metadata document URL rules.
// allowed, when not nil, says whether an http origin ("http://host:port") is
// allowed to stand in for https (tests only).
func parseClientIDURL(clientID string, allowed func(origin string) bool) (*url.URL, error) {
	if len(clientID) > MaxClientIDURLBytes {
		return nil, fmt.Errorf("longer than %d bytes", MaxClientIDURLBytes)
	}
	for _, r := range clientID {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return nil, errors.New("it contains spaces, control or non-ASCII characters")
		}
	}
	if strings.Contains(clientID, "#") {
		return nil, errors.New("it has a fragment")
	}
	u, err := url.Parse(clientID)
	if err != nil {
		return nil, errors.New("it is not a URL")
	}
	switch {
	case u.Scheme == "https" && strings.HasPrefix(clientID, "https://"):
	case u.Scheme == "http" && strings.HasPrefix(clientID, "http://") && allowed != nil && allowed(origin(u)):
	default:
		return nil, errors.New("it does not start with https://")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, errors.New("it has no host")
	}
	if u.User != nil {
		return nil, errors.New("it has a user or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("its port is not a number from 1 to 65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, errors.New("its port is empty")
	}
	if u.Path == "" {
		return nil, errors.New("it has no path")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		s, _ := url.PathUnescape(seg)
		if seg == "." || seg == ".." || s == "." || s == ".." {
			return nil, errors.New(`it has a "." or ".." path segment`)
		}
	}
	return u, nil
}

// origin is scheme://host:port with the port always written out, lower case.
func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port)
}

// FetcherOptions configures a Fetcher. The zero value is production's.
type FetcherOptions struct {
	// Timeout bounds one fetch: connecting, TLS, headers and body
	// (default 5 s).
	Timeout time.Duration
	// MaxBytes caps the document's size (default 5 KiB); a longer body is
	// refused.
	MaxBytes int64
	// CacheTTL is how long a fetched document is reused when its response
	// has no Cache-Control max-age (default 10 min). A max-age is honoured,
	// clamped to [1 min, 24 h]; no-store and no-cache count as 1 min.
	CacheTTL time.Duration
	// FailureTTL is how long a failed fetch is remembered, so a flood of
	// authorization requests naming a broken or hostile URL costs one fetch
	// (default 30 s).
	FailureTTL time.Duration
	// CacheEntries bounds the cache (default 1,000); the oldest entry goes
	// first.
	CacheEntries int
	// MaxConcurrentFetches bounds the fetches of different URLs in flight
	// at once (default 64); a Get that would start one more is refused at
	// once and not remembered.
	MaxConcurrentFetches int
	// Allow lists origins ("http://127.0.0.1:8123") that may be fetched over
	// plain http and at private addresses. For tests only; production
	// leaves it empty (env CTALK_OAUTH_CLIENT_METADATA_ALLOW).
	Allow []string
	// HTTPClient supplies TLS settings (its Transport must be an
	// *http.Transport, or nil). The Fetcher always replaces the dialer
	// (public addresses only), turns proxies off and refuses redirects.
	HTTPClient *http.Client
	// LookupNetIP resolves host names (default net.DefaultResolver's). Tests
	// set it to make a name resolve to a private address.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Default FetcherOptions values.
const (
	DefaultFetchTimeout   = 5 * time.Second
	DefaultFetchMaxBytes  = 5 << 10
	DefaultCacheTTL       = 10 * time.Minute
	DefaultFailureTTL     = 30 * time.Second
	DefaultCacheEntries   = 1000
	DefaultMaxFetches     = 64
	MinCacheTTL           = time.Minute
	MaxCacheTTL           = 24 * time.Hour
	userAgent             = "ctalk-oauth-client-metadata-fetcher"
	maxResponseHeaderSize = 16 << 10
)

// Fetcher resolves Client ID Metadata Documents. It is safe for concurrent
// use; concurrent Gets of one URL share one fetch.
type Fetcher struct {
	opts        FetcherOptions
	client      *http.Client
	allowOrigin map[string]bool // "http://127.0.0.1:8123"
	allowAddr   map[string]bool // "127.0.0.1:8123", as the transport dials it
	now         func() time.Time
	slots       chan struct{} // one per fetch in flight

	mu       sync.Mutex
	cache    map[string]*list.Element // of *cacheEntry
	order    *list.List               // oldest first
	inflight map[string]*fetchCall
}

type cacheEntry struct {
	url     string
	client  Client
	err     *ClientError
	expires time.Time
}

type fetchCall struct {
	done    chan struct{}
	client  Client
	err     *ClientError
	waiters int // Gets sharing this fetch besides the first (tests look)
}

// NewFetcher checks opts and returns a Fetcher.
func NewFetcher(opts FetcherOptions) (*Fetcher, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultFetchTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultFetchMaxBytes
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.FailureTTL <= 0 {
		opts.FailureTTL = DefaultFailureTTL
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = DefaultCacheEntries
	}
	if opts.MaxConcurrentFetches <= 0 {
		opts.MaxConcurrentFetches = DefaultMaxFetches
	}
	if opts.LookupNetIP == nil {
		opts.LookupNetIP = net.DefaultResolver.LookupNetIP
	}
	f := &Fetcher{
		opts:        opts,
		allowOrigin: map[string]bool{},
		allowAddr:   map[string]bool{},
		now:         time.Now,
		slots:       make(chan struct{}, opts.MaxConcurrentFetches),
		cache:       map[string]*list.Element{},
		order:       list.New(),
		inflight:    map[string]*fetchCall{},
	}
	for _, a := range opts.Allow {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("oauth: allowed client metadata origin %q is not an origin: write scheme://host:port, e.g. http://127.0.0.1:8123", a)
		}
		o := origin(u)
		f.allowOrigin[o] = true
		// The transport dials host:port, the port always written out.
		f.allowAddr[strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://")] = true
	}

	var tr *http.Transport
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		t, ok := opts.HTTPClient.Transport.(*http.Transport)
		if !ok {
			return nil, errors.New("oauth: FetcherOptions.HTTPClient.Transport must be an *http.Transport or nil")
		}
		tr = t.Clone()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr.Proxy = nil // a proxy would be dialled instead of the document's host
	tr.DialContext = f.dial
	tr.DialTLSContext = nil
	tr.MaxResponseHeaderBytes = maxResponseHeaderSize
	tr.TLSHandshakeTimeout = opts.Timeout
	tr.ResponseHeaderTimeout = opts.Timeout
	tr.MaxIdleConns = 16
	tr.MaxIdleConnsPerHost = 1
	tr.IdleConnTimeout = 30 * time.Second
	f.client = &http.Client{
		Transport: tr,
		Timeout:   opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is refused below
		},
	}
	return f, nil
}

// errBlockedAddress is returned by the dialer for a non-public address.
var errBlockedAddress = errors.New("address is not public")

// dial connects only to public addresses, except for allowed origins. It
// resolves the name itself and dials the checked addresses, and the dialer's
// Control hook checks the address actually dialled again, so a name that
// resolves to a public address once and a private one later (DNS rebinding)
// never reaches the private one.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: f.opts.Timeout}
	if f.allowAddr[strings.ToLower(addr)] {
		return d.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		ips, err = f.opts.LookupNetIP(ctx, ipNet, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	// One private address among the answers refuses them all: a name that
	// mixes them is not a public web server's.
	for _, ip := range ips {
		if !PublicAddr(ip) {
			return nil, errBlockedAddress
		}
	}
	d.Control = controlPublic
	var firstErr error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// controlPublic is a net.Dialer Control hook refusing non-public addresses.
func controlPublic(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddr(ap.Addr()) {
		return errBlockedAddress
	}
	return nil
}

// nonPublic lists the prefixes ctalk never fetches a metadata document from:
// this-host, private (RFC 1918), shared (CGNAT, RFC 6598), loopback,
// link-local, IETF protocol assignments, documentation, benchmarking,
// reserved, multicast and broadcast for IPv4; unspecified, loopback,
// IPv4-mapped/compatible/translated (which embed an IPv4 address), discard,
// Teredo, documentation, 6to4, ULA, link-local, site-local and multicast for
// IPv6.
var nonPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48",
		"100::/64", "2001::/32", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10",
		"fec0::/10", "ff00::/8",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// PublicAddr reports whether ip is a public unicast address, one a metadata
// document may be fetched from.
func PublicAddr(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Get returns the client whose metadata document is at clientID, from the
// cache or fetched. Errors are *ClientError, or ctx's error when ctx ended
// first (the fetch itself goes on for the other callers and the cache).
func (f *Fetcher) Get(ctx context.Context, clientID string) (Client, error) {
	u, err := parseClientIDURL(clientID, func(o string) bool { return f.allowOrigin[o] })
	if err != nil {
		return Client{}, &ClientError{Code: "invalid_request", Description: fmt.Sprintf(
			"client_id %q is neither a registered client nor a client metadata document URL: %v "+
				"(a metadata document URL is https://, with a host and a path, no user, fragment or dot segments)",
			truncate(clientID, 200), err)}
	}
	f.mu.Lock()
	if e, ok := f.cache[clientID]; ok {
		ce := e.Value.(*cacheEntry)
		if f.now().Before(ce.expires) {
			f.mu.Unlock()
			if ce.err != nil {
				return Client{}, ce.err
			}
			return cloneClient(ce.client), nil
		}
		f.order.Remove(e)
		delete(f.cache, clientID)
	}
	call, ok := f.inflight[clientID]
	if ok {
		call.waiters++
	} else {
		select {
		case f.slots <- struct{}{}:
		default:
			f.mu.Unlock()
			return Client{}, invalidClient("ctalk is fetching too many client metadata documents at once to fetch the one at %s; try again in a few seconds", clientID)
		}
		call = &fetchCall{done: make(chan struct{})}
		f.inflight[clientID] = call
		// The fetch belongs to every caller waiting for it, so it does not
		// end with the first caller's context; it has its own timeout.
		go f.fetchAndStore(context.WithoutCancel(ctx), clientID, u, call)
	}
	f.mu.Unlock()

	select {
	case <-call.done:
		if call.err != nil {
			return Client{}, call.err
		}
		return cloneClient(call.client), nil
	case <-ctx.Done():
		return Client{}, ctx.Err()
	}
}

func (f *Fetcher) fetchAndStore(ctx context.Context, clientID string, u *url.URL, call *fetchCall) {
	c, ttl, cerr := f.fetch(ctx, clientID, u)
	<-f.slots
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	call.client, call.err = c, cerr
	delete(f.inflight, clientID)
	close(call.done)
	e := &cacheEntry{url: clientID, client: c, err: cerr, expires: now.Add(ttl)}
	if cerr != nil {
		e.expires = now.Add(f.opts.FailureTTL)
	}
	if old, ok := f.cache[clientID]; ok {
		f.order.Remove(old)
	}
	f.cache[clientID] = f.order.PushBack(e)
	for f.order.Len() > f.opts.CacheEntries {
		oldest := f.order.Front()
		f.order.Remove(oldest)
		delete(f.cache, oldest.Value.(*cacheEntry).url)
	}
}

// cached reports how many documents (and failures) the cache holds.
func (f *Fetcher) cached() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order.Len()
}

// metadataDocument is the part of a client metadata document ctalk reads.
type metadataDocument struct {
	ClientID                *string  `json:"client_id"`
	ClientName              *string  `json:"client_name"`
	ClientURI               *string  `json:"client_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
	ClientSecret            *string  `json:"client_secret"`
	ClientSecretExpiresAt   any      `json:"client_secret_expires_at"`
}

func (f *Fetcher) fetch(ctx context.Context, clientID string, u *url.URL) (Client, time.Duration, *ClientError) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	where := fmt.Sprintf("the client metadata document at %s", clientID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return Client{}, 0, invalidClient("could not fetch %s: it is not a URL ctalk can request", where)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := f.client.Do(req)
	if err != nil {
		return Client{}, 0, invalidClient("could not fetch %s: %s", where, describeFetchError(ctx, err, f.opts.Timeout))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Client{}, 0, invalidClient("could not fetch %s: it answered with a redirect (HTTP %d); ctalk follows none: the document must be served at exactly its client_id URL", where, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return Client{}, 0, invalidClient("could not fetch %s: it answered HTTP %d; it must answer 200 with the JSON document", where, resp.StatusCode)
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return Client{}, 0, invalidClient("%s is larger than %d bytes; ctalk reads no more", where, f.opts.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Client{}, 0, invalidClient("could not read %s: %s", where, describeFetchError(ctx, err, f.opts.Timeout))
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return Client{}, 0, invalidClient("%s is larger than %d bytes; ctalk reads no more", where, f.opts.MaxBytes)
	}
	c, cerr := parseMetadataDocument(body, clientID, u)
	if cerr != nil {
		return Client{}, 0, cerr
	}
	return c, cacheTTL(resp.Header, f.opts.CacheTTL), nil
}

// parseMetadataDocument checks a fetched document and makes a Client of it.
func parseMetadataDocument(body []byte, clientID string, u *url.URL) (Client, *ClientError) {
	where := fmt.Sprintf("the client metadata document at %s", clientID)
	var doc metadataDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Client{}, invalidClient("%s has a field %s of the wrong type (%s)", where, te.Field, te.Value)
		}
		return Client{}, invalidClient("%s is not a JSON object", where)
	}
	if doc.ClientID == nil || *doc.ClientID != clientID {
		return Client{}, invalidClient("%s has no client_id or one other than its own URL; client_id must be exactly the URL it is served at", where)
	}
	if doc.ClientSecret != nil || doc.ClientSecretExpiresAt != nil {
		return Client{}, invalidClient("%s holds a client_secret; a metadata document is public and must not", where)
	}
	if doc.TokenEndpointAuthMethod != nil && *doc.TokenEndpointAuthMethod != "none" {
		return Client{}, invalidClient("%s asks for token_endpoint_auth_method %q; ctalk serves public clients only: use none", where, truncate(*doc.TokenEndpointAuthMethod, 40))
	}
	if len(doc.RedirectURIs) == 0 {
		return Client{}, invalidClient("%s lists no redirect_uris; it must list at least one", where)
	}
	if len(doc.RedirectURIs) > MaxRedirectURIs {
		return Client{}, invalidClient("%s lists more than %d redirect_uris", where, MaxRedirectURIs)
	}
	for i, r := range doc.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return Client{}, invalidClient("%s: redirect_uris[%d] %v", where, i, err)
		}
	}
	name := u.Hostname()
	if doc.ClientName != nil {
		n, err := checkClientName(*doc.ClientName)
		if err != nil {
			return Client{}, invalidClient("%s: client_name %v", where, err)
		}
		if n != "" {
			name = n
		}
	}
	c := Client{ID: clientID, Name: name, RedirectURIs: doc.RedirectURIs, Metadata: true}
	if doc.ClientURI != nil {
		// Only shown on the sign-in page: a bad one is dropped, not fatal.
		if cu, err := checkClientURI(*doc.ClientURI); err == nil {
			c.URI = cu
		}
	}
	return c, nil
}

// describeFetchError says what went wrong without addresses or the
// server's words.
func describeFetchError(ctx context.Context, err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var unknownAuth x509.UnknownAuthorityError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, errBlockedAddress):
		return "its host is at a private, local or reserved address; ctalk fetches metadata documents only from public addresses"
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("no complete answer within %s", timeout)
	case errors.As(err, &dnsErr):
		return "its host name does not resolve"
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &unknownAuth):
		return "its TLS certificate is not valid for its host"
	case errors.As(err, &recErr):
		return "it does not speak TLS"
	default:
		return "the connection failed"
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// cacheTTL reads Cache-Control: max-age clamped to [MinCacheTTL,
// MaxCacheTTL]; no-store or no-cache mean MinCacheTTL; otherwise def.
func cacheTTL(h http.Header, def time.Duration) time.Duration {
	ttl := def
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			switch {
			case d == "no-store" || d == "no-cache":
				return MinCacheTTL
			case strings.HasPrefix(d, "max-age="):
				n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(d, "max-age="), `"`), 10, 64)
				if err != nil || n < 0 {
					continue
				}
				if n > int64(MaxCacheTTL/time.Second) {
					n = int64(MaxCacheTTL / time.Second)
				}
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(ttl, MinCacheTTL), MaxCacheTTL)
}

func cloneClient(c Client) Client {
	c.RedirectURIs = append([]string(nil), c.RedirectURIs...)
	return c
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// refusedSchemes are never redirect targets, whatever a client registers.
var refusedSchemes = map[string]bool{
	"javascript": true, "data": true, "vbscript": true, "file": true, "about": true,
	"blob": true, "filesystem": true, "ws": true, "wss": true, "ftp": true,
}

// loopbackHosts are the hosts an http redirect URI may name (RFC 8252 §7.3;
// localhost is there because Claude Code registers it).
var loopbackHosts = map[string]bool{"127.0.0.1": true, "[::1]": true, "localhost": true}

// checkRedirectURI says what is wrong with a redirect URI a client declares:
// it must be absolute, without fragment, and https, or http to a loopback
// host, or a private-use scheme (RFC 8252 §7.1).
func checkRedirectURI(r string) error {
	if r == "" {
		return errors.New("is empty")
	}
	if len(r) > MaxRedirectURIBytes {
		return fmt.Errorf("is longer than %d bytes", MaxRedirectURIBytes)
	}
	for _, c := range r {
		if c <= ' ' || c == 0x7f {
			return errors.New("contains spaces or control characters")
		}
	}
	if strings.Contains(r, "#") {
		return errors.New("has a fragment; redirect URIs must not")
	}
	u, err := url.Parse(r)
	if err != nil || !u.IsAbs() {
		return errors.New("is not an absolute URI")
	}
	scheme := u.Scheme // url.Parse lowers it; r keeps the spelling
	if !strings.HasPrefix(r, scheme+":") {
		return errors.New("has an upper-case scheme; write it in lower case")
	}
	switch {
	case scheme == "https":
		if u.Host == "" || u.Hostname() == "" {
			return errors.New("has no host")
		}
		if u.User != nil {
			return errors.New("has a user or password")
		}
	case scheme == "http":
		if u.User != nil {
			return errors.New("has a user or password")
		}
		if !loopbackHosts[hostOf(u)] {
			return errors.New("uses http to a host other than 127.0.0.1, [::1] or localhost; use https")
		}
	case refusedSchemes[scheme]:
		return fmt.Errorf("uses the scheme %s, which cannot be a redirect target", scheme)
	default:
		// A private-use scheme (com.example.app:/cb, cursor://…): the app
		// that claimed it receives the code; PKCE protects it.
	}
	return nil
}

// hostOf is u's host without the port, with IPv6 brackets kept, lower case.
func hostOf(u *url.URL) string {
	h := u.Host
	if i := strings.LastIndex(h, ":"); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return strings.ToLower(h)
}

func checkClientName(n string) (string, error) {
	n = strings.TrimSpace(n)
	if !utf8.ValidString(n) {
		return "", errors.New("is not valid UTF-8")
	}
	if utf8.RuneCountInString(n) > MaxClientNameRunes {
		return "", fmt.Errorf("is longer than %d characters", MaxClientNameRunes)
	}
	for _, r := range n {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "", errors.New("contains control characters")
		}
	}
	return n, nil
}

func checkClientURI(s string) (string, error) {
	if len(s) > MaxClientURIBytes {
		return "", fmt.Errorf("is longer than %d bytes", MaxClientURIBytes)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
		return "", errors.New("is not an http(s) URL")
	}
	return s, nil
}

// registration is the part of an RFC 7591 registration request ctalk reads;
// other fields are ignored (RFC 7591 §2).
type registration struct {
	RedirectURIs            *[]string `json:"redirect_uris"`
	ClientName              *string   `json:"client_name"`
	ClientURI               *string   `json:"client_uri"`
	TokenEndpointAuthMethod *string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string  `json:"grant_types"`
	ResponseTypes           []string  `json:"response_types"`
}

// ValidateRegistration checks an RFC 7591 registration request body and
// returns the client it describes (ID empty: the caller assigns it). ctalk
// registers public clients using the authorization code grant only.
func ValidateRegistration(body []byte) (Client, *RegistrationError) {
	bad := func(format string, args ...any) (Client, *RegistrationError) {
		return Client{}, &RegistrationError{Code: "invalid_client_metadata", Description: fmt.Sprintf(format, args...)}
	}
	badRedirect := func(format string, args ...any) (Client, *RegistrationError) {
		return Client{}, &RegistrationError{Code: "invalid_redirect_uri", Description: fmt.Sprintf(format, args...)}
	}
	if len(body) > MaxRegistrationBytes {
		return bad("the registration request is larger than %d bytes", MaxRegistrationBytes)
	}
	var reg registration
	if err := json.Unmarshal(body, &reg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			if strings.HasPrefix(te.Field, "redirect_uris") {
				return badRedirect("redirect_uris must be an array of strings")
			}
			return bad("%s has the wrong type (%s)", te.Field, te.Value)
		}
		return bad("the registration request must be a JSON object")
	}
	if reg.RedirectURIs == nil || len(*reg.RedirectURIs) == 0 {
		return badRedirect("redirect_uris is required: list at least one redirect URI")
	}
	uris := *reg.RedirectURIs
	if len(uris) > MaxRedirectURIs {
		return badRedirect("at most %d redirect_uris, got %d", MaxRedirectURIs, len(uris))
	}
	for i, r := range uris {
		if err := checkRedirectURI(r); err != nil {
			return badRedirect("redirect_uris[%d] %v", i, err)
		}
	}
	if m := reg.TokenEndpointAuthMethod; m != nil && *m != "none" {
		return bad("ctalk issues public clients only: use token_endpoint_auth_method none")
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return bad("grant_types may hold only authorization_code and refresh_token, not %q", truncate(g, 60))
		}
	}
	for _, t := range reg.ResponseTypes {
		if t != "code" {
			return bad("response_types may hold only code, not %q", truncate(t, 60))
		}
	}
	c := Client{Name: DefaultClientName, RedirectURIs: append([]string(nil), uris...)}
	if reg.ClientName != nil {
		n, err := checkClientName(*reg.ClientName)
		if err != nil {
			return bad("client_name %v", err)
		}
		if n != "" {
			c.Name = n
		}
	}
	if reg.ClientURI != nil && *reg.ClientURI != "" {
		cu, err := checkClientURI(*reg.ClientURI)
		if err != nil {
			return bad("client_uri %v", err)
		}
		c.URI = cu
	}
	return c, nil
}

// RedirectAllowed reports whether got is one of the registered redirect
// URIs: the same string, except that for a registered loopback redirect
// (http://127.0.0.1/…, http://[::1]/…, http://localhost/…) got may carry any
// port (RFC 8252 §7.3). Scheme, host, path and query must match exactly.
func RedirectAllowed(registered []string, got string) bool {
	for _, r := range registered {
		if r == got {
			return true
		}
	}
	g, ok := loopbackWithoutPort(got)
	if !ok {
		return false
	}
	for _, r := range registered {
		if rr, ok := loopbackWithoutPort(r); ok && rr == g {
			return true
		}
	}
	return false
}

// loopbackWithoutPort returns s without its port if s is an http URL to a
// loopback host (with no user and a valid or absent port).
func loopbackWithoutPort(s string) (string, bool) {
	const pre = "http://"
	if !strings.HasPrefix(s, pre) || strings.Contains(s, "#") {
		return "", false
	}
	rest := s[len(pre):]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		i := strings.Index(authority, "]")
		if i < 0 {
			return "", false
		}
		host, port = authority[:i+1], authority[i+1:]
	} else if i := strings.Index(authority, ":"); i >= 0 {
		host, port = authority[:i], authority[i:]
	}
	if !loopbackHosts[host] {
		return "", false
	}
	if port != "" {
		p := port[1:]
		if port[0] != ':' || p == "" || len(p) > 5 {
			return "", false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || p[0] == '+' || p[0] == '-' {
			return "", false
		}
	}
	return pre + host + tail, true
}
