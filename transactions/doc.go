// Package transactions is the transaction coordinator of Kafka's
// transactional producers (docs/transactions.md). Claims (claims.go) give
// a transactional id its producer id and epoch and fence the one before;
// the ledger (ledger.go) records each transaction's begin and outcome in
// the transactions table (table.go); batches are staged in the staging
// table (staging.go) and answered once durable; a commit reads them back
// and writes them through the produce path's exactly-once writer
// (produce.Path.Replay) before EndTxn is answered; a sweeper (sweeper.go)
// on every instance aborts transactions past their timeout and applies
// commits an instance decided and did not finish; view.go answers the
// Admin APIs (DescribeTransactions, ListTransactions, DescribeProducers).
//
// Coordinator implements kafkaproto's Transactions and TransactionsViewer,
// and produce.TxnStager, to which the produce path hands every
// transactional batch.
//
// Imports point down: transactions imports produce, exactlyonce (the
// writer agreement of replays, writers.go), producerstate, owntable,
// answer, mapping, accumulator, fluss and kafkaproto; never gateway.
package transactions
