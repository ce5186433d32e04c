package sender

import "github.com/fluss-kafka/gateway/fluss"

// The real client is a Transport.
var _ Transport = (*fluss.Client)(nil)
