//go:build race

package sender

// raceEnabled scales the integration row count down under the race detector.
const raceEnabled = true
