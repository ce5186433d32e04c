// Package configs reads the gateway's YAML configuration file into plain
// structs, fills in the documented defaults and validates every setting.
//
// It is a leaf: it imports no package of this module, and only cmd/gateway
// imports it. cmd/gateway copies the values into each component's own Config
// (fluss.Config, the accumulator's and sender's Config, mapping.RouteSpec).
//
// Decoding is strict: an unknown key is an error, so a typo never silently
// falls back to a default. Validation errors name the key path
// ("routes[2] (orders): value.format: ...") so an operator can find the line.
//
// Every key is documented in docs/configuration.md; configs/gateway.yaml is
// the annotated example, and a test keeps it loadable.
//
// The package holds no state and starts no goroutines; a *Config is a value
// that the caller owns.
package configs
