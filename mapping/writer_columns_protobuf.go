package mapping

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// protobufWriterColumns derives columns from a Protobuf writer schema: one
// per field of the message named (protobufMessage), typed by the first
// column type the docs' Protobuf table lists for the field's type.
func protobufWriterColumns(s *schemaregistry.Schema, message string) ([]fluss.Column, []FieldNotAdded, error) {
	md, err := protobufMessage(s, message)
	if err != nil {
		return nil, nil, err
	}
	stack := []protoreflect.FullName{md.FullName()}
	fds := md.Fields()
	cols := make([]fluss.Column, 0, fds.Len())
	var notAdded []FieldNotAdded
	for i := 0; i < fds.Len(); i++ {
		// A oneof member is a field like any other: its own column.
		fd := fds.Get(i)
		t, err := pbColumnType(fd, stack)
		if err != nil {
			notAdded = append(notAdded, FieldNotAdded{Field: string(fd.Name()), Type: pbTypeName(fd), Reason: err.Error()})
			continue
		}
		doc, _ := pbFieldMeta(fd)
		cols = append(cols, fluss.Column{Name: string(fd.Name()), Type: t, Comment: doc})
	}
	if len(cols) == 0 && len(notAdded) > 0 {
		return nil, notAdded, errNoColumns(notAdded)
	}
	return cols, notAdded, nil
}

// protobufMessage compiles a Protobuf writer schema as the decoder does
// (sharing its cache, so the same references and built-in imports) and
// finds message in it: a full or simple name, or "" for the file's only
// top-level message. A file of several messages and no name is ambiguous:
// the records' message indexes say which they are, a plan has none.
func protobufMessage(s *schemaregistry.Schema, message string) (protoreflect.MessageDescriptor, error) {
	if s.Type != "" && !strings.EqualFold(s.Type, "PROTOBUF") {
		return nil, fmt.Errorf("the writer schema is a %s schema, not Protobuf", s.Type)
	}
	c := pbCompile(s)
	if c.err != "" {
		return nil, fmt.Errorf("the writer schema does not compile: %s", c.err)
	}
	msgs := c.file.Messages()
	switch {
	case msgs.Len() == 0:
		return nil, fmt.Errorf("the writer schema declares no message: it has no fields to make columns of")
	case message == "" && msgs.Len() > 1:
		names := make([]string, msgs.Len())
		for i := range names {
			names[i] = string(msgs.Get(i).FullName())
		}
		return nil, fmt.Errorf("the writer schema declares %d messages (%s): name the records' message with value.message (key.message for keys)",
			msgs.Len(), strings.Join(names, ", "))
	}
	md, reason := pbSelectMessage(c.file, &schemaregistry.Ref{MessageName: message})
	if reason != "" {
		return nil, fmt.Errorf("%s", reason)
	}
	return md, nil
}

// ProtobufMessage is the full name of the message a record framed with ref
// is, in writer schema s: by its message indexes, else by Apicurio's type
// name, else the file's first message (what the decoder reads it as).
func ProtobufMessage(s *schemaregistry.Schema, ref schemaregistry.Ref) (string, error) {
	c := pbCompile(s)
	if c.err != "" {
		return "", fmt.Errorf("the writer schema does not compile: %s", c.err)
	}
	md, reason := pbSelectMessage(c.file, &ref)
	if reason != "" {
		return "", fmt.Errorf("%s", reason)
	}
	return string(md.FullName()), nil
}

// pbColumnType is the column type field fd (its whole value: map, list or
// single) fills by default. stack holds the messages enclosing it.
func pbColumnType(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) (fluss.DataType, error) {
	switch {
	case fd.IsMap():
		k, err := pbValueColumn(fd.MapKey(), stack)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("map keys: %w", err)
		}
		v, err := pbValueColumn(fd.MapValue(), stack)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("map values: %w", err)
		}
		return fluss.Map(k, v), nil
	case fd.IsList():
		e, err := pbValueColumn(fd, stack)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("elements: %w", err)
		}
		return fluss.Array(e), nil
	}
	return pbValueColumn(fd, stack)
}

// pbValueColumn is the column type of one value of fd's kind (an element,
// for a repeated field).
func pbValueColumn(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) (fluss.DataType, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return fluss.Boolean(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return fluss.Int(), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return fluss.BigInt(), nil // values up to 2^32-1 do not fit INT
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return fluss.BigInt(), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		// The table's note: above 2^63-1 does not fit BIGINT, use
		// DECIMAL(20, 0); a planned table must take every value the
		// schema allows (fixed64 hashes and ids often use the top bit).
		return fluss.Decimal(20, 0), nil
	case protoreflect.FloatKind:
		return fluss.Float(), nil
	case protoreflect.DoubleKind:
		return fluss.Double(), nil
	case protoreflect.StringKind:
		return fluss.String(), nil
	case protoreflect.BytesKind:
		return fluss.Bytes(), nil
	case protoreflect.EnumKind:
		// The value's name, as the Avro plan stores enums: it reads
		// without the schema, where the number does not.
		return fluss.String(), nil
	case protoreflect.MessageKind:
		return pbMessageColumn(fd, fd.Message(), stack)
	case protoreflect.GroupKind:
		return fluss.DataType{}, fmt.Errorf("group fields are not supported")
	}
	return fluss.DataType{}, fmt.Errorf("no column type for protobuf %s", fd.Kind())
}

// pbMessageColumn is the column type of a message value: a well-known
// type's own column, else a ROW of its fields.
func pbMessageColumn(fd protoreflect.FieldDescriptor, md protoreflect.MessageDescriptor, stack []protoreflect.FullName) (fluss.DataType, error) {
	name := md.FullName()
	switch name {
	case "google.protobuf.Timestamp":
		// An instant (UTC seconds and nanos), so TIMESTAMP_LTZ, as Avro's
		// timestamp-* are; precision 9 keeps every nano the type holds.
		return fluss.TimestampLTZ(9), nil
	case "google.protobuf.Duration":
		return fluss.BigInt(), nil // milliseconds, truncated toward zero
	case "google.type.Date":
		return fluss.Date(), nil
	case "google.type.TimeOfDay":
		return fluss.Time(3), nil // Fluss keeps milliseconds of a TIME
	case "confluent.type.Decimal":
		return pbDecimalColumn(fd)
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return fluss.DataType{}, fmt.Errorf("%s holds any JSON value, nested to any depth: no column type reads it", name)
	}
	if pbWrappers[name] {
		vf := md.Fields().ByNumber(1)
		if vf == nil {
			return fluss.DataType{}, fmt.Errorf("wrapper %s has no field 1", name)
		}
		return pbValueColumn(vf, stack) // the wrapped value; an absent wrapper reads null
	}
	if slices.Contains(stack, name) {
		return fluss.DataType{}, fmt.Errorf("message %s is recursive (a recursive type cannot be a column)", name)
	}
	if len(stack) > maxAvroDepth {
		return fluss.DataType{}, fmt.Errorf("nested too deeply (more than %d messages)", maxAvroDepth)
	}
	fds := md.Fields()
	if fds.Len() == 0 {
		return fluss.DataType{}, fmt.Errorf("message %s has no fields: a ROW of nothing is no column", name)
	}
	inner := append(slices.Clip(stack), name)
	fields := make([]fluss.Field, 0, fds.Len())
	for i := 0; i < fds.Len(); i++ {
		f := fds.Get(i)
		t, err := pbColumnType(f, inner)
		if err != nil {
			return fluss.DataType{}, fmt.Errorf("field %q: %w", f.Name(), err)
		}
		doc, _ := pbFieldMeta(f)
		fields = append(fields, fluss.Field{Name: string(f.Name()), Type: t, Description: doc})
	}
	return fluss.RowType(fields...), nil
}

// pbDecimalColumn is the DECIMAL a confluent.type.Decimal field fills. The
// message carries no precision; Confluent's serializers put it (and the
// scale, 0 when absent) in the field's (confluent.field_meta) params.
func pbDecimalColumn(fd protoreflect.FieldDescriptor) (fluss.DataType, error) {
	_, params := pbFieldMeta(fd)
	ps, ok := params["precision"]
	if !ok {
		return fluss.DataType{}, fmt.Errorf(`confluent.type.Decimal without a "precision" param in (confluent.field_meta) has no DECIMAL precision: add the params precision and scale, or create the column yourself`)
	}
	p, err := strconv.Atoi(ps)
	if err != nil {
		return fluss.DataType{}, fmt.Errorf("confluent.type.Decimal precision %q is not a number", ps)
	}
	s := 0
	if ss, ok := params["scale"]; ok {
		if s, err = strconv.Atoi(ss); err != nil {
			return fluss.DataType{}, fmt.Errorf("confluent.type.Decimal scale %q is not a number", ss)
		}
	}
	return decimalColumn(p, s)
}

// pbFieldMetaNumber is the extension number of confluent.field_meta
// (confluent/meta.proto).
const pbFieldMetaNumber = 1088

// pbFieldMeta reads fd's (confluent.field_meta) option: its doc and params.
// It reads the options' wire form, so the option is found whether the
// compiler resolved the extension (.proto text) or kept it as unknown
// bytes (a base64 FileDescriptorProto).
func pbFieldMeta(fd protoreflect.FieldDescriptor) (string, map[string]string) {
	opts := fd.Options()
	if opts == nil {
		return "", nil
	}
	b, err := proto.Marshal(opts)
	if err != nil {
		return "", nil
	}
	var doc string
	var params map[string]string
	// Repeated occurrences of a message merge: the last doc wins, params
	// add up.
	pbEachField(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		if num != pbFieldMetaNumber || typ != protowire.BytesType {
			return
		}
		pbEachField(v, func(num protowire.Number, typ protowire.Type, v []byte) {
			switch {
			case num == 1 && typ == protowire.BytesType:
				doc = string(v)
			case num == 2 && typ == protowire.BytesType:
				var k, val string
				pbEachField(v, func(num protowire.Number, typ protowire.Type, v []byte) {
					switch {
					case num == 1 && typ == protowire.BytesType:
						k = string(v)
					case num == 2 && typ == protowire.BytesType:
						val = string(v)
					}
				})
				if params == nil {
					params = map[string]string{}
				}
				params[k] = val
			}
		})
	})
	return doc, params
}

// pbEachField calls fn for each field of a message's wire form, with the
// contents of length-delimited values (nil for others); it stops at the
// first malformed byte.
func pbEachField(b []byte, fn func(protowire.Number, protowire.Type, []byte)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return
		}
		b = b[n:]
		fn(num, typ, v)
	}
}

// pbTypeName names a field's type for errors: map<K, V>, repeated T, a
// message or enum by its full name, a scalar by its kind.
func pbTypeName(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "map<" + pbKindName(fd.MapKey()) + ", " + pbKindName(fd.MapValue()) + ">"
	case fd.IsList():
		return "repeated " + pbKindName(fd)
	}
	return pbKindName(fd)
}

func pbKindName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}
