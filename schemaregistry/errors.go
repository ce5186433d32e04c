package schemaregistry

import "errors"

var (
	// ErrUnknownSchema means the registry answered definitely that the schema
	// (or a schema it references) does not exist — a 404 whose body names the
	// missing thing (Confluent error_code 404xx such as 40403; Apicurio
	// VersionNotFoundException, ContentNotFoundException, ...), any 404 of a
	// GUID lookup — or the id is one no registry issues (zero or negative),
	// or references nest deeper than MaxReferenceDepth. The record carrying
	// the id is bad; retrying does not help.
	ErrUnknownSchema = errors.New("schemaregistry: unknown schema")

	// ErrUnavailable means the schema could not be fetched for a reason that
	// is not the record's fault: network error, timeout, HTTP 5xx or 429,
	// 401/403, a 404 for a path the server does not serve (a wrong base URL:
	// Confluent error_code 404, Apicurio NotFoundException, or no registry
	// body at all), an undecodable answer, or the caller's context ending. Retrying later may
	// succeed. When the caller's context ended, the error also matches
	// context.Canceled or context.DeadlineExceeded.
	ErrUnavailable = errors.New("schemaregistry: registry unavailable")

	// ErrBadFraming means a record's bytes or headers are not a valid
	// schema-registry framing (too short, bad magic byte, bad header length,
	// varint overflow, absurd message-index count). The record is bad.
	ErrBadFraming = errors.New("schemaregistry: bad framing")

	// ErrNoApicurioAPI means a globalId or contentId lookup was asked of a
	// client that has no Apicurio v3 API base: Config.ApicurioURL is empty and
	// no Config.URLs entry ends in /apis/ccompat/vN. It is a configuration
	// error, neither ErrUnknownSchema nor ErrUnavailable.
	ErrNoApicurioAPI = errors.New("schemaregistry: no Apicurio v3 API configured")
)
