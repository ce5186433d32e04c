package e2e

import (
	"testing"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

func TestMain(m *testing.M) {
	flusstest.Main(m)
}
