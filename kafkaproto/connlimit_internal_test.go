package kafkaproto

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewConnectionLimitsRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		perIP     int
		overrides map[string]int
		err       string
	}{
		{"negative limit", -1, nil, "connections per ip -1 is negative"},
		{"not an address", 1, map[string]int{"gw.example.com": 1}, `connections per ip override: "gw.example.com" is not an IP address`},
		{"a network", 1, map[string]int{"10.0.0.0/8": 1}, `"10.0.0.0/8" is not an IP address`},
		{"zone", 1, map[string]int{"fe80::1%eth0": 1}, `"fe80::1%eth0": an IPv6 zone is not allowed`},
		{"negative override", 1, map[string]int{"10.0.0.1": -2}, "connections per ip override 10.0.0.1: -2 is negative"},
		{"same address twice", 1, map[string]int{"10.0.0.1": 1, "::ffff:10.0.0.1": 2}, "address 10.0.0.1 is given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewConnectionLimits(tc.perIP, tc.overrides)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestConnectionLimitsNil: a nil *ConnectionLimits (no limits configured)
// and connections without an IP address are never limited.
func TestConnectionLimitsNil(t *testing.T) {
	t.Parallel()
	var none *ConnectionLimits
	ip := netip.MustParseAddr("10.0.0.1")
	ok, limit := none.acquire(ip)
	assert.True(t, ok)
	assert.Equal(t, -1, limit)
	none.release(ip)

	l, err := NewConnectionLimits(0, map[string]int{"10.0.0.1": 0})
	require.NoError(t, err)
	ok, _ = l.acquire(netip.Addr{})
	assert.True(t, ok, "no address, no limit")
	ok, limit = l.acquire(ip)
	assert.False(t, ok)
	assert.Zero(t, limit)
	ok, limit = l.acquire(netip.MustParseAddr("10.0.0.2"))
	assert.True(t, ok, "no per-ip limit, and no override for this one")
	assert.Equal(t, -1, limit)
}

// TestConnectionLimitsConcurrent: addresses taking and giving back slots
// at once never hold more than their limit, and every slot comes back.
func TestConnectionLimitsConcurrent(t *testing.T) {
	t.Parallel()
	l, err := NewConnectionLimits(3, map[string]int{"10.0.0.2": 5})
	require.NoError(t, err)
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}
	limits := []int32{3, 5}
	var held [2]atomic.Int32
	var over atomic.Bool
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			i := g % 2
			for range 500 {
				if ok, _ := l.acquire(ips[i]); !ok {
					continue
				}
				if held[i].Add(1) > limits[i] {
					over.Store(true)
				}
				held[i].Add(-1)
				l.release(ips[i])
			}
		})
	}
	wg.Wait()
	assert.False(t, over.Load(), "an address held more than its limit")
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Empty(t, l.counts, "every slot given back")
}
