package flusstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ClientProxies makes a started cluster open a third listener, named CLIENT
// (plaintext), on the coordinator and every tablet server, and puts a TCP
// proxy run by this test process in front of each tablet server's: the
// servers advertise the proxies' addresses on CLIENT. A client bootstrapped
// on [Cluster.ClientBootstrap] reaches each tablet server through its proxy,
// which [Cluster.Partition] can cut, while the servers keep talking among
// themselves on the FLUSS listener: a network partition between that client
// and one server that the cluster does not notice.
func ClientProxies() Option { return func(o *options) { o.clientProxies = true } }

// ClientBootstrap returns the coordinator's CLIENT address, or "" when the
// cluster was started without [ClientProxies].
func (c *Cluster) ClientBootstrap() string { return c.clientBootstrap }

// Partition cuts tablet server id off the clients of its CLIENT listener:
// bytes stop flowing on the proxy's open connections either way, and new
// connections are accepted but reach nothing, as when a network drops the
// packets (no reset, no refusal). [Cluster.Heal] lets them through again.
func (c *Cluster) Partition(id int32) error {
	p, err := c.proxy(id)
	if err != nil {
		return err
	}
	p.cut()
	return nil
}

// Heal ends a [Cluster.Partition] of tablet server id: what was held flows
// on, and new connections are forwarded.
func (c *Cluster) Heal(id int32) error {
	p, err := c.proxy(id)
	if err != nil {
		return err
	}
	p.heal()
	return nil
}

func (c *Cluster) proxy(id int32) (*clientProxy, error) {
	if int(id) < 0 || int(id) >= len(c.proxies) {
		return nil, fmt.Errorf("cluster %s has no client proxy for tablet server %d (started with ClientProxies: %v)",
			c.name, id, len(c.proxies) > 0)
	}
	return c.proxies[id], nil
}

// clientProxy forwards the connections to one tablet server's advertised
// CLIENT address to the port the server is bound to now (it changes when
// the server restarts), through a gate that a partition closes.
type clientProxy struct {
	ln     net.Listener
	target func(context.Context) (string, error)

	mu    sync.Mutex
	open  chan struct{} // closed while forwarding; a new, open one while cut
	conns map[net.Conn]struct{}
	done  chan struct{} // closed by close
	wg    sync.WaitGroup
}

func newClientProxy(ln net.Listener, target func(context.Context) (string, error)) *clientProxy {
	open := make(chan struct{})
	close(open)
	p := &clientProxy{ln: ln, target: target, open: open, conns: make(map[net.Conn]struct{}), done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *clientProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *clientProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already cut
	}
}

func (p *clientProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// pass waits until the proxy forwards; false once it is closed.
func (p *clientProxy) pass() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.done:
		return false
	}
}

func (p *clientProxy) serve() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(down) {
			return
		}
		p.wg.Add(1)
		go p.forward(down)
	}
}

// track records c so that close ends it; false (and c closed) once the
// proxy is closed.
func (p *clientProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *clientProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *clientProxy) forward(down net.Conn) {
	defer p.wg.Done()
	defer p.untrack(down)
	if !p.pass() { // a connection made during a partition waits for the heal
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	addr, err := p.target(ctx)
	cancel()
	if err != nil {
		return
	}
	up, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.copy(up, down)
	}()
	p.copy(down, up)
	wg.Wait()
}

// copy moves bytes from src to dst while the gate is open, and closes both
// ends when either side is done, which ends the other direction too.
func (p *clientProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close stops accepting, ends every forwarded connection and waits for the
// proxy's goroutines.
func (p *clientProxy) close() error {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return nil
	default:
	}
	close(p.done)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// listenClientProxies opens n listeners on 127.0.0.1 for the proxies, whose
// ports the servers advertise.
func listenClientProxies(n int) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("listen for a client proxy: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// clientPortsArg renders the listeners' ports as the script's --client-ports.
func clientPortsArg(lns []net.Listener) string {
	ports := make([]string, len(lns))
	for i, ln := range lns {
		ports[i] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	return strings.Join(ports, ",")
}

// tabletClientAddr asks the script for the port tablet server id's CLIENT
// listener is bound to now.
func (c *Cluster) tabletClientAddr(ctx context.Context, id int) (string, error) {
	out, err := c.run(ctx, c.script, "client-port", "-s", c.name, strconv.Itoa(id))
	if err != nil {
		return "", fmt.Errorf("client-port %d of cluster %s: %w", id, c.name, err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || port <= 0 || port > 65535 {
		return "", fmt.Errorf("client-port %d of cluster %s printed %q", id, c.name, out)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// closeProxies closes the cluster's client proxies.
func (c *Cluster) closeProxies() error {
	var errs []error
	for _, p := range c.proxies {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}
