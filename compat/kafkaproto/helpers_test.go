package kafkaproto_test

import "strings"

// padding makes values compressible, so that clients which skip compression
// when it does not pay (librdkafka) still compress single-record batches.
var padding = strings.Repeat("compressible ", 20)
