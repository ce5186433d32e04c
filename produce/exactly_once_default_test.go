package produce

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// unopenable is a producer-state store whose table cannot be used.
type unopenable struct {
	memStore
	err   error
	opens int
}

func (u *unopenable) Open(context.Context) error { u.opens++; return u.err }

// TestExactlyOnceByDefault: a route that leaves exactly_once unset writes
// exactly once once the producer-state table opens; when it cannot be
// created the gateway says so and such routes stay on the merged path,
// while a route that asks for exactly once refuses to load, and a store
// error that may pass makes the load retry.
func TestExactlyOnceByDefault(t *testing.T) {
	tbl := fluss.TablePath{Database: "db", Table: "t"}
	routes := func(t *testing.T, modes ...mapping.ExactlyOnceMode) *mapping.Routes {
		var specs []mapping.RouteSpec
		for i, m := range modes {
			specs = append(specs, mapping.RouteSpec{Topic: string(rune('a' + i)), Table: tbl, ExactlyOnce: m})
		}
		rs, err := mapping.NewRoutes(specs)
		require.NoError(t, err)
		return rs
	}
	newBridgeWith := func(store exactlyonce.Store) (*Path, *bytes.Buffer) {
		var logs bytes.Buffer
		b := &Path{log: slog.New(slog.NewTextHandler(&logs, nil))}
		b.eo = exactlyonce.New(context.Background(), store, nil, nil, b.log)
		return b, &logs
	}
	route := func(rs *mapping.Routes, topic string) *mapping.Route {
		r, ok := rs.Resolve(topic)
		require.True(t, ok)
		return r
	}

	t.Run("usable", func(t *testing.T) {
		b, logs := newBridgeWith(&memStore{})
		rs := routes(t, mapping.ExactlyOnceDefault, mapping.ExactlyOnceOff)
		assert.False(t, b.WritesExactlyOnce(route(rs, "a")), "not before the store opened")
		require.NoError(t, b.PrepareExactlyOnce(t.Context(), rs))
		assert.True(t, b.WritesExactlyOnce(route(rs, "a")), "unset: exactly once")
		assert.False(t, b.WritesExactlyOnce(route(rs, "b")), "false: the merged path")
		assert.Contains(t, logs.String(), "exactly once on for idempotent producers")
	})

	t.Run("denied", func(t *testing.T) {
		denied := fmt.Errorf("create database gateway: %w", &fluss.Error{Code: 48, Name: "AUTHORIZATION_EXCEPTION", Message: "no CREATE permission"})
		store := &unopenable{err: denied}
		b, logs := newBridgeWith(store)
		rs := routes(t, mapping.ExactlyOnceDefault)
		require.NoError(t, b.PrepareExactlyOnce(t.Context(), rs), "unset routes load without it")
		assert.False(t, b.WritesExactlyOnce(route(rs, "a")))
		assert.Contains(t, logs.String(), "level=ERROR")
		assert.Contains(t, logs.String(), "exactly once is off")
		assert.Contains(t, logs.String(), "no CREATE permission")

		err := b.PrepareExactlyOnce(t.Context(), routes(t, mapping.ExactlyOnceDefault, mapping.ExactlyOnceOn))
		require.Error(t, err, "a route that asks for exactly once cannot load without it")
		assert.Contains(t, err.Error(), "exactly_once: true")
		assert.Contains(t, err.Error(), "no CREATE permission")

		opens := store.opens
		require.NoError(t, b.PrepareExactlyOnce(t.Context(), routes(t, mapping.ExactlyOnceOff)))
		assert.Equal(t, opens, store.opens, "no route wants it: the store is not touched")
	})

	t.Run("transient", func(t *testing.T) {
		b, _ := newBridgeWith(&unopenable{err: fmt.Errorf("lookup: %w", fluss.ErrRequestTimeout)})
		rs := routes(t, mapping.ExactlyOnceDefault)
		err := b.PrepareExactlyOnce(t.Context(), rs)
		require.Error(t, err)
		assert.True(t, fluss.IsTransient(err), "the load retries: %v", err)
		assert.False(t, b.WritesExactlyOnce(route(rs, "a")))
	})

	t.Run("no store", func(t *testing.T) {
		b := &Path{log: slog.New(slog.DiscardHandler)}
		rs := routes(t, mapping.ExactlyOnceDefault, mapping.ExactlyOnceOn)
		require.NoError(t, b.PrepareExactlyOnce(t.Context(), rs))
		assert.False(t, b.WritesExactlyOnce(route(rs, "a")))
		assert.True(t, b.WritesExactlyOnce(route(rs, "b")), "answered with an error by produceExactlyOnce")
	})
}
