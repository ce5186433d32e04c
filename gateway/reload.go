package gateway

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/fluss-kafka/gateway/configs"
)

// Reload re-reads the listeners' credentials files (as their watchers do)
// and the configuration file, and applies its routes, ACLs and quotas
// (kafka.quotas). A file that does not parse, or routes that do not fit
// their tables, are refused: the old routes, ACLs and quotas stay, the
// failure is logged and counted. Other settings need a restart; a change
// to them is logged and ignored.
func (g *Gateway) Reload(ctx context.Context, path string) bool {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	// The credentials files have their own result and log lines; a
	// reload is also the operator's way to apply one at once.
	g.reloadCredentials()
	refuse := func(err error) bool {
		g.m.reloaded(false)
		g.log.Error("config reload refused; keeping the current routes", slog.String("path", path), slog.Any("err", err))
		return false
	}
	cfg, err := configs.Load(path)
	if err != nil {
		return refuse(err)
	}
	warnPlainTextUsers(g.log, cfg)
	if !sameStatic(g.cfg, cfg) {
		g.log.Warn("config reload: only routes, acls and kafka.quotas are reloaded; other changed settings apply after a restart", slog.String("path", path))
	}
	// configs checked them; checked again here so that Store cannot fail
	// after the routes changed.
	limits := quotaLimits(cfg.Kafka.Quotas)
	if err := limits.Validate(); err != nil {
		return refuse(err)
	}
	if err := g.apply(ctx, cfg.Routes, true); err != nil {
		return refuse(err)
	}
	// Swapped after the routes, so all change together or none does.
	g.acls.Store(cfg.ACLs)
	if err := g.quotas.Store(limits); err != nil {
		g.log.Error("config reload: kafka.quotas not applied", slog.String("path", path), slog.Any("err", err))
	}
	g.m.reloaded(true)
	g.log.Info("config reloaded", slog.String("path", path), slog.Int("routes", len(cfg.Routes)), slog.Int("acls", len(cfg.ACLs)),
		slog.Int("quota_overrides", len(limits.Principals)+len(limits.ClientIDs)))
	return true
}

// sameStatic reports whether everything but the routes, ACLs and quotas is
// unchanged.
func sameStatic(a, b *configs.Config) bool {
	x, y := *a, *b
	x.Routes, y.Routes = nil, nil
	x.ACLs, y.ACLs = nil, nil
	x.Kafka.Quotas, y.Kafka.Quotas = configs.Quotas{}, configs.Quotas{}
	return reflect.DeepEqual(x, y)
}
