package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readiness reports why the gateway is not ready, or nil when it is.
type readiness func() error

// adminServer serves /metrics, /livez and /readyz on the admin address,
// and Go's profiles under /debug/pprof/ when asked to.
type adminServer struct {
	srv *http.Server
	log *slog.Logger
}

func newAdminServer(reg *prometheus.Registry, ready readiness, profiles bool, log *slog.Logger) *adminServer {
	mux := http.NewServeMux()
	if profiles {
		// The handlers of net/http/pprof, on this mux rather than
		// http.DefaultServeMux.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return &adminServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		log: log,
	}
}

// Serve blocks until the listener is closed by Shutdown.
func (a *adminServer) Serve(l net.Listener) error {
	err := a.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("admin server: %w", err)
}

func (a *adminServer) Shutdown(ctx context.Context) error {
	return a.srv.Shutdown(ctx)
}
