package kafkaproto

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitClosed fails the test unless ch closes within a minute.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s: Done not closed", what)
	}
}

func TestRequestContextBehavesAsWithDeadline(t *testing.T) {
	t.Parallel()

	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		deadline := time.Now().Add(50 * time.Millisecond)
		ctx := newRequestContext(context.Background(), deadline)
		defer ctx.release()
		got, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.Equal(t, deadline, got)
		waitClosed(t, ctx.Done(), "deadline")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})

	t.Run("deadline passed before Done is asked", func(t *testing.T) {
		t.Parallel()
		ctx := newRequestContext(context.Background(), time.Now().Add(-time.Millisecond))
		defer ctx.release()
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		waitClosed(t, ctx.Done(), "past deadline")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})

	t.Run("parent cancelled", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), t, "v"))
		ctx := newRequestContext(parent, time.Now().Add(time.Hour))
		defer ctx.release()
		assert.Equal(t, "v", ctx.Value(t))
		assert.NoError(t, ctx.Err())
		cancel()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		waitClosed(t, ctx.Done(), "parent cancelled")
	})

	t.Run("released with Done armed", func(t *testing.T) {
		t.Parallel()
		ctx := newRequestContext(context.Background(), time.Now().Add(time.Hour))
		done := ctx.Done()
		select {
		case <-done:
			t.Fatal("Done closed before its deadline")
		default:
		}
		ctx.release()
		waitClosed(t, done, "released")
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})

	t.Run("released before Done is asked", func(t *testing.T) {
		t.Parallel()
		ctx := newRequestContext(context.Background(), time.Now().Add(time.Hour))
		ctx.release()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		waitClosed(t, ctx.Done(), "released first")
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})

	t.Run("children see the deadline", func(t *testing.T) {
		t.Parallel()
		ctx := newRequestContext(context.Background(), time.Now().Add(20*time.Millisecond))
		defer ctx.release()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		waitClosed(t, child.Done(), "child")
		require.ErrorIs(t, child.Err(), context.DeadlineExceeded)
	})
}

// BenchmarkRequestContext compares a request's context that nothing waits
// on with context.WithDeadline, on a cancelable parent as the connection's.
func BenchmarkRequestContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("WithDeadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithDeadline(parent, time.Now().Add(time.Second))
			_, _ = ctx.Deadline()
			cancel()
		}
	})
	b.Run("requestContext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := newRequestContext(parent, time.Now().Add(time.Second))
			_, _ = ctx.Deadline()
			ctx.release()
		}
	})
}
