package flusstest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers every line with the same line until the test ends.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln
}

func startProxy(t *testing.T, target string) *clientProxy {
	t.Helper()
	lns, err := listenClientProxies(1)
	require.NoError(t, err)
	p := newClientProxy(lns[0], func(context.Context) (string, error) { return target, nil })
	t.Cleanup(func() { assert.NoError(t, p.close()) })
	return p
}

// roundTrip writes line and reads it back within wait; ok false on a timeout.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, bool) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(wait)))
	_, err := io.WriteString(c, line+"\n")
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	if os.IsTimeout(err) {
		return "", false
	}
	require.NoError(t, err)
	return got[:len(got)-1], true
}

// TestClientProxyPartition: the proxy forwards, a cut holds the bytes of
// open connections and leaves new ones unanswered, and a heal delivers
// what was held and forwards new connections again.
func TestClientProxyPartition(t *testing.T) {
	p := startProxy(t, echoServer(t).Addr().String())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port()))

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	got, ok := roundTrip(t, c, r, "before", 10*time.Second)
	require.True(t, ok, "forwarded before the partition")
	assert.Equal(t, "before", got)

	p.cut()
	_, ok = roundTrip(t, c, r, "during", 300*time.Millisecond)
	assert.False(t, ok, "an open connection gets no answer during the partition")
	fresh, err := net.Dial("tcp", addr)
	require.NoError(t, err, "a new connection is accepted, as a dropped packet would not refuse it")
	defer fresh.Close()
	fr := bufio.NewReader(fresh)
	_, ok = roundTrip(t, fresh, fr, "new", 300*time.Millisecond)
	assert.False(t, ok, "a new connection gets no answer during the partition")

	p.heal()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	held, err := r.ReadString('\n')
	require.NoError(t, err, "what was held arrives after the heal")
	assert.Equal(t, "during\n", held)
	require.NoError(t, fresh.SetDeadline(time.Now().Add(10*time.Second)))
	held, err = fr.ReadString('\n')
	require.NoError(t, err, "the connection made during the partition is forwarded after the heal")
	assert.Equal(t, "new\n", held)
	got, ok = roundTrip(t, c, r, "after", 10*time.Second)
	require.True(t, ok, "forwarded after the heal")
	assert.Equal(t, "after", got)
}

// TestClientProxyCloseEndsConnections: closing the proxy ends the
// connections it forwards, also those held by a partition.
func TestClientProxyCloseEndsConnections(t *testing.T) {
	lns, err := listenClientProxies(1)
	require.NoError(t, err)
	target := echoServer(t).Addr().String()
	p := newClientProxy(lns[0], func(context.Context) (string, error) { return target, nil })
	c, err := net.Dial("tcp", lns[0].Addr().String())
	require.NoError(t, err)
	defer c.Close()
	p.cut()
	require.NoError(t, p.close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	// A close or a reset (the proxy may close with bytes unread): either
	// ends the connection; a timeout would not.
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "the client sees the connection end: %v", err)
}

// TestStartClusterClientProxies: the proxies listen before the start, the
// script gets their ports as --client-ports, each proxy forwards to the
// port `client-port ID` names at the time of a connection, Partition and
// Heal act on one server's proxy, and Stop closes them.
func TestStartClusterClientProxies(t *testing.T) {
	backends := []net.Listener{echoServer(t), echoServer(t)}
	var clientPorts string
	fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
		"start": func(args []string) ([]byte, error) {
			clientPorts = args[len(args)-1]
			return []byte("FLUSS_BOOTSTRAP=127.0.0.1:4567\nFLUSS_CLIENT_BOOTSTRAP=127.0.0.1:4569\n"), nil
		},
		"client-port": func(args []string) ([]byte, error) {
			id, err := strconv.Atoi(args[len(args)-1])
			if err != nil {
				return nil, err
			}
			return []byte(strconv.Itoa(backends[id].Addr().(*net.TCPAddr).Port) + "\n"), nil
		},
		"stop": func([]string) ([]byte, error) { return nil, nil },
	}}
	c, err := startCluster(context.Background(), fake.run, "/x/fluss-local.sh", "c", 42, buildOptions([]Option{TabletServers(2), ClientProxies()}))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:4569", c.ClientBootstrap())
	require.Len(t, c.proxies, 2)
	assert.Equal(t, []string{"start -s c -n 2 -o 42 --client-ports " + clientPorts}, fake.commands())
	assert.Equal(t, strconv.Itoa(c.proxies[0].port())+","+strconv.Itoa(c.proxies[1].port()), clientPorts)

	dial := func(id int) (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.proxies[id].port())))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		return conn, bufio.NewReader(conn)
	}
	c0, r0 := dial(0)
	c1, r1 := dial(1)
	require.NoError(t, c.Partition(1))
	_, ok := roundTrip(t, c1, r1, "cut", 300*time.Millisecond)
	assert.False(t, ok, "server 1 is cut off")
	got, ok := roundTrip(t, c0, r0, "zero", 10*time.Second)
	assert.True(t, ok, "server 0 is not")
	assert.Equal(t, "zero", got)
	require.NoError(t, c.Heal(1))
	require.NoError(t, c1.SetDeadline(time.Now().Add(10*time.Second)))
	held, err := r1.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "cut\n", held)
	assert.Contains(t, fake.commands(), "client-port -s c 1")
	assert.ErrorContains(t, c.Partition(2), "no client proxy for tablet server 2")

	require.NoError(t, c.Stop(context.Background()))
	require.NoError(t, c0.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = r0.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "Stop closes the proxies' connections")
}
