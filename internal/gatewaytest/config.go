package gatewaytest

import (
	"fmt"
	"net"
	"strings"
)

// Config is what a caller varies in the generated configuration: one
// plaintext listener and the admin server on loopback, text logging, and
// the given routes. An empty field leaves its key out (the gateway's
// default applies).
type Config struct {
	Bootstrap string // fluss.bootstrap, comma-separated host:port
	Routes    string // YAML of the routes list, indented by two spaces per level, no "routes:" line

	RequestTimeout string // fluss.request_timeout
	DialTimeout    string // fluss.dial_timeout

	Linger          string // writer.linger
	BatchSize       string // writer.batch_size
	BufferMemory    string // writer.buffer_memory
	DeliveryTimeout string // writer.delivery_timeout

	MaxMessageBytes string // kafka.max_message_bytes
	// TransactionMaxBytes is kafka.transaction_max_bytes; default the
	// gateway's.
	TransactionMaxBytes string
	// MaxConnectionsPerIP is kafka.max_connections_per_ip.
	MaxConnectionsPerIP string
	// Quotas is kafka.quotas as a YAML flow mapping, e.g.
	// "{principals: {'User:alice': {producer_byte_rate: 65536}}}".
	Quotas string

	LogLevel string // logging.level
	Deadline string // shutdown.deadline

	SchemaRegistry string // schema_registry.urls (one URL); "" for none

	// ListenerSASL is the listener's sasl value as a YAML flow mapping,
	// e.g. "{mechanisms: [PLAIN], users: [{username: u, password: p}]}".
	ListenerSASL string
	// ListenerTLS is the listener's tls value as a YAML flow mapping,
	// e.g. "{cert_file: s.pem, key_file: s.key, client_ca_file: ca.pem}".
	ListenerTLS string
	// ACLs is the acls value as a YAML flow sequence.
	ACLs string

	// Pprof turns on admin.pprof (/debug/pprof/ on the admin address).
	Pprof bool

	// Env is added to the process's environment (NAME=value), e.g. a
	// GOMEMLIMIT standing for a container's memory limit.
	Env []string
}

// YAML renders the configuration with the given loopback ports.
func (c Config) YAML(kafkaPort, adminPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listeners:\n  - name: plain\n    bind: 127.0.0.1:%d\n    advertised: 127.0.0.1:%d\n", kafkaPort, kafkaPort)
	if c.ListenerSASL != "" {
		fmt.Fprintf(&b, "    sasl: %s\n", c.ListenerSASL)
	}
	if c.ListenerTLS != "" {
		fmt.Fprintf(&b, "    tls: %s\n", c.ListenerTLS)
	}
	fmt.Fprintf(&b, "fluss:\n  bootstrap: [%s]\n", c.Bootstrap)
	section(&b, "", "request_timeout", c.RequestTimeout, "dial_timeout", c.DialTimeout)
	section(&b, "kafka", "max_message_bytes", c.MaxMessageBytes, "transaction_max_bytes", c.TransactionMaxBytes,
		"max_connections_per_ip", c.MaxConnectionsPerIP, "quotas", c.Quotas)
	section(&b, "writer", "linger", c.Linger, "batch_size", c.BatchSize, "buffer_memory", c.BufferMemory,
		"delivery_timeout", c.DeliveryTimeout)
	if c.SchemaRegistry != "" {
		fmt.Fprintf(&b, "schema_registry:\n  urls: [%q]\n  request_timeout: 10s\n", c.SchemaRegistry)
	}
	fmt.Fprintf(&b, "admin:\n  address: 127.0.0.1:%d\n", adminPort)
	if c.Pprof {
		b.WriteString("  pprof: true\n")
	}
	b.WriteString("logging:\n")
	section(&b, "", "level", c.LogLevel)
	b.WriteString("  format: text\n")
	section(&b, "shutdown", "deadline", c.Deadline)
	if c.ACLs != "" {
		fmt.Fprintf(&b, "acls: %s\n", c.ACLs)
	}
	b.WriteString("routes:\n" + c.Routes)
	return b.String()
}

// section writes the non-empty key/value pairs under name (no header line
// when name is empty: the keys continue the section above).
func section(b *strings.Builder, name string, kv ...string) {
	header := name != ""
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if header {
			b.WriteString(name + ":\n")
			header = false
		}
		fmt.Fprintf(b, "  %s: %s\n", kv[i], kv[i+1])
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
