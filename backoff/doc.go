// Package backoff owns the one retry delay of the product: a capped
// doubling delay (Initial, 2·Initial, 4·Initial, … never more than Max)
// with optional jitter, and a wait for it that ends with a context.
//
// A [Policy] is the rule and gives the delay for a numbered attempt, for
// callers that keep their own attempt counts (the sender keeps one per
// bucket); a [Sequence] is one retry loop's state under a policy: Next
// after each failure, Reset after a success. [Sleep] waits out a delay
// unless the context ends first.
//
// It imports nothing of the product, so that every layer (fluss,
// kafkaproto, sender, gateway) may use it; it holds no package-level state.
package backoff
