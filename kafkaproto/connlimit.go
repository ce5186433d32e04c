package kafkaproto

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// ConnectionLimits bounds the connections one client address holds over
// every listener that shares it (Kafka's max.connections.per.ip and
// max.connections.per.ip.overrides): a connection past its address's limit
// is closed as soon as it is accepted. Its methods are safe for concurrent
// use, and a nil *ConnectionLimits limits nothing.
type ConnectionLimits struct {
	// perIP and overrides are fixed at construction, so reading them
	// needs no lock.
	perIP     int                // 0: no limit
	overrides map[netip.Addr]int // per address, in place of perIP

	mu     sync.Mutex // guards counts
	counts map[netip.Addr]int
}

// NewConnectionLimits limits every client address to perIP connections
// (0: no limit), except those in overrides, keyed by IP address (IPv4 or
// IPv6, without a zone), whose value replaces perIP (0 there refuses every
// connection of that address, as in Kafka). An IPv4-mapped IPv6 address
// is its IPv4 address: two keys naming one address are an error. With
// nothing to limit it returns nil, which counts nothing.
func NewConnectionLimits(perIP int, overrides map[string]int) (*ConnectionLimits, error) {
	if perIP < 0 {
		return nil, fmt.Errorf("connections per ip %d is negative", perIP)
	}
	if perIP == 0 && len(overrides) == 0 {
		return nil, nil
	}
	l := &ConnectionLimits{perIP: perIP, overrides: make(map[netip.Addr]int, len(overrides)), counts: map[netip.Addr]int{}}
	for s, n := range overrides {
		ip, err := ParseOverrideIP(s)
		if err != nil {
			return nil, fmt.Errorf("connections per ip override: %w", err)
		}
		if n < 0 {
			return nil, fmt.Errorf("connections per ip override %s: %d is negative", s, n)
		}
		if _, dup := l.overrides[ip]; dup {
			return nil, fmt.Errorf("connections per ip override %s: address %s is given twice", s, ip)
		}
		l.overrides[ip] = n
	}
	return l, nil
}

// ParseOverrideIP parses a key of the per-address overrides: an IP address
// without a zone, IPv4-mapped IPv6 addresses taken as their IPv4 address
// (as clients' addresses are).
func ParseOverrideIP(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address: %w", s, err)
	}
	if ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q: an IPv6 zone is not allowed", s)
	}
	return ip.Unmap(), nil
}

// limit is the connections ip may hold; -1 for no limit.
func (l *ConnectionLimits) limit(ip netip.Addr) int {
	if n, ok := l.overrides[ip]; ok {
		return n
	}
	if l.perIP == 0 {
		return -1
	}
	return l.perIP
}

// acquire takes a connection slot of ip, or reports the limit it is at.
// An invalid ip (a connection without an IP address) is not limited.
func (l *ConnectionLimits) acquire(ip netip.Addr) (ok bool, limit int) {
	if l == nil || !ip.IsValid() {
		return true, -1
	}
	limit = l.limit(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	if limit >= 0 && l.counts[ip] >= limit {
		return false, limit
	}
	l.counts[ip]++
	return true, limit
}

// release gives back a slot acquire took.
func (l *ConnectionLimits) release(ip netip.Addr) {
	if l == nil || !ip.IsValid() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Deleted at zero so that the map holds only addresses connected now.
	if l.counts[ip]--; l.counts[ip] <= 0 {
		delete(l.counts, ip)
	}
}

// remoteIP is the client address of nc, invalid when it has none (a pipe
// in tests). It is unmapped and zoneless, as override keys are.
func remoteIP(nc net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(nc.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}
