package gateway

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/fluss-kafka/gateway/configs"
)

// Reload re-reads the listeners' credentials files (as their watchers do)
// and the configuration file, and applies its routes and ACLs.
// A file that does not parse, or routes that do not fit their tables, are
// refused: the old routes and ACLs stay, the failure is logged and
// counted. Settings other than routes and ACLs need a restart; a change to
// them is logged and ignored.
func (g *Gateway) Reload(ctx context.Context, path string) bool {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	// The credentials files have their own result and log lines; a
	// reload is also the operator's way to apply one at once.
	g.reloadCredentials()
	cfg, err := configs.Load(path)
	if err != nil {
		g.m.reloaded(false)
		g.log.Error("config reload refused; keeping the current routes", slog.String("path", path), slog.Any("err", err))
		return false
	}
	warnPlainTextUsers(g.log, cfg)
	if !sameStatic(g.cfg, cfg) {
		g.log.Warn("config reload: only routes and acls are reloaded; other changed settings apply after a restart", slog.String("path", path))
	}
	if err := g.apply(ctx, cfg.Routes, true); err != nil {
		g.m.reloaded(false)
		g.log.Error("config reload refused; keeping the current routes", slog.String("path", path), slog.Any("err", err))
		return false
	}
	// Swapped after the routes, so both change together or neither does.
	g.acls.Store(cfg.ACLs)
	g.m.reloaded(true)
	g.log.Info("config reloaded", slog.String("path", path), slog.Int("routes", len(cfg.Routes)), slog.Int("acls", len(cfg.ACLs)))
	return true
}

// sameStatic reports whether everything but the routes and ACLs is
// unchanged.
func sameStatic(a, b *configs.Config) bool {
	x, y := *a, *b
	x.Routes, y.Routes = nil, nil
	x.ACLs, y.ACLs = nil, nil
	return reflect.DeepEqual(x, y)
}
