package gateway

import (
	"fmt"
	"strings"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
)

// routeSpecs copies the configuration's routes into mapping specs; compile
// them with mapping.NewRoutes and bind them to their tables with
// Routes.Bind (the tables to fetch are Routes.Tables).
func routeSpecs(routes []configs.Route) ([]mapping.RouteSpec, error) {
	specs := make([]mapping.RouteSpec, 0, len(routes))
	for i, r := range routes {
		table, err := parseTablePath(r.Table)
		if err != nil {
			return nil, fmt.Errorf("routes[%d] (%s).table: %w", i, r.Name, err)
		}
		s := mapping.RouteSpec{
			Name:    r.Name,
			Topic:   r.Topic,
			Pattern: r.Pattern,
			Table:   table,
			Value: mapping.ValueSpec{
				Format:        mapping.ValueFormat(r.Value.Format),
				Column:        r.Value.Column,
				Paths:         r.Value.Columns,
				UnknownFields: mapping.FieldPolicy(r.Value.UnknownFields),
				MissingFields: mapping.FieldPolicy(r.Value.MissingFields),
			},
			Key: mapping.KeySpec{
				Format: mapping.KeyFormat(r.Key.Format),
				Column: r.Key.Column,
				Paths:  r.Key.Columns,
			},
			Metadata: mapping.MetadataSpec{
				Key:           r.Metadata.Key,
				Headers:       r.Metadata.Headers,
				HeadersFormat: mapping.HeadersFormat(r.Metadata.HeadersFormat),
				Timestamp:     r.Metadata.Timestamp,
				Partition:     r.Metadata.Partition,
				Offset:        r.Metadata.Offset,
				Topic:         r.Metadata.Topic,
			},
			Tombstone: mapping.Tombstone(r.Tombstone),
			Errors:    mapping.ErrorSpec{Mode: mapping.ErrorMode(r.Errors.Mode)},
		}
		for _, p := range r.Partition {
			s.Partition = append(s.Partition, mapping.PartitionSpec{
				Column:   p.Column,
				From:     mapping.PartitionSource(p.From),
				Format:   p.Format,
				TimeZone: p.TimeZone,
			})
		}
		if r.Errors.DLQTable != "" {
			if s.Errors.DLQTable, err = parseTablePath(r.Errors.DLQTable); err != nil {
				return nil, fmt.Errorf("routes[%d] (%s).errors.dlq_table: %w", i, r.Name, err)
			}
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func parseTablePath(s string) (fluss.TablePath, error) {
	db, table, ok := strings.Cut(s, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return fluss.TablePath{}, fmt.Errorf("%q is not database.table", s)
	}
	return fluss.TablePath{Database: db, Table: table}, nil
}
