package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseGoals(t *testing.T) {
	gs, err := parseGoals("all")
	require.NoError(t, err)
	assert.Equal(t, goalGroups, gs)
	gs, err = parseGoals("tables, eo,tables")
	require.NoError(t, err)
	assert.Equal(t, []string{"tables", "eo"}, gs)
	_, err = parseGoals("eo,speed")
	assert.ErrorContains(t, err, `"speed"`)
	gs, err = parseGoals("")
	require.NoError(t, err)
	assert.Empty(t, gs)
}

// The table's verdict follows the median against the bound's direction,
// and the spread is the repeats' lowest and highest.
func TestFormatGoalTable(t *testing.T) {
	out := formatGoalTable([]goal{
		{name: "saturation", figures: []float64{0.97, 0.90, 0.96}, unit: "×", bound: 0.95},
		{name: "cpu", figures: []float64{1.4, 1.1, 1.2}, unit: "×", bound: 1.15, atMost: true},
		{name: "rss", figures: []float64{150, 170}, unit: "MiB", bound: 164, atMost: true},
		{name: "tablet", unit: "×", bound: 1.3, atMost: true},
	})
	assert.Contains(t, out, "| saturation | 0.96× | 0.90×–0.97× | ≥ 0.95× | met |")
	assert.Contains(t, out, "| cpu | 1.20× | 1.10×–1.40× | ≤ 1.15× | **not met** |")
	assert.Contains(t, out, "| rss | 160 MiB | 150 MiB–170 MiB | ≤ 164 MiB | met |")
	assert.Contains(t, out, "| tablet | n/a | | ≤ 1.30× | not measured |")
}

// ratios pairs the repeats of two sides by their last (warm) round.
func TestGoalRatiosUseTheLastRound(t *testing.T) {
	run := func(records int, secs float64, cpu time.Duration) *runResult {
		return &runResult{records: records, secs: secs, gwCPU: cpu}
	}
	a := [][]*runResult{{run(100, 10, 0), run(100, 1, time.Second)}, {run(100, 2, 2*time.Second)}}
	b := [][]*runResult{{run(100, 2, time.Second)}, {run(100, 2, time.Second)}}
	assert.Equal(t, []float64{2, 1}, ratios(a, b, rate))
	assert.Equal(t, []float64{1, 2}, ratios(a, b, gwPerM))
}
