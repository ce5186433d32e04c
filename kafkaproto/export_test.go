package kafkaproto

// Exports for the external tests in package kafkaproto_test.
var (
	BatchHeaderLen = batchHeaderLen
	TopicIDForTest = topicID
)
