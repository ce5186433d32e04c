package accumulator

import "github.com/fluss-kafka/gateway/fluss"

// The fluss batch builders fit the interfaces the accumulator declares.
var (
	_ LogBuilder = (*fluss.ArrowLogBuilder)(nil)
	_ LogBuilder = (*fluss.IndexedLogBuilder)(nil)
	_ KvBuilder  = (*fluss.KvBatchBuilder)(nil)
)
