package mapping

import (
	"errors"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// jsonSchemaWriterColumns derives columns from a JSON Schema writer schema.
func jsonSchemaWriterColumns(*schemaregistry.Schema) ([]fluss.Column, error) {
	return nil, errors.New("deriving columns from a json_schema writer schema is not implemented yet (only avro)")
}
