package registrytest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenSocket is a listening TCP socket from /proc/net/tcp{,6}.
type listenSocket struct {
	ip    net.IP
	port  int
	inode string
}

// listeningSockets reads every listening TCP socket of this network namespace.
func listeningSockets() ([]listenSocket, error) {
	var out []listenSocket
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		socks, err := readProcNet(f)
		if err != nil {
			return nil, err
		}
		out = append(out, socks...)
	}
	return out, nil
}

func readProcNet(path string) ([]listenSocket, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []listenSocket
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		ip, port, err := parseProcAddr(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, listenSocket{ip: ip, port: port, inode: fields[9]})
	}
	return out, sc.Err()
}

// parseProcAddr decodes "0100007F:1F90" (IPv4) or 32 hex digits:port (IPv6);
// the address is in 32-bit words of host (little-endian) byte order.
func parseProcAddr(s string) (net.IP, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("bad port in %q", s)
	}
	return net.IP(b), int(port), nil
}

// pidListeningOn finds the process holding a listening socket on port.
func pidListeningOn(socks []listenSocket, port int) (int, error) {
	inodes := map[string]bool{}
	for _, s := range socks {
		if s.port == port {
			inodes["socket:["+s.inode+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d", port)
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && inodes[link] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process of ours holds the socket listening on port %d", port)
}

// socketsOf returns the listening sockets among socks that pid holds.
func socketsOf(socks []listenSocket, pid int) []listenSocket {
	held := map[string]bool{}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil {
			held[link] = true
		}
	}
	var out []listenSocket
	for _, s := range socks {
		if held["socket:["+s.inode+"]"] {
			out = append(out, s)
		}
	}
	return out
}
