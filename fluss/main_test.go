package fluss

import (
	"testing"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// TestMain stops the Fluss cluster that flusstest.Bootstrap may start for
// this test binary (when FLUSS_BOOTSTRAP is unset).
func TestMain(m *testing.M) { flusstest.Main(m) }
