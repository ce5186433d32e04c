package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/internal/gatewaytest"
	"github.com/fluss-kafka/gateway/internal/registrytest"
)

// The Apicurio serde tests run Apicurio's own Java Avro serializer
// (AvroKafkaSerializer inside a KafkaProducer, e2e/testdata/apicurio)
// against the real Apicurio registry and the gateway. Its jars come from
// Maven Central once (mvn dependency:copy-dependencies, offline first) and,
// with the compiled producer, are kept in .cache/apicurio-serde/VERSION-HASH,
// HASH covering the pom and the Java source; a warm run starts no Maven.

// apicurioSerde is one Apicurio Avro serde release.
type apicurioSerde struct {
	artifact, version string
	build             func() (apicurioProducer, error) // once per test binary
}

// apicurioProducer is a built ApicurioProduce: the java to run it and its class path.
type apicurioProducer struct{ java, classpath string }

// errNoJavaTools: mvn or javac is missing (the tests fail and say so).
var errNoJavaTools = errors.New("no Java build tools")

var (
	// apicurioSerde3 is 3.1.7, the newest 3.x Avro serde on Maven Central
	// (3.3.x is not served for avro): default framing 00 + 4-byte contentId,
	// or with headers.enabled the apicurio.value.contentId header.
	apicurioSerde3 = newApicurioSerde("apicurio-registry-avro-serde-kafka", "3.1.7")
	// apicurioSerde2 is the last 2.x: apicurio.value.globalId header by
	// default, against the registry's v2 API.
	apicurioSerde2 = newApicurioSerde("apicurio-registry-serdes-avro-serde", "2.6.13.Final")
)

func newApicurioSerde(artifact, version string) *apicurioSerde {
	s := &apicurioSerde{artifact: artifact, version: version}
	s.build = sync.OnceValues(s.buildProducer)
	return s
}

// producer returns the built producer. Without mvn or javac the test fails
// (the project's tests never skip for want of a real part).
func (s *apicurioSerde) producer(t *testing.T) apicurioProducer {
	t.Helper()
	start := time.Now()
	p, err := s.build()
	require.NoError(t, err, "build the Apicurio %s producer", s.version)
	if d := time.Since(start); d > time.Second {
		t.Logf("Apicurio serde %s producer ready in %v", s.version, d.Round(10*time.Millisecond))
	}
	return p
}

func (s *apicurioSerde) buildProducer() (apicurioProducer, error) {
	root, err := gatewaytest.ModuleRoot()
	if err != nil {
		return apicurioProducer{}, err
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return apicurioProducer{}, fmt.Errorf("%w: mvn not installed", errNoJavaTools)
	}
	// The Java the registry runs on (Java 21+: REGISTRY_JAVA_HOME, JAVA_HOME,
	// /usr/lib/jvm, PATH); the serdes need 17+.
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "scripts", "registry-local.sh"), "java")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return apicurioProducer{}, fmt.Errorf("registry-local.sh java: %w: %s", err, stderr.String())
	}
	java := strings.TrimSpace(string(out))
	javac := filepath.Join(filepath.Dir(java), "javac")
	if _, err := os.Stat(javac); err != nil {
		if javac, err = exec.LookPath("javac"); err != nil {
			return apicurioProducer{}, fmt.Errorf("%w: no javac next to %s or in PATH", errNoJavaTools, java)
		}
	}

	src := filepath.Join(root, "e2e", "testdata", "apicurio")
	h := sha256.New()
	fmt.Fprintf(h, "%s:%s\n", s.artifact, s.version)
	for _, f := range []string{"pom.xml", "ApicurioProduce.java"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return apicurioProducer{}, err
		}
		h.Write(b)
	}
	cache := filepath.Join(root, ".cache", "apicurio-serde")
	dir := filepath.Join(cache, s.version+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	p := apicurioProducer{java: java,
		classpath: filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*")}
	if _, err := os.Stat(filepath.Join(dir, "classes", "ApicurioProduce.class")); err == nil {
		return p, nil
	}

	// Build into a fresh directory and rename it into place, so that a
	// concurrent or interrupted build never leaves a half-filled one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return apicurioProducer{}, err
	}
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return apicurioProducer{}, err
	}
	defer os.RemoveAll(tmp)
	mvnArgs := []string{"-q", "-B", "-f", filepath.Join(src, "pom.xml"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
		"-DoutputDirectory=" + filepath.Join(tmp, "lib"),
		"-Dserde.artifact=" + s.artifact, "-Dserde.version=" + s.version}
	// Offline first: once the jars are in the local Maven repository no
	// network is needed (and a slow one is not waited for).
	if _, err := exec.CommandContext(ctx, mvn, append([]string{"-o"}, mvnArgs...)...).CombinedOutput(); err != nil {
		if out, err := exec.CommandContext(ctx, mvn, mvnArgs...).CombinedOutput(); err != nil {
			return apicurioProducer{}, fmt.Errorf("mvn copy-dependencies of io.apicurio:%s:%s: %w: %s", s.artifact, s.version, err, out)
		}
	}
	if out, err := exec.CommandContext(ctx, javac, "--release", "17", "-nowarn", "-d", filepath.Join(tmp, "classes"),
		"-cp", filepath.Join(tmp, "lib", "*"), filepath.Join(src, "ApicurioProduce.java")).CombinedOutput(); err != nil {
		return apicurioProducer{}, fmt.Errorf("javac ApicurioProduce.java: %w: %s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "classes", "ApicurioProduce.class")); serr != nil {
			return apicurioProducer{}, err
		}
		// another test binary built it first
	}
	return p, nil
}

// apicurioSent is one line of ApicurioProduce's output.
type apicurioSent struct {
	Index     int               `json:"index"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Value     string            `json:"value"`   // hex
	Headers   map[string]string `json:"headers"` // hex
	Error     string            `json:"error"`
}

// produce serializes records (Avro JSON encoding of schema) with the serde
// configured by config (KEY=VALUE) and produces them to the gateway
// (acks=all, idempotent); every record must be acknowledged.
func (p apicurioProducer) produce(t *testing.T, bootstrap, topic, schema string, records []map[string]any, config ...string) []apicurioSent {
	t.Helper()
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "schema.avsc")
	require.NoError(t, os.WriteFile(schemaFile, []byte(schema), 0o644))
	var lines bytes.Buffer
	for _, r := range records {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		lines.Write(append(b, '\n'))
	}
	recordsFile := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(recordsFile, lines.Bytes(), 0o644))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", p.classpath,
		"ApicurioProduce", bootstrap, topic, schemaFile, recordsFile}, config...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, p.java, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("ApicurioProduce: %d records in %v", len(records), time.Since(start).Round(10*time.Millisecond))
	var sent []apicurioSent
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s apicurioSent
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s), "line %q", sc.Text())
		assert.Empty(t, s.Error, "record %d", s.Index)
		sent = append(sent, s)
	}
	require.NoError(t, runErr, "ApicurioProduce: %s", stderr.String())
	require.Len(t, sent, len(records), "stderr: %s", stderr.String())
	t.Logf("record 0: value %s headers %v", sent[0].Value, sent[0].Headers)
	return sent
}

// value and header decode the hex fields.
func (s apicurioSent) value(t *testing.T) []byte {
	t.Helper()
	b, err := hex.DecodeString(s.Value)
	require.NoError(t, err)
	return b
}

func (s apicurioSent) header(t *testing.T, name string) []byte {
	t.Helper()
	v, ok := s.Headers[name]
	require.True(t, ok, "record %d has no header %s (headers %v)", s.Index, name, s.Headers)
	b, err := hex.DecodeString(v)
	require.NoError(t, err)
	return b
}

const apicurioEventAvro = `{
  "type": "record", "name": "Event", "namespace": "e2e.apicurio",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CREATED", "UPDATED", "DELETED"]}}
  ]
}`

const apicurioEvents = 10

// apicurioEvent is event i: its fields, its Avro JSON encoding (what
// ApicurioProduce reads) and its Avro binary encoding (what the serializer
// must write after its framing).
func apicurioEvent(t *testing.T, i int) (id int64, name string, note *string, ts int64, kind string, avroJSON map[string]any, body []byte) {
	t.Helper()
	id = 1<<40 + int64(i)
	name = fmt.Sprintf("évènement-%d", i)
	if i%3 != 0 {
		n := fmt.Sprintf("note %d", i)
		note = &n
	}
	ts = 1_704_067_200_000 + int64(i)*60_000 + int64(i)
	kind = []string{"CREATED", "UPDATED", "DELETED"}[i%3]
	avroJSON = map[string]any{"id": id, "name": name, "note": nil, "ts": ts, "kind": kind}
	native := map[string]any{"id": id, "name": name, "note": nil, "ts": time.UnixMilli(ts).UTC(), "kind": kind}
	if note != nil {
		avroJSON["note"] = map[string]any{"string": *note}
		native["note"] = *note
	}
	body, err := avro.Marshal(avro.MustParse(apicurioEventAvro), native)
	require.NoError(t, err)
	return id, name, note, ts, kind, avroJSON, body
}

// apicurioRun creates a table, starts the gateway with a value route of the
// given framing ("" for the default), produces the events with serde and
// config (the registry's native base URL for apiVersion v2 or v3 is passed
// to config), checks that every row read back with pyfluss matches, and
// returns what was sent with the events' Avro bodies and the native base.
func apicurioRun(t *testing.T, serde *apicurioSerde, framing, apiVersion string, config func(native string) []string) ([]apicurioSent, [][]byte, string) {
	t.Helper()
	p := serde.producer(t)
	e := newEnv(t)
	registry := registrytest.URL(t)
	native := strings.TrimSuffix(registry, "/apis/ccompat/v7") + "/apis/registry/" + apiVersion
	events := e.createTable(t, table{name: "apicurio_events", buckets: 2, columns: []fluss.Column{
		col("id", fluss.BigInt()), col("name", fluss.String()), col("note", fluss.String()),
		col("ts", fluss.TimestampLTZ(3)), col("kind", fluss.String()),
	}})
	topic := uniqueName("apicurio-events")
	route := "{format: avro}"
	if framing != "" {
		route = fmt.Sprintf("{format: avro, framing: %s}", framing)
	}
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Registry: registry, Routes: fmt.Sprintf(`
  - topic: %s
    table: %s
    value: %s
`, topic, events, route)})

	var recs []map[string]any
	var bodies [][]byte
	for i := range apicurioEvents {
		_, _, _, _, _, j, body := apicurioEvent(t, i)
		recs = append(recs, j)
		bodies = append(bodies, body)
	}
	sent := p.produce(t, g.KafkaAddr, topic, apicurioEventAvro, recs, config(native)...)

	rows := e.scanLog(t, events)
	require.Len(t, rows, apicurioEvents)
	byID := map[int64]map[string]json.RawMessage{}
	for _, r := range rows {
		byID[num(t, r.Row, "id")] = r.Row
	}
	for i := range apicurioEvents {
		id, name, note, ts, kind, _, _ := apicurioEvent(t, i)
		row := byID[id]
		require.NotNil(t, row, "event %d", i)
		assert.Equal(t, name, str(t, row, "name"), "event %d", i)
		if note == nil {
			assert.True(t, isNull(row, "note"), "event %d note", i)
		} else {
			assert.Equal(t, *note, str(t, row, "note"), "event %d", i)
		}
		assert.Equal(t, ltz(ts), str(t, row, "ts"), "event %d", i)
		assert.Equal(t, kind, str(t, row, "kind"), "event %d", i)
	}
	return sent, bodies, native
}

// requireApicurioSchema requires Apicurio's native v3 API to give the Event
// schema for a contentId or globalId (kind "contentIds" or "globalIds").
func requireApicurioSchema(t *testing.T, nativeV3, kind string, id uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/ids/%s/%d", nativeV3, kind, id), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %d: %s", kind, id, b)
	var s struct{ Name, Namespace string }
	require.NoError(t, json.Unmarshal(b, &s), "%s %d: %s", kind, id, b)
	assert.Equal(t, "e2e.apicurio.Event", s.Namespace+"."+s.Name, "%s %d", kind, id)
}

// TestApicurioJavaSerde3ContentIDPrefix: Apicurio's Java AvroKafkaSerializer
// 3.1.7 with its defaults frames values as 00 + 4-byte contentId (the shape
// of Confluent's framing, and Apicurio's ccompat ids are contentIds), so the
// default route ({format: avro}, framing confluent) decodes them; every
// field lands, read back with pyfluss.
func TestApicurioJavaSerde3ContentIDPrefix(t *testing.T) {
	sent, bodies, native := apicurioRun(t, apicurioSerde3, "", "v3", func(native string) []string {
		return []string{"apicurio.registry.url=" + native, "apicurio.registry.auto-register=true"}
	})
	contentID := uint32(0)
	for _, s := range sent {
		v := s.value(t)
		require.Greater(t, len(v), 5, "record %d", s.Index)
		assert.Equal(t, byte(0), v[0], "record %d: magic byte", s.Index)
		id := binary.BigEndian.Uint32(v[1:5])
		if contentID == 0 {
			contentID = id
		}
		assert.Equal(t, contentID, id, "record %d: one schema", s.Index)
		assert.Equal(t, bodies[s.Index], v[5:], "record %d: the Avro datum follows the prefix", s.Index)
		for h := range s.Headers {
			assert.False(t, strings.HasPrefix(h, "apicurio."), "record %d: no Apicurio header in prefix mode, got %s", s.Index, h)
		}
	}
	requireApicurioSchema(t, native, "contentIds", uint64(contentID))
}

// TestApicurioJavaSerde3ContentIDHeader: with
// apicurio.registry.headers.enabled=true, 3.1.7 writes the bare Avro datum
// and the contentId in header apicurio.value.contentId (8-byte big-endian);
// the route's framing apicurio makes the gateway resolve it through
// Apicurio's native v3 API, derived from the ccompat URL.
func TestApicurioJavaSerde3ContentIDHeader(t *testing.T) {
	sent, bodies, native := apicurioRun(t, apicurioSerde3, "apicurio", "v3", func(native string) []string {
		return []string{"apicurio.registry.url=" + native, "apicurio.registry.auto-register=true",
			"apicurio.registry.headers.enabled=true"}
	})
	var contentID uint64
	for _, s := range sent {
		h := s.header(t, "apicurio.value.contentId")
		require.Len(t, h, 8, "record %d: contentId header", s.Index)
		id := binary.BigEndian.Uint64(h)
		if contentID == 0 {
			contentID = id
		}
		assert.Equal(t, contentID, id, "record %d: one schema", s.Index)
		assert.Equal(t, bodies[s.Index], s.value(t), "record %d: the value is the bare Avro datum", s.Index)
		assert.NotContains(t, s.Headers, "apicurio.value.globalId", "record %d", s.Index)
	}
	requireApicurioSchema(t, native, "contentIds", contentID)
}

// TestApicurioJavaSerde2GlobalIDHeader: Apicurio's 2.x serde (2.6.13.Final)
// registers through the registry's v2 API and, by default, writes the bare
// Avro datum with the artifact version's globalId in header
// apicurio.value.globalId; globalIds are the same in v2 and v3, so the
// gateway (v3 API only) resolves it with framing apicurio.
func TestApicurioJavaSerde2GlobalIDHeader(t *testing.T) {
	sent, bodies, native := apicurioRun(t, apicurioSerde2, "apicurio", "v2", func(native string) []string {
		return []string{"apicurio.registry.url=" + native, "apicurio.registry.auto-register=true"}
	})
	var globalID uint64
	for _, s := range sent {
		h := s.header(t, "apicurio.value.globalId")
		require.Len(t, h, 8, "record %d: globalId header", s.Index)
		id := binary.BigEndian.Uint64(h)
		if globalID == 0 {
			globalID = id
		}
		assert.Equal(t, globalID, id, "record %d: one schema", s.Index)
		assert.Equal(t, bodies[s.Index], s.value(t), "record %d: the value is the bare Avro datum", s.Index)
	}
	requireApicurioSchema(t, strings.TrimSuffix(native, "/v2")+"/v3", "globalIds", globalID)
}
