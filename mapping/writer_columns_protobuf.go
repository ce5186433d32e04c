package mapping

import (
	"errors"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/schemaregistry"
)

// protobufWriterColumns derives columns from a Protobuf writer schema.
func protobufWriterColumns(*schemaregistry.Schema) ([]fluss.Column, error) {
	return nil, errors.New("deriving columns from a protobuf writer schema is not implemented yet (only avro)")
}
