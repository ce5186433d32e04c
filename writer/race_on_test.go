//go:build race

package writer

// raceEnabled scales the integration row count down under the race detector.
const raceEnabled = true
