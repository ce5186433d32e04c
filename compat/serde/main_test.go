package serde_test

import (
	"testing"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// TestMain stops the Fluss cluster flusstest may have started; the registry
// registrytest starts on first use stops by itself when the binary exits.
func TestMain(m *testing.M) {
	flusstest.Main(m)
}
