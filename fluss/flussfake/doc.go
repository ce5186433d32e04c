// Package flussfake is an in-process fake Fluss cluster for deterministic
// tests: one coordinator and N tablet servers, each a real TCP listener on
// 127.0.0.1:0 speaking Fluss's RPC framing, so the real fluss.Client talks
// to it unchanged.
//
// It serves what a writer needs: ApiVersions, GetMetadata (tables and
// partitions, by id or name), GetTableInfo, ListPartitionInfos,
// CreatePartition (coordinator), InitWriter, ProduceLog and PutKv (with
// Fluss's idempotence rules: a batch is accepted when its sequence is the
// writer's last + 1, a resend of one of the last five batches is answered
// with its original offset, anything else is OUT_OF_ORDER_SEQUENCE), Lookup
// (every key not found: no values are kept) and ListOffsets for
// verification. Tables are added with [Cluster.AddTable], partitions with
// [Cluster.AddPartition] (each with its own bucket count) or by the client's
// CreatePartition; bucket b is led by tablet server b mod N until
// [Cluster.SetLeader] or [Cluster.SetPartitionLeader] moves it.
//
// # Versions
//
// By default it speaks Fluss 0.9.1-incubating: PRODUCE_LOG 0, PUT_KV 0–1,
// LOOKUP 0–1, no per-partition bucket count in metadata, and the 1.0
// request fields are ignored, as a 0.9.1 server skips unknown fields.
// [WithVersion10] makes it speak Fluss 1.0.0:
//
//   - ApiVersions offers PRODUCE_LOG 0–1, PUT_KV 0–3 and LOOKUP 0–1;
//   - GetMetadata reports PbPartitionMetadata.bucket_count, rack,
//     remote_data_dir and bucket_count_epoch; ListPartitionInfos reports
//     each partition's bucket_count;
//   - a write or lookup item whose routing_bucket_count is present but is
//     not its partition's (or table's) bucket count is answered with
//     INVALID_BUCKET_ROUTING (74) for that bucket, and nothing is stored;
//   - PUT_KV answers at v2 and later carry the pressure set by
//     [Cluster.SetPressure].
//
// [Cluster.Rescale] is ALTER TABLE SET ('bucket.num' = n): partitions
// created afterwards get n buckets, existing ones keep theirs, and from then
// on an item without routing_bucket_count is answered with 74 too
// ([Cluster.StrictRouting] turns that check on or off by itself). For
// example, after
//
//	fc, _ := flussfake.NewCluster(flussfake.WithVersion10())
//	id, _ := fc.AddTable(path, desc) // partitioned, 2 buckets
//	p1, _ := fc.AddPartition(id, fluss.PartitionSpec{{Key: "day", Value: "d1"}}, 0)
//	_ = fc.Rescale(id, 4)
//
// a ProduceLog to p1 must carry RoutingBucketCount 2, and a partition
// created now has 4 buckets.
//
// # Hooks
//
// Tests steer it in the spirit of kfake's ControlKey:
// [Cluster.Control] sees every request first and may answer it;
// [Cluster.HoldTable] withholds the responses of one table's writes until
// released (other requests on the same connection keep flowing: responses
// go out by request id, in any order); [Cluster.FailBucket] injects bucket
// errors (72 STORAGE_BACKPRESSURE_EXCEPTION becomes 11 for PUT_KV below v2,
// as a real server downgrades it), [Cluster.SetPressure] sets a bucket's
// PUT_KV pressure, e.g.
//
//	fc.SetPressure(tableID, fluss.NoPartition, 0, 0.5) // BucketResult.Pressure == 0.5
//	fc.FailBucket(tableID, fluss.NoPartition, 0, 72)   // next write: ErrStorageBackpressure
//
// [Cluster.Writes] records every ProduceLog, PutKv and Lookup bucket item
// received, with its API version, routing_bucket_count, partition name and
// the error answered, e.g.
//
//	w := fc.Writes()[0] // w.Version == 1, w.HasRoutingBucketCount, w.RoutingBucketCount == 2
//
// [Cluster.StopServer] stops one server (later dials are refused), e.g. the
// coordinator to show that metadata and InitWriter carry on through tablet
// servers. [Cluster.Connections] counts accepted connections per server.
//
// Every connection has one reader and one writer goroutine, and each
// request is handled in its own goroutine; [Cluster.Close] stops them all
// and waits. Test-only: production code never imports it.
package flussfake
