package kafkaproto

// Exports for the external tests in package kafkaproto_test.
var (
	BatchHeaderLen = batchHeaderLen
	TopicIDForTest = topicID
)

// RaceEnabled reports a -race build (its instrumentation grows heaps and stacks).
var RaceEnabled = raceEnabled
