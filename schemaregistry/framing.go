package schemaregistry

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/sr"
)

// IDKind says which registry identifier a record carries.
type IDKind uint8

const (
	// ConfluentID is the int32 schema id of the Confluent REST API
	// (GET /schemas/ids/{id}). Apicurio's ccompat API answers it too: there
	// it is the contentId (apicurio.ccompat.legacy-id-mode.enabled=false, the
	// default), which is also what Apicurio 3.x serdes put in their default
	// 4-byte prefix.
	ConfluentID IDKind = iota + 1
	// GUID is the 16-byte schema GUID of Confluent Platform 8 header mode
	// (GET /schemas/guids/{guid}).
	GUID
	// GlobalID is an Apicurio artifact-version globalId (int64).
	GlobalID
	// ContentID is an Apicurio contentId (int64).
	ContentID
)

func (k IDKind) String() string {
	switch k {
	case ConfluentID:
		return "confluent-id"
	case GUID:
		return "guid"
	case GlobalID:
		return "apicurio-global-id"
	case ContentID:
		return "apicurio-content-id"
	}
	return "IDKind(" + strconv.Itoa(int(k)) + ")"
}

// Framing says where in the record the schema identifier was found.
type Framing uint8

const (
	// FramingConfluentPrefix: value = 00, 4-byte big-endian id, [message
	// indexes], payload.
	FramingConfluentPrefix Framing = iota + 1
	// FramingConfluentHeader: header __value_schema_id / __key_schema_id =
	// 01 + 16-byte GUID or 00 + 4-byte id, then [message indexes]; the
	// payload is the whole value.
	FramingConfluentHeader
	// FramingApicurioHeader: header apicurio.value.globalId or
	// apicurio.value.contentId (apicurio.key.* for keys) = 8-byte
	// big-endian long; the payload is the whole value.
	FramingApicurioHeader
	// FramingApicurioPrefix: value = 00, 8-byte (or, when configured,
	// 4-byte) big-endian Apicurio globalId or contentId, payload. Chosen only
	// by Options, never guessed.
	FramingApicurioPrefix
)

func (f Framing) String() string {
	switch f {
	case FramingConfluentPrefix:
		return "confluent-prefix"
	case FramingConfluentHeader:
		return "confluent-header"
	case FramingApicurioHeader:
		return "apicurio-header"
	case FramingApicurioPrefix:
		return "apicurio-prefix"
	}
	return "Framing(" + strconv.Itoa(int(f)) + ")"
}

// Header names read by ParseFraming.
const (
	ValueSchemaIDHeader = "__value_schema_id" // Confluent header mode, value
	KeySchemaIDHeader   = "__key_schema_id"   // Confluent header mode, key

	ApicurioValueGlobalIDHeader  = "apicurio.value.globalId"
	ApicurioKeyGlobalIDHeader    = "apicurio.key.globalId"
	ApicurioValueContentIDHeader = "apicurio.value.contentId"
	ApicurioKeyContentIDHeader   = "apicurio.key.contentId"
	ApicurioValueEncodingHeader  = "apicurio.value.encoding"
	ApicurioKeyEncodingHeader    = "apicurio.key.encoding"
)

// MaxMessageIndexes bounds the Protobuf message-index count; a larger count
// is ErrBadFraming. (Real message nesting is a handful deep.)
const MaxMessageIndexes = 100

// Options tell ParseFraming what a route's producers write where the bytes
// alone are ambiguous. The zero value parses a record value with the
// Confluent 4-byte prefix and no Protobuf extras (Avro, JSON Schema).
type Options struct {
	// Key selects the key headers (__key_schema_id, apicurio.key.*) instead
	// of the value headers.
	Key bool

	// MessageIndexes: a Protobuf message-index list follows the id — in the
	// header value for the Confluent header form, at the start of the
	// payload otherwise. Confluent's Protobuf serializers always write it;
	// Apicurio's only with apicurio.registry.serde.send-indexes=true.
	MessageIndexes bool

	// TypeRef: after the id (and message indexes, if any) the payload starts
	// with a length-delimited Apicurio Ref{name} message naming the Protobuf
	// message type; Apicurio's Protobuf serializer writes it by default
	// (apicurio.registry.serde.send-type-ref=true).
	TypeRef bool

	// PrefixKind is the kind of id in a magic-0 value prefix when no header
	// carries one: ConfluentID (the zero value means this), GlobalID or
	// ContentID. GlobalID/ContentID select FramingApicurioPrefix.
	PrefixKind IDKind

	// PrefixWidth is that id's width in bytes: 4 (the zero value means
	// this) or 8. Apicurio 2.x with headers disabled, and 3.x with
	// Legacy8ByteIdHandler, write 8 bytes; Confluent ids are always 4.
	PrefixWidth int
}

// Validate reports an Options value ParseFraming cannot use.
func (o Options) Validate() error {
	kind, width := o.prefix()
	switch {
	case kind != ConfluentID && kind != GlobalID && kind != ContentID:
		return fmt.Errorf("schemaregistry: Options.PrefixKind %v: want ConfluentID, GlobalID or ContentID", kind)
	case width != 4 && width != 8:
		return fmt.Errorf("schemaregistry: Options.PrefixWidth %d: want 4 or 8", width)
	case kind == ConfluentID && width != 4:
		return errors.New("schemaregistry: a Confluent id prefix is 4 bytes; an 8-byte prefix needs PrefixKind GlobalID or ContentID")
	}
	return nil
}

func (o Options) prefix() (IDKind, int) {
	kind, width := o.PrefixKind, o.PrefixWidth
	if kind == 0 {
		kind = ConfluentID
	}
	if width == 0 {
		width = 4
	}
	return kind, width
}

// Ref identifies the schema a record was written with.
type Ref struct {
	Kind    IDKind
	ID      int64  // ConfluentID, GlobalID, ContentID
	GUID    string // GUID kind: canonical lower-case 8-4-4-4-12 form
	Framing Framing

	// MessageIndexes is the Protobuf message-index path when
	// Options.MessageIndexes is set ([0] is the first top-level message;
	// [1, 0] the first message nested in the second); nil otherwise.
	MessageIndexes []int

	// MessageName is the Protobuf message name of the Apicurio type ref when
	// Options.TypeRef is set (Apicurio writes the descriptor's simple name,
	// not the fully qualified one).
	MessageName string

	// Encoding is the apicurio.*.encoding header of FramingApicurioHeader:
	// "BINARY", "JSON" (Avro JSON encoding) or "" when absent.
	Encoding string
}

func (r Ref) String() string {
	var b strings.Builder
	b.WriteString(r.Kind.String())
	b.WriteByte(' ')
	if r.Kind == GUID {
		b.WriteString(r.GUID)
	} else {
		b.WriteString(strconv.FormatInt(r.ID, 10))
	}
	if r.MessageIndexes != nil {
		fmt.Fprintf(&b, " indexes %v", r.MessageIndexes)
	}
	if r.MessageName != "" {
		fmt.Fprintf(&b, " message %q", r.MessageName)
	}
	fmt.Fprintf(&b, " (%s)", r.Framing)
	return b.String()
}

// ParseFraming finds the schema reference of one record's value (or key, with
// opts.Key) and returns it with the serialized payload, which is always a
// sub-slice of data (a suffix of it). header returns the record's header of
// that name — the last one, if repeated, as Kafka's lastHeader does; it may be
// nil when the record has no headers. Detection, in order:
//
//  1. Confluent header (__value_schema_id): 01 + GUID or 00 + 4-byte id, then
//     message indexes when opts.MessageIndexes; payload = data. An empty
//     header value is ignored, as Confluent's deserializer does.
//  2. Apicurio header: apicurio.value.globalId, else apicurio.value.contentId
//     (8-byte big-endian long); payload = data, after message indexes and
//     type ref when opts ask for them.
//  3. Value prefix: magic 00 + id of opts.PrefixKind/PrefixWidth, then
//     message indexes and type ref when opts ask for them.
//
// A null value (a tombstone) has no schema; callers handle it before calling.
// Malformed framing is an error wrapping ErrBadFraming; invalid opts give
// the Validate error. It never panics.
func ParseFraming(data []byte, header func(key string) ([]byte, bool), opts Options) (Ref, []byte, error) {
	if err := opts.Validate(); err != nil {
		return Ref{}, nil, err
	}
	if header != nil {
		if ref, payload, ok, err := parseConfluentHeader(data, header, opts); ok || err != nil {
			return ref, payload, err
		}
		if ref, payload, ok, err := parseApicurioHeader(data, header, opts); ok || err != nil {
			return ref, payload, err
		}
	}
	return parsePrefix(data, opts)
}

func badFraming(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFraming, fmt.Sprintf(format, args...))
}

func parseConfluentHeader(data []byte, header func(string) ([]byte, bool), opts Options) (Ref, []byte, bool, error) {
	name := ValueSchemaIDHeader
	if opts.Key {
		name = KeySchemaIDHeader
	}
	v, ok := header(name)
	if !ok || len(v) == 0 {
		return Ref{}, nil, false, nil
	}
	ref := Ref{Framing: FramingConfluentHeader}
	var rest []byte
	switch v[0] {
	case 0:
		if len(v) < 5 {
			return Ref{}, nil, true, badFraming("header %s: %d bytes, magic 0 needs 5 (00 + 4-byte id)", name, len(v))
		}
		ref.Kind, ref.ID, rest = ConfluentID, int64(binary.BigEndian.Uint32(v[1:5])), v[5:]
	case 1:
		if len(v) < 17 {
			return Ref{}, nil, true, badFraming("header %s: %d bytes, magic 1 needs 17 (01 + 16-byte GUID)", name, len(v))
		}
		ref.Kind, ref.GUID, rest = GUID, formatGUID(v[1:17]), v[17:]
	default:
		return Ref{}, nil, true, badFraming("header %s: magic byte %d, want 0 (id) or 1 (GUID)", name, v[0])
	}
	if opts.MessageIndexes {
		idx, _, err := decodeMessageIndexes(rest)
		if err != nil {
			return Ref{}, nil, true, fmt.Errorf("header %s: %w", name, err)
		}
		ref.MessageIndexes = idx
	}
	// Bytes after the id (or the indexes) are ignored, as in Confluent's
	// SchemaID.FromBytes.
	payload, err := parseTypeRefOpt(&ref, data, opts)
	return ref, payload, true, err
}

func parseApicurioHeader(data []byte, header func(string) ([]byte, bool), opts Options) (Ref, []byte, bool, error) {
	gidName, cidName, encName := ApicurioValueGlobalIDHeader, ApicurioValueContentIDHeader, ApicurioValueEncodingHeader
	if opts.Key {
		gidName, cidName, encName = ApicurioKeyGlobalIDHeader, ApicurioKeyContentIDHeader, ApicurioKeyEncodingHeader
	}
	ref := Ref{Framing: FramingApicurioHeader}
	name := gidName
	v, ok := header(gidName)
	if ok {
		ref.Kind = GlobalID
	} else if v, ok = header(cidName); ok {
		ref.Kind, name = ContentID, cidName
	} else {
		return Ref{}, nil, false, nil
	}
	if len(v) != 8 {
		return Ref{}, nil, true, badFraming("header %s: %d bytes, want an 8-byte big-endian long", name, len(v))
	}
	ref.ID = int64(binary.BigEndian.Uint64(v))
	if enc, ok := header(encName); ok {
		switch s := string(enc); s {
		case "BINARY", "JSON":
			ref.Encoding = s
		default:
			return Ref{}, nil, true, badFraming("header %s: %q, want BINARY or JSON", encName, truncate(s))
		}
	}
	payload, err := parseAfterID(&ref, data, opts)
	return ref, payload, true, err
}

func parsePrefix(data []byte, opts Options) (Ref, []byte, error) {
	kind, width := opts.prefix()
	if len(data) == 0 {
		return Ref{}, nil, badFraming("empty value and no schema id header")
	}
	if data[0] != 0 {
		return Ref{}, nil, badFraming("no schema id header and the value starts with byte %d, not the magic byte 0", data[0])
	}
	if len(data) < 1+width {
		return Ref{}, nil, badFraming("value of %d bytes is shorter than the %d-byte prefix (00 + %d-byte id)", len(data), 1+width, width)
	}
	ref := Ref{Kind: kind, Framing: FramingConfluentPrefix}
	if kind != ConfluentID {
		ref.Framing = FramingApicurioPrefix
	}
	if width == 4 {
		ref.ID = int64(binary.BigEndian.Uint32(data[1:5]))
	} else {
		ref.ID = int64(binary.BigEndian.Uint64(data[1:9]))
	}
	payload, err := parseAfterID(&ref, data[1+width:], opts)
	return ref, payload, err
}

// parseAfterID reads the optional message indexes and type ref that follow an
// id in the payload.
func parseAfterID(ref *Ref, rest []byte, opts Options) ([]byte, error) {
	if opts.MessageIndexes {
		idx, after, err := decodeMessageIndexes(rest)
		if err != nil {
			return nil, err
		}
		ref.MessageIndexes, rest = idx, after
	}
	return parseTypeRefOpt(ref, rest, opts)
}

func parseTypeRefOpt(ref *Ref, rest []byte, opts Options) ([]byte, error) {
	if !opts.TypeRef {
		return rest, nil
	}
	name, after, err := parseTypeRef(rest)
	if err != nil {
		return nil, err
	}
	ref.MessageName = name
	return after, nil
}

// decodeMessageIndexes reads Confluent's Protobuf message-index list: a
// zigzag varint count, then that many zigzag varint indexes; a count of 0
// (the single byte 00) means [0]. franz-go's sr.ConfluentHeader does the
// decoding; this adds the bounds.
func decodeMessageIndexes(b []byte) ([]int, []byte, error) {
	if len(b) == 0 {
		return nil, nil, badFraming("missing protobuf message indexes")
	}
	var h sr.ConfluentHeader
	idx, rest, err := h.DecodeIndex(b, MaxMessageIndexes)
	switch {
	case errors.Is(err, sr.ErrNotRegistered):
		n, _ := binary.Varint(b)
		return nil, nil, badFraming("protobuf message index count %d exceeds %d", n, MaxMessageIndexes)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, nil, badFraming("protobuf message indexes truncated")
	case err != nil:
		return nil, nil, badFraming("protobuf message indexes: %v", err)
	}
	for _, i := range idx {
		if i < 0 {
			return nil, nil, badFraming("negative protobuf message index %d", i)
		}
	}
	return idx, rest, nil
}

// parseTypeRef reads Apicurio's length-delimited Ref message (unsigned varint
// length, then a protobuf message whose field 1 is the type name), as written
// by Ref.writeDelimitedTo in Apicurio's ProtobufSerializer.
func parseTypeRef(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, badFraming("missing or bad Apicurio protobuf type-ref length")
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return "", nil, badFraming("Apicurio protobuf type ref of %d bytes, only %d left", n, len(b))
	}
	msg, rest := b[:n], b[n:]
	var name string
	for len(msg) > 0 {
		tag, k := binary.Uvarint(msg)
		if k <= 0 || tag>>3 == 0 {
			return "", nil, badFraming("bad field tag in Apicurio protobuf type ref")
		}
		msg = msg[k:]
		switch tag & 7 {
		case 0: // varint
			if _, k = binary.Uvarint(msg); k <= 0 {
				return "", nil, badFraming("bad varint in Apicurio protobuf type ref")
			}
			msg = msg[k:]
		case 1: // fixed64
			if len(msg) < 8 {
				return "", nil, badFraming("truncated Apicurio protobuf type ref")
			}
			msg = msg[8:]
		case 2: // bytes
			l, k := binary.Uvarint(msg)
			if k <= 0 || l > uint64(len(msg)-k) {
				return "", nil, badFraming("truncated Apicurio protobuf type ref")
			}
			if tag>>3 == 1 {
				name = string(msg[k : k+int(l)])
			}
			msg = msg[k+int(l):]
		case 5: // fixed32
			if len(msg) < 4 {
				return "", nil, badFraming("truncated Apicurio protobuf type ref")
			}
			msg = msg[4:]
		default:
			return "", nil, badFraming("wire type %d in Apicurio protobuf type ref", tag&7)
		}
	}
	if !utf8.ValidString(name) {
		return "", nil, badFraming("Apicurio protobuf type ref name is not UTF-8")
	}
	return name, rest, nil
}

func formatGUID(b []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
