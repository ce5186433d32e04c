package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestReadySamplerCountsUnreadyAnswers(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if n.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	s := sampleReadiness(srv.URL, 5*time.Millisecond)
	assert.Eventually(t, func() bool { return n.Load() >= 5 }, 10*time.Second, time.Millisecond)
	samples, notReady := s.Stop()
	assert.GreaterOrEqual(t, samples, 5)
	assert.Equal(t, 2, notReady, "the first two answers were 503, the others 200")
}
