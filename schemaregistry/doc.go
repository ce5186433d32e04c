// Package schemaregistry turns Kafka record values (or keys) written by
// Confluent's or Apicurio's serializers into (schema, payload): ParseFraming
// finds the schema reference in the record's bytes and headers, and a Client
// fetches the schema, with everything it references, from a schema registry
// and caches it.
//
// It owns the record framings and the registry client only. Decoding payloads
// (Avro, Protobuf, JSON Schema) and mapping them to Fluss rows belong to the
// caller. It imports only the standard library, golang.org/x/sync/singleflight
// and franz-go's pkg/sr (whose ConfluentHeader decodes the Protobuf message
// indexes; its srfake serves the tests) — never Kafka's protocol (kafkaproto),
// the gateway, mapping or configs.
//
// # Framings
//
// ParseFraming checks, per record, in this order:
//
//	where                      bytes                                          Ref.Kind     payload
//	__value_schema_id header   01 + 16-byte GUID [+ message indexes]          GUID         whole value
//	(__key_schema_id for keys) 00 + 4-byte id    [+ message indexes]          ConfluentID  whole value
//	apicurio.value.globalId    8-byte big-endian long                         GlobalID     whole value [after indexes, type ref]
//	apicurio.value.contentId   8-byte big-endian long                         ContentID    whole value [after indexes, type ref]
//	value prefix (default)     00 + 4-byte id [+ message indexes]             ConfluentID  after the prefix
//	value prefix (Options)     00 + 8-byte (or 4-byte) globalId / contentId   GlobalID...  after the prefix
//
// The Confluent header is Confluent Platform 8's header_schema_id_serializer
// (confluent-kafka-go v2.11.1 serde.HeaderSchemaIDSerializer writes
// 01+GUID; its DualSchemaIDDeserializer also accepts 00+id there, and for
// Protobuf reads the message indexes from the header value). An empty header
// value is ignored, as Confluent does; a malformed one is ErrBadFraming
// (Confluent would fall back to the value prefix). Apicurio headers are those
// of Apicurio 2.x's default and 3.x's headers.enabled=true serdes;
// apicurio.value.encoding (BINARY or JSON) is reported in Ref.Encoding.
//
// Message indexes (Options.MessageIndexes, for Protobuf): a zigzag varint
// count, then that many zigzag varint indexes; the single byte 00 means [0]
// (00 00000003 02 02 = id 3, index [1]). More than MaxMessageIndexes, a
// negative count or index, or a varint overflow is ErrBadFraming. Apicurio's
// Protobuf serializer writes, instead or as well, a length-delimited
// Ref{name} message (Options.TypeRef; Ref.MessageName).
//
// Apicurio 2.x without headers writes 00 + 8-byte globalId: 9 bytes that
// also parse as a 5-byte Confluent prefix. The two are never guessed apart:
// only Options.PrefixKind/PrefixWidth (the route's configuration) selects
// the 8-byte form. Apicurio 3.x's default 00 + 4-byte contentId is
// Confluent-shaped and is looked up as a ConfluentID (Apicurio's ccompat ids
// are contentIds).
//
// # Client
//
// A Client speaks the Confluent-compatible REST API (Confluent Schema
// Registry, Karapace, Apicurio's /apis/ccompat/v7): GET /schemas/ids/{id}
// (a missing schemaType means AVRO), /schemas/guids/{guid},
// /subjects/{s}/versions/latest, and for references
// /subjects/{s}/versions/{v}, followed recursively (at most
// MaxReferenceDepth deep) with every referenced text kept in Schema.Deps by
// reference name. globalId and contentId lookups use Apicurio's native v3
// API (/apis/registry/v3/ids/globalIds/{id}, /ids/contentIds/{id}, see
// apicurio.go), whose base is Config.ApicurioURL or, when that is empty,
// derived from the ccompat URLs.
//
// franz-go's sr.Client is not used for HTTP: it fails over to the next URL
// only on transport errors (not 5xx/429), cannot add query parameters to Do
// or expose response headers (both needed by the Apicurio lookups), and
// sends the ccompat Accept header everywhere.
//
// # Caching and retriability
//
//   - A schema is immutable per id, so it is cached by id (and GUID, globalId,
//     contentId; referenced subject versions too) for the client's lifetime,
//     bounded by CacheSize entries, least recently used out.
//   - However many goroutines ask for one id at once, it is fetched once
//     (singleflight). The fetch does not depend on any one caller's context:
//     a caller that gives up gets ErrUnavailable wrapping its context's error
//     while the fetch goes on for the others, each HTTP request bounded by
//     RequestTimeout.
//   - A failed fetch is not cached, except a definite "not found"
//     (ErrUnknownSchema), remembered for NotFoundTTL (30 s) so a flood of
//     records with a bad id does not hammer the registry.
//   - ErrUnknownSchema: a 404 that names the missing schema (Confluent and
//     Karapace error_code 404xx such as 40403; Apicurio native
//     VersionNotFoundException / ContentNotFoundException), or any 404 of a
//     GUID lookup (Apicurio has no GUID endpoint): the record is bad, not
//     retriable. (Apicurio 3.3.3 leaves about one request in 150 for a path
//     it does not serve unanswered; that lookup times out as ErrUnavailable
//     and the record's retry gets the 404.) A 404 for a path the server does not serve — a wrong base
//     URL: Confluent's error_code 404, Apicurio's NotFoundException, a
//     plain-text 404 — is ErrUnavailable, so a misconfiguration does not
//     turn every record into a bad one.
//   - ErrUnavailable: network errors, timeouts, 5xx, 429, 401/403, undecodable
//     answers: retriable. Each is tried on the next URL (starting with the one
//     that answered last) before giving up; a 404 is not.
//   - Stats returns counters (lookups, cache hits, fetches, requests, failures
//     by kind) for the gateway to export as metrics.
package schemaregistry
