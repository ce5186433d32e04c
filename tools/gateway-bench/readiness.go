package main

import (
	"net/http"
	"sync"
	"time"
)

// readySampler asks the gateway's /readyz at a fixed interval while a run
// produces: a gateway that reports unready under load leaves its load
// balancer's pool although nothing failed.
type readySampler struct {
	stop, done chan struct{}
	mu         sync.Mutex
	samples    int
	notReady   int // answers other than 200, and no answer within a second
}

func sampleReadiness(adminURL string, every time.Duration) *readySampler {
	s := &readySampler{stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: max(every, time.Second)}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			ok := false
			if resp, err := client.Get(adminURL + "/readyz"); err == nil {
				ok = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
			s.mu.Lock()
			s.samples++
			if !ok {
				s.notReady++
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns how many samples were taken and how many
// of them were not 200.
func (s *readySampler) Stop() (samples, notReady int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.notReady
}
