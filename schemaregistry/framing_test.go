package schemaregistry

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// hx decodes hex with spaces allowed, as byte dumps of serializer output
// (Confluent's Python and Go serializers, Apicurio's Java serdes) are
// usually written.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func headers(kv ...any) func(string) ([]byte, bool) {
	m := map[string][]byte{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			m[kv[i].(string)] = []byte(v)
		case []byte:
			m[kv[i].(string)] = v
		}
	}
	return func(k string) ([]byte, bool) { v, ok := m[k]; return v, ok }
}

func TestParseFraming(t *testing.T) {
	avroDatum := hx(t, "0e 00 04 04d2")
	for _, tc := range []struct {
		name    string
		data    []byte
		hdr     func(string) ([]byte, bool)
		opts    Options
		want    Ref
		payload []byte
	}{{
		name:    "python AvroSerializer 00 00000002",
		data:    hx(t, "00 00000002 0e 00 04 04d2"),
		want:    Ref{Kind: ConfluentID, ID: 2, Framing: FramingConfluentPrefix},
		payload: avroDatum,
	}, {
		name:    "python ProtobufSerializer 00 00000003 02 02, index [1]",
		data:    hx(t, "00 00000003 02 02 0a 03 616263"),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: ConfluentID, ID: 3, Framing: FramingConfluentPrefix, MessageIndexes: []int{1}},
		payload: hx(t, "0a 03 616263"),
	}, {
		name:    "python JSONSerializer 00 00000004 {json}",
		data:    append(hx(t, "00 00000004"), `{"id": 7}`...),
		want:    Ref{Kind: ConfluentID, ID: 4, Framing: FramingConfluentPrefix},
		payload: []byte(`{"id": 7}`),
	}, {
		name:    "go avrov2 000000000e",
		data:    hx(t, "000000000e 0e020278"),
		want:    Ref{Kind: ConfluentID, ID: 14, Framing: FramingConfluentPrefix},
		payload: hx(t, "0e020278"),
	}, {
		name:    "go protobuf 0000000010 02 02",
		data:    hx(t, "0000000010 02 02 0801"),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: ConfluentID, ID: 16, Framing: FramingConfluentPrefix, MessageIndexes: []int{1}},
		payload: hx(t, "0801"),
	}, {
		name:    "go protobuf nested message index [1,1] = 04 02 02",
		data:    hx(t, "0000000011 04 02 02 0801"),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: ConfluentID, ID: 17, Framing: FramingConfluentPrefix, MessageIndexes: []int{1, 1}},
		payload: hx(t, "0801"),
	}, {
		name:    "protobuf first message shortcut 00 = [0]",
		data:    hx(t, "00 00000005 00 0801"),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: ConfluentID, ID: 5, Framing: FramingConfluentPrefix, MessageIndexes: []int{0}},
		payload: hx(t, "0801"),
	}, {
		name:    "protobuf message with empty payload",
		data:    hx(t, "00 00000005 00"),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: ConfluentID, ID: 5, Framing: FramingConfluentPrefix, MessageIndexes: []int{0}},
		payload: []byte{},
	}, {
		name:    "librdkafka on the wire 000000001502020278",
		data:    hx(t, "000000001502020278"),
		want:    Ref{Kind: ConfluentID, ID: 21, Framing: FramingConfluentPrefix},
		payload: hx(t, "02020278"),
	}, {
		name:    "header __value_schema_id 01 44332b0d... (python header mode)",
		data:    hx(t, "0400"),
		hdr:     headers(ValueSchemaIDHeader, hx(t, "0144332b0df9488c9888b02f3070835b30")),
		want:    Ref{Kind: GUID, GUID: "44332b0d-f948-8c98-88b0-2f3070835b30", Framing: FramingConfluentHeader},
		payload: hx(t, "0400"),
	}, {
		name:    "header GUID with protobuf message indexes in the header",
		data:    hx(t, "0801"),
		hdr:     headers(ValueSchemaIDHeader, hx(t, "0144332b0df9488c9888b02f3070835b30 02 02")),
		opts:    Options{MessageIndexes: true},
		want:    Ref{Kind: GUID, GUID: "44332b0d-f948-8c98-88b0-2f3070835b30", Framing: FramingConfluentHeader, MessageIndexes: []int{1}},
		payload: hx(t, "0801"),
	}, {
		name:    "header magic 0 + 4-byte id (accepted by confluent DualSchemaIDDeserializer)",
		data:    hx(t, "0a"),
		hdr:     headers(ValueSchemaIDHeader, hx(t, "00 00000007")),
		want:    Ref{Kind: ConfluentID, ID: 7, Framing: FramingConfluentHeader},
		payload: hx(t, "0a"),
	}, {
		name:    "empty confluent header is ignored, prefix used",
		data:    hx(t, "00 00000002 0a"),
		hdr:     headers(ValueSchemaIDHeader, []byte{}),
		want:    Ref{Kind: ConfluentID, ID: 2, Framing: FramingConfluentPrefix},
		payload: hx(t, "0a"),
	}, {
		name:    "key uses __key_schema_id, not the value header",
		data:    hx(t, "0a"),
		hdr:     headers(ValueSchemaIDHeader, hx(t, "00 00000007"), KeySchemaIDHeader, hx(t, "00 00000009")),
		opts:    Options{Key: true},
		want:    Ref{Kind: ConfluentID, ID: 9, Framing: FramingConfluentHeader},
		payload: hx(t, "0a"),
	}, {
		name:    "apicurio 3.1.7 headers.enabled: contentId header + encoding BINARY",
		data:    avroDatum,
		hdr:     headers(ApicurioValueContentIDHeader, be64(8), ApicurioValueEncodingHeader, "BINARY"),
		want:    Ref{Kind: ContentID, ID: 8, Framing: FramingApicurioHeader, Encoding: "BINARY"},
		payload: avroDatum,
	}, {
		name:    "apicurio 2.6.13 default: globalId header + encoding BINARY",
		data:    avroDatum,
		hdr:     headers(ApicurioValueGlobalIDHeader, be64(12), ApicurioValueEncodingHeader, "BINARY"),
		want:    Ref{Kind: GlobalID, ID: 12, Framing: FramingApicurioHeader, Encoding: "BINARY"},
		payload: avroDatum,
	}, {
		name:    "apicurio key headers",
		data:    avroDatum,
		hdr:     headers(ApicurioValueGlobalIDHeader, be64(12), ApicurioKeyGlobalIDHeader, be64(13), ApicurioKeyEncodingHeader, "JSON"),
		opts:    Options{Key: true},
		want:    Ref{Kind: GlobalID, ID: 13, Framing: FramingApicurioHeader, Encoding: "JSON"},
		payload: avroDatum,
	}, {
		name:    "apicurio globalId header wins over contentId header",
		data:    avroDatum,
		hdr:     headers(ApicurioValueContentIDHeader, be64(8), ApicurioValueGlobalIDHeader, be64(12)),
		want:    Ref{Kind: GlobalID, ID: 12, Framing: FramingApicurioHeader},
		payload: avroDatum,
	}, {
		name:    "confluent header wins over apicurio header",
		data:    avroDatum,
		hdr:     headers(ApicurioValueGlobalIDHeader, be64(12), ValueSchemaIDHeader, hx(t, "00 00000007")),
		want:    Ref{Kind: ConfluentID, ID: 7, Framing: FramingConfluentHeader},
		payload: avroDatum,
	}, {
		name:    "apicurio 2.6.13 headers.enabled=false: 9-byte prefix, globalId",
		data:    append(hx(t, "00 0000000000000017"), avroDatum...),
		opts:    Options{PrefixKind: GlobalID, PrefixWidth: 8},
		want:    Ref{Kind: GlobalID, ID: 23, Framing: FramingApicurioPrefix},
		payload: avroDatum,
	}, {
		name:    "the same 9 bytes without the option are a 5-byte Confluent prefix",
		data:    append(hx(t, "00 0000000000000017"), avroDatum...),
		want:    Ref{Kind: ConfluentID, ID: 0, Framing: FramingConfluentPrefix},
		payload: append(hx(t, "00000017"), avroDatum...),
	}, {
		name:    "apicurio 3.1.7 default 00 00000008 (4-byte contentId, Confluent-shaped)",
		data:    append(hx(t, "00 00000008"), avroDatum...),
		want:    Ref{Kind: ConfluentID, ID: 8, Framing: FramingConfluentPrefix},
		payload: avroDatum,
	}, {
		name:    "apicurio 4-byte globalId prefix (use-id=globalId)",
		data:    append(hx(t, "00 00000008"), avroDatum...),
		opts:    Options{PrefixKind: GlobalID},
		want:    Ref{Kind: GlobalID, ID: 8, Framing: FramingApicurioPrefix},
		payload: avroDatum,
	}, {
		name:    "apicurio protobuf default: type ref after the id",
		data:    hx(t, "00 00000009 07 0a 05 4f72646572 0801"),
		opts:    Options{TypeRef: true},
		want:    Ref{Kind: ConfluentID, ID: 9, Framing: FramingConfluentPrefix, MessageName: "Order"},
		payload: hx(t, "0801"),
	}, {
		name:    "apicurio protobuf send-indexes + type ref (indexes as 02 00, no shortcut)",
		data:    hx(t, "00 00000009 02 00 07 0a 05 4f72646572 0801"),
		opts:    Options{MessageIndexes: true, TypeRef: true},
		want:    Ref{Kind: ConfluentID, ID: 9, Framing: FramingConfluentPrefix, MessageIndexes: []int{0}, MessageName: "Order"},
		payload: hx(t, "0801"),
	}, {
		name:    "apicurio protobuf headers mode: type ref at the start of the value",
		data:    hx(t, "07 0a 05 4f72646572 0801"),
		hdr:     headers(ApicurioValueContentIDHeader, be64(3)),
		opts:    Options{TypeRef: true},
		want:    Ref{Kind: ContentID, ID: 3, Framing: FramingApicurioHeader, MessageName: "Order"},
		payload: hx(t, "0801"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ref, payload, err := ParseFraming(tc.data, tc.hdr, tc.opts)
			if err != nil {
				t.Fatalf("ParseFraming: %v", err)
			}
			if !reflect.DeepEqual(ref, tc.want) {
				t.Errorf("ref = %+v\nwant  %+v", ref, tc.want)
			}
			if hex.EncodeToString(payload) != hex.EncodeToString(tc.payload) {
				t.Errorf("payload = %x, want %x", payload, tc.payload)
			}
			checkSuffix(t, tc.data, payload)
			if ref.String() == "" {
				t.Error("empty String()")
			}
		})
	}
}

func TestParseFramingErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		hdr  func(string) ([]byte, bool)
		opts Options
		msg  string
	}{
		{name: "empty value", data: nil, msg: "empty value"},
		{name: "raw avro without header", data: hx(t, "0e 00"), msg: "not the magic byte"},
		{name: "magic 1 in the value", data: hx(t, "01 00000001 00"), msg: "not the magic byte"},
		{name: "short prefix", data: hx(t, "00 000000"), msg: "shorter than the 5-byte prefix"},
		{name: "short 9-byte prefix", data: hx(t, "00 00000000 000000"), opts: Options{PrefixKind: ContentID, PrefixWidth: 8}, msg: "shorter than the 9-byte"},
		{name: "indexes missing", data: hx(t, "00 00000001"), opts: Options{MessageIndexes: true}, msg: "missing protobuf message indexes"},
		{name: "indexes truncated", data: hx(t, "00 00000001 04 02"), opts: Options{MessageIndexes: true}, msg: "truncated"},
		{name: "negative count", data: hx(t, "00 00000001 01 02"), opts: Options{MessageIndexes: true}, msg: "message indexes"},
		{name: "count 101", data: hx(t, "00 00000001 ca01"), opts: Options{MessageIndexes: true}, msg: "exceeds 100"},
		{name: "huge count", data: hx(t, "00 00000001 feffffffffffffff7f"), opts: Options{MessageIndexes: true}, msg: "exceeds 100"},
		{name: "varint overflow", data: hx(t, "00 00000001 ffffffffffffffffffff01"), opts: Options{MessageIndexes: true}, msg: "message indexes"},
		{name: "negative index", data: hx(t, "00 00000001 02 01"), opts: Options{MessageIndexes: true}, msg: "negative protobuf message index"},
		{name: "confluent header bad magic", data: hx(t, "0a"), hdr: headers(ValueSchemaIDHeader, hx(t, "02 00000001")), msg: "magic byte 2"},
		{name: "confluent header short id", data: hx(t, "0a"), hdr: headers(ValueSchemaIDHeader, hx(t, "00 000001")), msg: "needs 5"},
		{name: "confluent header short guid", data: hx(t, "0a"), hdr: headers(ValueSchemaIDHeader, hx(t, "01 44332b0d")), msg: "needs 17"},
		{name: "confluent header indexes missing", data: hx(t, "0a"), hdr: headers(ValueSchemaIDHeader, hx(t, "00 00000001")), opts: Options{MessageIndexes: true}, msg: "missing protobuf"},
		{name: "apicurio header 4 bytes", data: hx(t, "0a"), hdr: headers(ApicurioValueGlobalIDHeader, hx(t, "00000001")), msg: "want an 8-byte"},
		{name: "apicurio bad encoding", data: hx(t, "0a"), hdr: headers(ApicurioValueGlobalIDHeader, be64(1), ApicurioValueEncodingHeader, "XML"), msg: "want BINARY or JSON"},
		{name: "type ref longer than value", data: hx(t, "00 00000001 09 0a05"), opts: Options{TypeRef: true}, msg: "only 2 left"},
		{name: "type ref bad wire type", data: hx(t, "00 00000001 02 0b00"), opts: Options{TypeRef: true}, msg: "wire type 3"},
		{name: "type ref field 0", data: hx(t, "00 00000001 02 0200"), opts: Options{TypeRef: true}, msg: "bad field tag"},
		{name: "type ref not utf8", data: hx(t, "00 00000001 03 0a01ff"), opts: Options{TypeRef: true}, msg: "not UTF-8"},
		{name: "type ref missing", data: hx(t, "00 00000001"), opts: Options{TypeRef: true}, msg: "type-ref length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, payload, err := ParseFraming(tc.data, tc.hdr, tc.opts)
			if !errors.Is(err, ErrBadFraming) {
				t.Fatalf("err = %v, want ErrBadFraming", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.msg)
			}
			if payload != nil {
				t.Errorf("payload = %x on error", payload)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{PrefixKind: GUID}, {PrefixWidth: 5}, {PrefixWidth: 8}, {PrefixKind: 9}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: Validate passed", o)
		}
		if _, _, err := ParseFraming(hx(t, "00 0000000000000001"), nil, o); err == nil || errors.Is(err, ErrBadFraming) {
			t.Errorf("%+v: ParseFraming err = %v, want an options error", o, err)
		}
	}
	for _, o := range []Options{{}, {PrefixKind: GlobalID, PrefixWidth: 8}, {PrefixKind: ContentID, PrefixWidth: 4}, {PrefixKind: ConfluentID, PrefixWidth: 4}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// checkSuffix fails unless payload is a suffix sub-slice of data (same memory).
func checkSuffix(t testing.TB, data, payload []byte) {
	t.Helper()
	if len(payload) > len(data) {
		t.Fatalf("payload of %d bytes longer than the %d-byte input", len(payload), len(data))
	}
	if len(payload) > 0 && &payload[len(payload)-1] != &data[len(data)-1] {
		t.Fatalf("payload %x is not a sub-slice ending the input %x", payload, data)
	}
}

func FuzzParseFraming(f *testing.F) {
	seeds := []string{
		"00000000020e000404d2", "00000000030202", "000000001002020801", "00000000110402020801",
		"00000000050008", "000000001502020278", "0400", "00000000000000001700", "0000000009070a054f726465720801",
		"", "00", "01", "0000000001ca01", "0000000001ffffffffffffffffffff01", "0000000001feffffffffffffff7f",
	}
	hdrs := []string{"", "0144332b0df9488c9888b02f3070835b30", "0144332b0df9488c9888b02f3070835b300202", "0000000007", "000000000000000c", "02"}
	for i, s := range seeds {
		d, _ := hex.DecodeString(s)
		h, _ := hex.DecodeString(hdrs[i%len(hdrs)])
		f.Add(d, h, uint8(i), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, data, hval []byte, which, flags uint8) {
		names := []string{"", ValueSchemaIDHeader, KeySchemaIDHeader, ApicurioValueGlobalIDHeader,
			ApicurioValueContentIDHeader, ApicurioKeyGlobalIDHeader, ApicurioKeyContentIDHeader, ApicurioValueEncodingHeader}
		name := names[int(which)%len(names)]
		var hdr func(string) ([]byte, bool)
		if name != "" {
			hdr = func(k string) ([]byte, bool) {
				if k == name {
					return hval, true
				}
				return nil, false
			}
		}
		opts := Options{
			Key:            flags&1 != 0,
			MessageIndexes: flags&2 != 0,
			TypeRef:        flags&4 != 0,
		}
		switch (flags >> 3) & 3 {
		case 1:
			opts.PrefixKind, opts.PrefixWidth = GlobalID, 8
		case 2:
			opts.PrefixKind, opts.PrefixWidth = ContentID, 8
		case 3:
			opts.PrefixKind = GlobalID
		}
		ref, payload, err := ParseFraming(data, hdr, opts)
		if err != nil {
			if !errors.Is(err, ErrBadFraming) {
				t.Fatalf("error %v does not wrap ErrBadFraming", err)
			}
			if payload != nil {
				t.Fatalf("payload on error")
			}
			return
		}
		checkSuffix(t, data, payload)
		if ref.Kind < ConfluentID || ref.Kind > ContentID || ref.Framing < FramingConfluentPrefix || ref.Framing > FramingApicurioPrefix {
			t.Fatalf("bad ref %+v", ref)
		}
		if len(ref.MessageIndexes) > MaxMessageIndexes || (opts.MessageIndexes != (ref.MessageIndexes != nil)) {
			t.Fatalf("message indexes %v with opts %+v", ref.MessageIndexes, opts)
		}
		_ = ref.String()
	})
}
