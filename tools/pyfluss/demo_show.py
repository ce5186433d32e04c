#!/usr/bin/env python3
"""demo_show.py: print what the demo wrote, read back out of Fluss with pyfluss (tools/pyfluss/flusspy.py).

usage: demo_show.py FLUSSPY BOOTSTRAP CUSTOMERS DELETES   (run with the venv python of scripts/pyfluss-venv.sh)
"""

import base64
import collections
import json
import subprocess
import sys


def flusspy(cli, bootstrap, *args):
    out = subprocess.run([sys.executable, cli, args[0], "--bootstrap", bootstrap, *args[1:]],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def table(rows, cols):
    widths = [max(len(c), *(len(str(r.get(c))) for r in rows)) if rows else len(c) for c in cols]
    print("    " + "  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("    " + "  ".join(str(r.get(c)).ljust(w) for c, w in zip(cols, widths)))


def main():
    cli, bootstrap, customers, deletes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    orders = flusspy(cli, bootstrap, "scan-log", "--table", "shop.orders")["rows"]
    per_bucket = collections.Counter(r["bucket"] for r in orders)
    print(f"shop.orders (log table, JSON route): {len(orders)} rows; rows per bucket: {dict(sorted(per_bucket.items()))}")
    table([r["row"] for r in orders[:5]], ["order_id", "customer", "amount", "created_at", "kafka_partition"])

    dead = flusspy(cli, bootstrap, "scan-log", "--table", "shop.dead_letters")["rows"]
    print(f"\nshop.dead_letters (dlq of route orders): {len(dead)} rows")
    for r in dead[:5]:
        row = r["row"]
        value = base64.b64decode(row["kafka_value"]).decode("utf-8", "replace") if row["kafka_value"] else None
        print(f"    {row['kafka_topic']}/{row['kafka_partition']}  value={value}  reason={row['reason']}")

    keys = [{"id": f"cust-{i}"} for i in (1, 2, customers - deletes, customers - deletes + 1, customers)]
    found = flusspy(cli, bootstrap, "lookup", "--table", "shop.customers", "--keys-json", json.dumps(keys))["rows"]
    print(f"\nshop.customers (primary-key table, upserts; the last {deletes} deleted by tombstones): lookups")
    for k, row in zip(keys, found):
        print(f"    {k['id']:<10} -> {'(deleted)' if row is None else row}")

    clicks = flusspy(cli, bootstrap, "scan-log", "--table", "shop.clicks")["rows"]
    per_partition = collections.Counter(r["partition"] for r in clicks)
    print(f"\nshop.clicks (partitioned by day from the record timestamp): {len(clicks)} rows in partitions {dict(sorted(per_partition.items()))}")

    logs = flusspy(cli, bootstrap, "scan-log", "--table", "ops.raw_logs")["rows"]
    print(f"\nops.raw_logs (raw route for pattern logs\\..+): {len(logs)} rows, e.g.")
    for r in logs[:3]:
        row = r["row"]
        print(f"    topic={row['topic']} headers={row['headers']} payload={base64.b64decode(row['payload']).decode()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
