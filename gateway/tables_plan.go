package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemafollow"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// `gateway tables plan|apply`: the clients from the configuration, and
// schemafollow's plans for its routes.

// PlanTables computes the plans of cfg's routes that name a value subject
// (only the route named route, if not empty).
func PlanTables(ctx context.Context, cfg *configs.Config, route string) ([]*schemafollow.TablePlan, error) {
	set, err := settingsFrom(cfg)
	if err != nil {
		return nil, err
	}
	if set.registry == nil {
		return nil, errors.New("tables plan needs schema_registry: the tables follow registry writer schemas")
	}
	client, err := fluss.NewClient(set.fluss)
	if err != nil {
		return nil, fmt.Errorf("fluss client: %w", err)
	}
	defer client.Close()
	reg, err := schemaregistry.New(*set.registry)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	defer reg.Close()
	var plans []*schemafollow.TablePlan
	found := false
	for _, spec := range set.routes {
		spec = spec.WithDefaults()
		if route != "" && spec.Name != route {
			continue
		}
		found = true
		if spec.Value.Subject == "" {
			if route != "" {
				return nil, fmt.Errorf("route %q names no value.subject: there is no writer schema to plan from", route)
			}
			continue
		}
		p, err := schemafollow.Plan(ctx, client, reg, spec)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", spec.Name, err)
		}
		plans = append(plans, p)
	}
	if route != "" && !found {
		return nil, fmt.Errorf("no route named %q", route)
	}
	return plans, nil
}

// ApplyTables issues plans (schemafollow.Apply) with a Fluss client from
// cfg.
func ApplyTables(ctx context.Context, cfg *configs.Config, plans []*schemafollow.TablePlan) error {
	set, err := settingsFrom(cfg)
	if err != nil {
		return err
	}
	client, err := fluss.NewClient(set.fluss)
	if err != nil {
		return fmt.Errorf("fluss client: %w", err)
	}
	defer client.Close()
	return schemafollow.Apply(ctx, client, plans)
}
