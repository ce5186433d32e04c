package gateway

import (
	"testing"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/schemaregistry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestValidateChecksSubjectsLatestSchema: `gateway validate` checks a route
// naming a subject against that subject's latest schema: a field that
// cannot fill its column is reported with the column; a fitting schema
// passes; an unknown subject is reported.
func TestValidateChecksSubjectsLatestSchema(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("good-value", 1, 21, sr.Schema{Schema: `{"type": "record", "name": "Event", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}`})
	reg.SeedSchema("bad-value", 1, 22, sr.Schema{Schema: `{"type": "record", "name": "E", "fields": [{"name": "id", "type": "boolean"}]}`})
	info := &fluss.TableInfo{TableID: 7, Path: fluss.TablePath{Database: "db", Table: "events"}, Descriptor: fluss.TableDescriptor{
		Schema:      fluss.Schema{Columns: []fluss.Column{{Name: "id", Type: fluss.BigInt()}, {Name: "name", Type: fluss.String()}}},
		BucketCount: 1,
	}}
	route := func(topic, subject string) mapping.RouteSpec {
		return mapping.RouteSpec{Topic: topic, Table: info.Path, Value: mapping.ValueSpec{Format: mapping.ValueAvro, Subject: subject}}
	}
	rc := schemaregistry.DefaultConfig()
	rc.URLs = []string{reg.URL()}
	client, err := schemaregistry.New(rc)
	require.NoError(t, err)
	bind := func(specs ...mapping.RouteSpec) *mapping.Routes {
		rs, err := mapping.NewRoutes(specs)
		require.NoError(t, err)
		bound, err := rs.Bind(map[fluss.TablePath]*fluss.TableInfo{info.Path: info})
		require.NoError(t, err)
		return bound
	}
	require.NoError(t, checkSubjects(t.Context(), client, bind(route("a", "good-value"), route("b", ""))))
	err = checkSubjects(t.Context(), client, bind(route("a", "bad-value"), route("b", "missing-value")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `route "a"`)
	assert.Contains(t, err.Error(), `column "id"`)
	assert.Contains(t, err.Error(), `route "b": value.subject "missing-value"`)
}
