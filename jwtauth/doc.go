// Package jwtauth validates the OAUTHBEARER tokens of the Kafka listeners
// (kafkaproto.TokenValidator): JWTs signed by a key of a JWKS (a file or
// an http(s) URL, re-read periodically and when a token names an unknown
// key id), with issuer, audience and time checks, the principal taken
// from a configured claim. Keys are loaded ahead by [Validator.Run], never
// per token, so a JWKS server that is down refuses tokens rather than
// stalling logins.
//
// jwtauth imports kafkaproto (the interface it implements and the user
// name rules) and backoff, never gateway or configs; kafkaproto knows
// nothing of JWTs.
package jwtauth
