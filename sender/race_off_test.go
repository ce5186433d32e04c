//go:build !race

package sender

const raceEnabled = false
