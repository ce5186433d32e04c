// Package configs reads the gateway's YAML configuration file: it decodes
// the YAML, fills in the defaults, validates every setting and reports each
// problem under its key path.
//
// Defaults have one home each. The settings of a component start from that
// component's own defaults (kafkaproto.DefaultConfig, the fluss client's
// Default* constants, accumulator.DefaultConfig, sender.DefaultConfig);
// only the gateway's own settings (listener bind and advertised address,
// admin address and readiness checks, logging, shutdown deadline, the
// InitWriter wait and back-off) are defined here, and the ACL model (acls, checked by
// validateACLs, evaluated by the gateway). Routes are
// mapping.RouteSpec values decoded directly from the file: their defaults
// (RouteSpec.WithDefaults) and checks (mapping.ValidateSpecs) are mapping's,
// and "database.table" is fluss.ParseTablePath's.
//
// configs imports kafkaproto, fluss, mapping, accumulator and sender for their Config
// types, defaults and spec checks only; never the gateway's bridge or a
// component's running parts. The gateway copies the values into
// each component's Config.
//
// Decoding is strict: an unknown key is an error, so a typo never silently
// falls back to a default. YAML is decoded over the defaults, so a key given
// as 0 or false keeps that value. Validation errors name the key path
// ("routes[2] (orders): value.format: ...") so an operator can find the
// line.
//
// Every key is documented in docs/configuration.md; configs/gateway.yaml is
// the annotated example, and a test keeps it loadable.
//
// The package holds no state and starts no goroutines; a *Config is a value
// that the caller owns.
package configs
