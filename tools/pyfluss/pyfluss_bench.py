"""pyfluss baseline for tools/fluss-bench: write N rows to the given tables
through pyfluss (its Rust core), fire-and-forget then flush, and print one
JSON object {"rows": N, "seconds": S}. Run with the venv python from
scripts/pyfluss-venv.sh."""

import argparse
import asyncio
import json
import time

import fluss
import pyarrow as pa


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--tables", required=True, help="db.table,db.table,...")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--mode", choices=["row", "arrow"], default="row")
    p.add_argument("--batch-size", type=int, default=2 << 20)
    args = p.parse_args()

    cfg = fluss.Config({"bootstrap.servers": args.bootstrap, "writer.acks": "all"})
    cfg.writer_batch_size = args.batch_size
    conn = await fluss.FlussConnection.create(cfg)
    writers = []
    for name in args.tables.split(","):
        db, tbl = name.split(".", 1)
        table = await conn.get_table(fluss.TablePath(db, tbl))
        writers.append(table.new_append().create_writer())
    payload = "x" * 40
    per_table = args.rows // len(writers)
    start = time.perf_counter()
    if args.mode == "row":
        for i in range(per_table):
            for p_, w in enumerate(writers):
                w.append([(p_ << 32) | i, p_, payload])
    else:
        n = 1024
        batches = []
        for p_ in range(len(writers)):
            batches.append(pa.RecordBatch.from_arrays(
                [pa.array([(p_ << 32) | i for i in range(n)], pa.int64()),
                 pa.array([p_] * n, pa.int32()),
                 pa.array([payload] * n, pa.string())],
                names=["id", "producer", "payload"]))
        for _ in range(per_table // n):
            for w, b in zip(writers, batches):
                w.write_arrow_batch(b)
    for w in writers:
        await w.flush()
    elapsed = time.perf_counter() - start
    written = per_table * len(writers) if args.mode == "row" else (per_table // 1024) * 1024 * len(writers)
    print(json.dumps({"rows": written, "seconds": elapsed}))
    await conn.close()


asyncio.run(main())
