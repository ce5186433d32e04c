// Package outage owns the one rate-limited log of a dependency that keeps
// failing (Fluss writer ids, readiness, route loading, a table refusing
// appends): the first failure is a WARN, then a summary at most every
// interval, and one INFO line when it recovers.
//
// Imports point down: outage imports the standard library only.
package outage
