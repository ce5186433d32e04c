// Package flussfake is an in-process fake Fluss cluster for deterministic
// tests: one coordinator and N tablet servers, each a real TCP listener on
// 127.0.0.1:0 speaking Fluss's RPC framing, so the real fluss.Client talks
// to it unchanged.
//
// It serves what a writer needs: ApiVersions, GetMetadata, GetTableInfo,
// InitWriter, ProduceLog and PutKv (with Fluss's idempotence rules: a batch
// is accepted when its sequence is the writer's last + 1, a resend of one of
// the last five batches is answered with its original offset, anything else
// is OUT_OF_ORDER_SEQUENCE), and ListOffsets for verification. Tables are
// added with [Cluster.AddTable]; bucket b is led by tablet server b mod N
// until [Cluster.SetLeader] moves it.
//
// Tests steer it with hooks, in the spirit of kfake's ControlKey:
// [Cluster.Control] sees every request first and may answer it;
// [Cluster.HoldTable] withholds the responses of one table's writes until
// released (other requests on the same connection keep flowing: responses
// go out by request id, in any order); [Cluster.FailBucket] injects bucket
// errors. [Cluster.Connections] counts accepted connections per server.
//
// Every connection has one reader and one writer goroutine, and each
// request is handled in its own goroutine; [Cluster.Close] stops them all
// and waits. Test-only: production code never imports it.
package flussfake
