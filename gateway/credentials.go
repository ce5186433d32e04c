package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/jwtauth"
)

// credentialsPoll is how often the credentials files are compared with
// what is in force: a Kubernetes Secret update shows within it.
const credentialsPoll = 5 * time.Second

// openCredentials opens each listener's credentials file, once per path
// (listeners may share one), and hands the listener its store.
func (g *Gateway) openCredentials() error {
	byPath := map[string]*credentials.Store{}
	for i := range g.set.listeners {
		l := &g.set.listeners[i]
		if l.credentialsFile == "" {
			continue
		}
		st, ok := byPath[l.credentialsFile]
		if !ok {
			var err error
			st, err = credentials.Open(l.credentialsFile, g.log.With(slog.String("component", "credentials")), g.m.credentialsReloaded)
			if err != nil {
				return fmt.Errorf("listeners[%d] (%s).sasl.credentials_file: %w", i, l.name, err)
			}
			byPath[l.credentialsFile] = st
			g.credentials = append(g.credentials, st)
			g.log.Info("sasl credentials loaded", slog.String("path", st.Path()), slog.Int("users", st.Users()))
		}
		l.kafka.SASL.Credentials = st
	}
	return nil
}

// openTokenValidators makes each OAUTHBEARER listener's token validator
// (a JWKS file is read now; a URL is first fetched by refreshTokenKeys)
// and hands it to the listener.
func (g *Gateway) openTokenValidators() error {
	for i := range g.set.listeners {
		l := &g.set.listeners[i]
		if l.oauth == nil {
			continue
		}
		v, err := jwtauth.New(*l.oauth, g.log.With(slog.String("component", "jwtauth"), slog.String("listener", l.name)))
		if err != nil {
			return fmt.Errorf("listeners[%d] (%s).sasl.oauthbearer: %w", i, l.name, err)
		}
		g.tokenValidators = append(g.tokenValidators, v)
		l.kafka.SASL.Tokens = v
	}
	return nil
}

// refreshTokenKeys keeps the validators' keys fresh until ctx ends; the
// returned func waits for them to stop.
func (g *Gateway) refreshTokenKeys(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, v := range g.tokenValidators {
		wg.Go(func() { v.Run(ctx) })
	}
	return wg.Wait
}

// watchCredentials re-reads the credentials files every poll until ctx
// ends; the returned func waits for the watchers to stop.
func (g *Gateway) watchCredentials(ctx context.Context, poll time.Duration) (wait func()) {
	var wg sync.WaitGroup
	for _, st := range g.credentials {
		wg.Go(func() { st.Watch(ctx, poll) })
	}
	return wg.Wait
}

// reloadCredentials re-reads the credentials files now (SIGHUP).
func (g *Gateway) reloadCredentials() {
	for _, st := range g.credentials {
		st.Reload()
	}
}

// warnPlainTextUsers logs, for each listener whose users have plain-text
// passwords in the configuration file, that they belong in a credentials
// file.
func warnPlainTextUsers(log *slog.Logger, cfg *configs.Config) {
	for i, l := range cfg.Listeners {
		if l.SASL != nil && len(l.SASL.Users) > 0 {
			log.Warn("plain-text SASL passwords in the configuration file; move the users to a credentials file (gateway credentials add)",
				slog.String("key", fmt.Sprintf("listeners[%d].sasl.users", i)), slog.String("listener", l.Name),
				slog.String("instead", fmt.Sprintf("listeners[%d].sasl.credentials_file", i)))
		}
	}
}
