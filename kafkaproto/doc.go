// Package kafkaproto serves the producer side of the Kafka protocol: the TCP
// (optionally TLS) listener, request framing, one handler per API key
// (files named after the key, as in franz-go's kfake), SASL PLAIN,
// SCRAM-SHA-256/512 and OAUTHBEARER (tokens checked by a [TokenValidator];
// sessions end at the token's expiry and are renewed by KIP-368
// re-authentication), decoding of RecordBatch v2 in every codec, and the
// idempotent-producer sequence checks. Decoded records go to a [Sink] per
// topic-partition; the package knows nothing of Fluss.
//
// # Advertised APIs
//
// See 18_api_versions.go: Produce 0-12 (served 3-12), Fetch 4-12 (refused),
// Metadata 0-12, FindCoordinator 0-6 (transaction keys served only with a
// [Transactions] backend, group keys refused), SaslHandshake 0-1 and
// SaslAuthenticate 0-2 (with SASL only), ApiVersions 0-4, InitProducerId
// 0-5, and with [Transactions] AddPartitionsToTxn, AddOffsetsToTxn (refused)
// and EndTxn 0-3. Unknown keys and versions outside these ranges close the
// connection.
//
// # Goroutines and lifetime
//
// [Server.Serve] blocks accepting connections. Each connection has one reader
// goroutine (parses requests, runs handlers, hands batches to the Sink in
// arrival order) and one writer goroutine (the only one writing to the
// socket; it writes responses in request order, waiting for Produce results
// as needed). Both are counted in the Server's WaitGroup.
// [Server.Shutdown] closes the listeners and stops reading new requests,
// answers every request already received (a Produce once its writes
// complete), half-closes each connection and closes it; a request only
// partly received is abandoned, none of it having reached the Sink. So a
// client never has to resend a request whose records were written. Past
// Shutdown's ctx it calls [Server.Close], which closes everything at once.
// Both are idempotent.
//
// Back-pressure and hostile clients: at most Config.MaxInFlightRequests
// requests per connection are read ahead of their responses; what requests
// pin over all connections is charged to one memory budget (Config.Memory,
// which the backend may share, or a private one of Config.MaxReadBytes; see
// readbudget.go): a request's bytes until it is handled, counted as they
// arrive rather than as declared (a request up to 1 MiB reserves its size,
// a larger one what it has received, at most twice), and every record batch
// decoded from it (its decompressed records, or for codec none its bytes in
// the request, plus the decoded records) until the sink releases it. No
// reservation asks for more than 1 MiB at once, so a giant request cannot
// make small ones wait behind it; decoded batches are charged without
// waiting, and while the budget is used up no connection reads its next
// request, so a sink that keeps batches stops the reads.
// Each request must arrive within Config.RequestReadTimeout plus its size
// at Config.MinReadBytesPerSecond. A connection's first request is bounded
// by Config.MaxFirstRequestBytes, every request before SASL authentication
// by 512 KiB, later ones by Config.MaxFrameBytes. A Sink that blocks for
// buffer space stops the reader too. A client that does not read its
// responses is disconnected after Config.WriteTimeout; one that sends
// nothing after Config.IdleTimeout. Warnings a client can trigger are
// rate-limited.
//
// # Client quotas
//
// [WithProduceQuota] charges each Produce request's record batch bytes to
// the client's quota ([ProduceQuota]; package quota holds Kafka's
// producer_byte_rate rule). A client over its quota gets throttle_time_ms
// and its connection is muted (no further request read) for that time, as
// a Kafka broker does since KIP-219; a Produce v3-v5 response is also held
// until then, since those clients do not wait by themselves (quota.go).
//
// # Readiness and authorization
//
// [WithReadyCheck] gates Metadata, Produce and InitProducerId on the
// backend being ready, answering retriable errors meanwhile. A Backend
// that implements [Authorizer] decides which principal (SASL user, the
// name a verified client certificate maps to by [PrincipalRules], or
// [AnonymousPrincipal]) may describe and write which topic.
//
// # Idempotent producers
//
// InitProducerId hands out ids from [ProducerIDs] (unique across gateway
// instances). For each (producer id, topic, partition) the gateway keeps the
// producer epoch, the last sequence and the last 5 batches with their
// [PartitionWrite]s, like a Kafka broker:
//   - a batch equal (first and last sequence) to a remembered one is a retry:
//     it is answered with the original result, waiting for it if it is still
//     in flight, and is not passed to the sink again; if the original write
//     failed, the retry is passed to the sink again in its slot;
//   - a newer epoch must start at sequence 0, an older epoch gets
//     INVALID_PRODUCER_EPOCH, a gap gets OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//   - a producer id without state (new, expired, evicted, or known only to
//     another instance) is accepted at any sequence (KIP-360 behaviour);
//   - failed writes at the tail of the window are forgotten, so the client's
//     retry or its next batch continues the sequence.
//
// The state lives in this gateway instance only. If a producer reconnects to
// another instance (a restart, or a load balancer in front of several), that
// instance has no state for it and accepts its next batch at any sequence:
// ordering and gap detection restart there, and a retry of a batch the first
// instance had already written is written again (a duplicate). Clients that
// stick to one instance (Metadata names only the instance they connected to)
// get exactly-once appends per partition as long as the state is not expired
// (Config.ProducerStateTTL) or evicted (Config.MaxProducerStates). Ordering
// across a failed batch relies on the sink failing later batches of the same
// partition too (the accumulator's per-bucket order).
//
// Transactions are not supported: a transactional id or transactional batch
// gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (see 22_init_producer_id.go).
//
// # Errors
//
// errors.go holds the single translation from errors to Kafka codes,
// including the table sinks should follow for backend failures.
//
// kafkaproto must not import fluss, mapping, writer, configs or the gateway:
// it imports no package of this module.
package kafkaproto
