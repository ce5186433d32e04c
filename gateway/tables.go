package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// tableSource is what route binding needs from Fluss.
type tableSource interface {
	TableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error)
	// InvalidateTableInfo makes the next TableInfo ask the server.
	InvalidateTableInfo(path fluss.TablePath)
}

// bindRoutes compiles the configured routes, fetches every table they name
// and checks each route against its table. Every problem is reported, each
// naming its route, table and column. fresh reads every table from Fluss
// rather than from the client's cache (a reload: a table may have been
// re-created or altered since).
func bindRoutes(ctx context.Context, src tableSource, routes []mapping.RouteSpec, fresh bool) (*mapping.Routes, map[fluss.TablePath]*fluss.TableInfo, map[string]mapping.RouteSpec, error) {
	compiled, err := mapping.NewRoutes(routes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("compile routes: %w", err)
	}
	infos := make(map[fluss.TablePath]*fluss.TableInfo)
	for _, path := range compiled.Tables() {
		if fresh {
			src.InvalidateTableInfo(path)
		}
		info, err := src.TableInfo(ctx, path)
		if err != nil {
			if ctx.Err() != nil || !(errors.Is(err, fluss.ErrTableNotExist) || errors.Is(err, fluss.ErrDatabaseNotExist)) {
				// Not a missing table: Fluss unreachable or failing
				// (load retries what is transient).
				return nil, nil, nil, fmt.Errorf("get table info %s: %w", path, err)
			}
			// Bind reports the missing table with the routes that need it.
			continue
		}
		infos[path] = info
	}
	// A route that creates its missing table waits for its first record,
	// outside the bound routes.
	var creating map[string]mapping.RouteSpec
	var rest []mapping.RouteSpec
	for _, spec := range routes {
		if _, ok := infos[spec.Table]; !ok && spec.FollowSchema.Create && spec.Topic != "" {
			if creating == nil {
				creating = map[string]mapping.RouteSpec{}
			}
			creating[spec.Topic] = spec.WithDefaults()
			continue
		}
		rest = append(rest, spec)
	}
	if creating != nil {
		if compiled, err = mapping.NewRoutes(rest); err != nil {
			return nil, nil, nil, fmt.Errorf("compile routes: %w", err)
		}
	}
	bound, err := compiled.Bind(infos)
	if err != nil {
		return nil, nil, nil, err
	}
	return bound, infos, creating, nil
}
