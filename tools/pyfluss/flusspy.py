#!/usr/bin/env python3
"""flusspy: a small CLI over the pyfluss client, the independent Fluss reader/writer of the e2e tests.

Run it with the venv python from scripts/pyfluss-venv.sh. Every subcommand prints ONE JSON object on
stdout; errors go to stderr with exit status 1 (2 for bad usage). --bootstrap defaults to env
FLUSS_BOOTSTRAP. Tables are named "db.table".

Subcommands and their output:
  info          --table T                      {"table_id", "num_buckets", "columns": [{"name","type"}],
                                                "primary_keys", "bucket_keys", "partition_keys",
                                                "partitions": [{"id","name"}], "properties"}
  create-table  --table T --schema-json S [--primary-key a,b] [--buckets N] [--bucket-keys a]
                [--partition-keys p] [--log-format ARROW|INDEXED] [--kv-format COMPACTED|INDEXED]
                [--property k=v]...            {"table_id", "num_buckets"}
                S = [{"name": "id", "type": "int"}, ...]; types: boolean tinyint smallint int bigint
                float double string bytes date time timestamp(p) timestamp_ltz(p) decimal(p,s)
  drop-table    --table T                      {"dropped": true}
  create-partition --table T --spec-json '{"region": "US"}'   {"created": true} (exists: no error)
  scan-log      --table T [--timeout SECONDS]  {"rows": [{"partition", "bucket", "offset",
                                                "change_type", "row": {column: value}}]}
                all rows of every bucket (and partition) from the earliest offset up to the latest
                offsets taken when the command starts; sorted by partition, bucket, offset. A log
                table is read through Arrow batches (exact values, change_type "+A"); a primary-key
                table's changelog through records (change types +I -U +U -D; times to microseconds).
  list-offsets  --table T [--spec latest|earliest|timestamp:MILLIS]
                                               {"offsets": [{"partition", "bucket", "offset"}]}
  lookup        --table T --keys-json '[{"id": 1}, ...]'
                                               {"rows": [row-or-null, ...]} in key order
  upsert        --table T --rows-json '[{...}, ...]'    {"upserted": n}
  delete        --table T --keys-json '[{"id": 1}, ...]' {"deleted": n}
  append        --table T --rows-json '[{...}, ...]'    {"appended": n}
  buckets-of    --table T --keys-json '[{"id": 1}, ...]' [--timeout SECONDS]
                                               {"buckets": [{"partition", "bucket"} or null, ...]}
                the bucket in which each key's rows sit, found by scanning the table's log or
                changelog (write the keys first, e.g. with upsert or append); null if not seen.

Value representation (the same in input and output):
  BOOLEAN, integers           JSON booleans and numbers (decode int64 with json.Number in Go)
  FLOAT, DOUBLE               numbers; "NaN", "Infinity", "-Infinity" as strings
  STRING, CHAR                strings
  BYTES, BINARY               standard base64 strings (with padding)
  DECIMAL                     strings in plain notation with the column's scale, e.g. "12.30"
  DATE                        "YYYY-MM-DD"
  TIME                        "HH:MM:SS.fffffffff" (always nine fraction digits)
  TIMESTAMP                   "YYYY-MM-DDTHH:MM:SS.fffffffff" (nine digits, no zone)
  TIMESTAMP_LTZ               "YYYY-MM-DDTHH:MM:SS.fffffffffZ" (UTC)
  ARRAY / MAP / ROW           JSON arrays / arrays of {"key","value"} / objects
  partition                   the partition name, or null for a non-partitioned table
Inputs accept fewer fraction digits; pyfluss writes times with microsecond precision.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import decimal
import json
import math
import os
import re
import sys
import time
from typing import Any

import fluss
import pyarrow as pa

EPOCH = dt.datetime(1970, 1, 1)
UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


class UsageError(Exception):
    pass


# ---------------------------------------------------------------- value conversion: out


def fmt_ns_timestamp(ns: int, ltz: bool) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    text = (EPOCH + dt.timedelta(seconds=secs)).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}"
    return text + "Z" if ltz else text


def fmt_ns_time(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}.{frac:09d}"


def fmt_float(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def py_to_json(v: Any) -> Any:
    """Converts a value as pyfluss returns it in a record row to its JSON form."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return fmt_float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if hasattr(v, "value") and hasattr(v, "tz") and hasattr(v, "to_pydatetime"):  # pandas.Timestamp
        ltz = v.tz is not None
        return fmt_ns_timestamp(int(v.value), ltz)
    if isinstance(v, dt.datetime):
        ltz = v.tzinfo is not None
        if ltz:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = v - EPOCH
        ns = (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
        return fmt_ns_timestamp(ns, ltz)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return fmt_ns_time(((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000_000 + v.microsecond * 1000)
    if isinstance(v, dict):
        return {str(k): py_to_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, tuple) and len(x) == 2 for x in v) and v and isinstance(v, list):
            return [{"key": py_to_json(k), "value": py_to_json(x)} for k, x in v]
        return [py_to_json(x) for x in v]
    raise TypeError(f"cannot represent {type(v).__name__} value {v!r} as JSON")


def arrow_column_to_json(col: pa.Array) -> list[Any]:
    """Converts one Arrow column exactly (timestamps and times keep nanoseconds)."""
    t = col.type
    if pa.types.is_timestamp(t):
        mult = UNIT_NS[t.unit]
        ints = col.cast(pa.int64()).to_pylist()
        return [None if x is None else fmt_ns_timestamp(x * mult, t.tz is not None) for x in ints]
    if pa.types.is_time(t):
        mult = UNIT_NS[t.unit]
        ints = col.cast(pa.int32() if pa.types.is_time32(t) else pa.int64()).to_pylist()
        return [None if x is None else fmt_ns_time(x * mult) for x in ints]
    if pa.types.is_date32(t):
        days = col.cast(pa.int32()).to_pylist()
        return [None if x is None else (dt.date(1970, 1, 1) + dt.timedelta(days=x)).isoformat() for x in days]
    # Nested columns are converted child by child, so that their timestamps and times are exact too.
    # The children of list and map arrays are taken whole, with the parent's offsets into them.
    if pa.types.is_map(t):
        keys, items, offs = arrow_column_to_json(col.keys), arrow_column_to_json(col.items), col.offsets.to_pylist()
        valid = col.is_valid().to_pylist()
        return [[{"key": keys[j], "value": items[j]} for j in range(offs[i], offs[i + 1])] if valid[i] else None
                for i in range(len(col))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values, offs = arrow_column_to_json(col.values), col.offsets.to_pylist()
        valid = col.is_valid().to_pylist()
        return [values[offs[i]:offs[i + 1]] if valid[i] else None for i in range(len(col))]
    if pa.types.is_struct(t):
        fields = [(t.field(f).name, arrow_column_to_json(col.field(f))) for f in range(t.num_fields)]
        valid = col.is_valid().to_pylist()
        return [{name: vals[i] for name, vals in fields} if valid[i] else None for i in range(len(col))]
    return [py_to_json(x) for x in col.to_pylist()]


def arrow_batch_to_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    cols = [arrow_column_to_json(batch.column(i)) for i in range(batch.num_columns)]
    names = batch.schema.names
    return [{names[c]: cols[c][r] for c in range(len(names))} for r in range(batch.num_rows)]


# ---------------------------------------------------------------- value conversion: in

_TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?$")
_TIME_RE = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def _micros(frac: str | None) -> int:
    return int((frac or "0").ljust(9, "0")[:6])


def json_to_py(v: Any, t: pa.DataType) -> Any:
    """Converts a JSON input value to what the pyfluss writers and lookuper accept for type t."""
    if v is None:
        return None
    if pa.types.is_boolean(t):
        if not isinstance(v, bool):
            raise UsageError(f"want a boolean for {t}, got {v!r}")
        return v
    if pa.types.is_integer(t):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise UsageError(f"want an integer for {t}, got {v!r}")
        return int(v)
    if pa.types.is_floating(t):
        return float(v)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return str(v)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64decode(v, validate=True)
    if pa.types.is_decimal(t):
        return decimal.Decimal(str(v))
    if pa.types.is_date(t):
        return dt.date.fromisoformat(v)
    if pa.types.is_time(t):
        m = _TIME_RE.match(v)
        if not m:
            raise UsageError(f"want HH:MM:SS[.fffffffff] for {t}, got {v!r}")
        return dt.time(int(m.group(1)), int(m.group(2)), int(m.group(3)), _micros(m.group(4)))
    if pa.types.is_timestamp(t):
        if isinstance(v, int):
            d = EPOCH + dt.timedelta(milliseconds=v)
        else:
            m = _TS_RE.match(v)
            if not m:
                raise UsageError(f"want YYYY-MM-DDTHH:MM:SS[.fffffffff][Z] for {t}, got {v!r}")
            d = dt.datetime.fromisoformat(m.group(1)).replace(
                hour=int(m.group(2)), minute=int(m.group(3)), second=int(m.group(4)), microsecond=_micros(m.group(5)))
            zone = m.group(6)
            if zone and zone != "Z":
                sign = 1 if zone[0] == "+" else -1
                d -= sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        return d.replace(tzinfo=dt.timezone.utc) if t.tz is not None else d
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [json_to_py(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        return [(json_to_py(e["key"], t.key_type), json_to_py(e["value"], t.item_type)) for e in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: json_to_py(v.get(t.field(i).name), t.field(i).type) for i in range(t.num_fields)}
    raise UsageError(f"unsupported column type {t}")


def json_row_to_py(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise UsageError(f"want a JSON object per row, got {row!r}")
    out = {}
    for name, v in row.items():
        idx = schema.get_field_index(name)
        if idx < 0:
            raise UsageError(f"no column {name!r} (columns: {', '.join(schema.names)})")
        out[name] = json_to_py(v, schema.field(idx).type)
    return out


# ---------------------------------------------------------------- type names for create-table


def arrow_type(name: str) -> pa.DataType:
    n = name.strip().lower()
    simple = {
        "boolean": pa.bool_(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
        "integer": pa.int32(), "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(),
        "string": pa.string(), "bytes": pa.binary(), "date": pa.date32(), "time": pa.time32("ms"),
        "timestamp": pa.timestamp("us"), "timestamp_ltz": pa.timestamp("us", tz="UTC"),
    }
    if n in simple:
        return simple[n]
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", n)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r"(timestamp|timestamp_ltz)\((\d)\)", n)
    if m:
        p = int(m.group(2))
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if m.group(1) == "timestamp_ltz" else None)
    m = re.fullmatch(r"array<(.+)>", n)
    if m:
        return pa.list_(arrow_type(m.group(1)))
    raise UsageError(f"unknown type {name!r}")


# ---------------------------------------------------------------- fluss plumbing


def arrow_schema(table) -> pa.Schema:
    s = table.arrow_schema  # a method in the stubs, a property in some builds
    return s() if callable(s) else s


def table_path(name: str) -> fluss.TablePath:
    db, sep, tbl = name.partition(".")
    if not sep or not db or not tbl:
        raise UsageError(f"--table wants db.table, got {name!r}")
    return fluss.TablePath(db, tbl)


async def connect(bootstrap: str) -> fluss.FlussConnection:
    return await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap, "writer.acks": "all"}))


async def partitions_of(admin, path, info) -> list[tuple[int | None, str | None]]:
    if not info.is_partitioned():
        return [(None, None)]
    infos = await admin.list_partition_infos(path)
    return sorted((p.partition_id, p.partition_name) for p in infos)


async def offsets(admin, path, info, spec) -> dict[tuple[int | None, int], tuple[str | None, int]]:
    """(partition_id, bucket) -> (partition_name, offset)."""
    out = {}
    buckets = list(range(info.num_buckets))
    for pid, pname in await partitions_of(admin, path, info):
        if pid is None:
            got = await admin.list_offsets(path, bucket_ids=buckets, offset_spec=spec)
        else:
            got = await admin.list_partition_offsets(path, pname, bucket_ids=buckets, offset_spec=spec)
        for b, off in got.items():
            out[(pid, int(b))] = (pname, int(off))
    return out


def subscribe_all(scanner, targets) -> None:
    plain = {b: fluss.EARLIEST_OFFSET for (pid, b) in targets if pid is None}
    parted = {(pid, b): fluss.EARLIEST_OFFSET for (pid, b) in targets if pid is not None}
    if plain:
        scanner.subscribe_buckets(plain)
    if parted:
        scanner.subscribe_partition_buckets(parted)


async def scan_rows(conn, admin, path, timeout: float) -> list[dict[str, Any]]:
    """Every row up to the latest offsets at call time, for log and primary-key tables."""
    info = await admin.get_table_info(path)
    latest = await offsets(admin, path, info, fluss.OffsetSpec.latest())
    targets = {k: v for k, v in latest.items() if v[1] > 0}
    rows: list[dict[str, Any]] = []
    if not targets:
        return rows
    table = await conn.get_table(path)
    pnames = {pid: pname for (pid, _), (pname, _) in latest.items()}
    next_offset = {k: 0 for k in targets}
    deadline = time.monotonic() + timeout

    def done() -> bool:
        return all(next_offset[k] >= targets[k][1] for k in targets)

    def add(pid, bucket, offset, change_type, row):
        key = (pid, bucket)
        if key not in targets or offset >= targets[key][1]:
            return
        rows.append({"partition": pnames.get(pid), "bucket": bucket, "offset": offset,
                     "change_type": change_type, "row": row})
        next_offset[key] = max(next_offset[key], offset + 1)

    if info.has_primary_key():
        scanner = await table.new_scan().create_log_scanner()
        subscribe_all(scanner, targets)
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"scan of {path} stopped short of the latest offsets: {missing(next_offset, targets)}")
            recs = await scanner.poll(1000)
            for tb, records in recs.items():
                for r in records:
                    add(tb.partition_id, tb.bucket_id, r.offset, r.change_type.short_string(),
                        {k: py_to_json(v) for k, v in r.row.items()})
    else:
        scanner = await table.new_scan().create_record_batch_log_scanner()
        subscribe_all(scanner, targets)
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"scan of {path} stopped short of the latest offsets: {missing(next_offset, targets)}")
            for rb in await scanner.poll_record_batch(1000):
                tb = rb.bucket
                for i, row in enumerate(arrow_batch_to_rows(rb.batch)):
                    add(tb.partition_id, tb.bucket_id, rb.base_offset + i, "+A", row)
    rows.sort(key=lambda r: (r["partition"] or "", r["bucket"], r["offset"]))
    return rows


def missing(next_offset, targets) -> str:
    return ", ".join(f"bucket {b} partition {pid}: at {next_offset[(pid, b)]} of {targets[(pid, b)][1]}"
                     for (pid, b) in targets if next_offset[(pid, b)] < targets[(pid, b)][1])


def parse_json_list(text: str, what: str) -> list[Any]:
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{what}: {e}") from e
    if not isinstance(v, list):
        raise UsageError(f"{what} wants a JSON array")
    return v


# ---------------------------------------------------------------- subcommands


async def cmd_info(conn, admin, args) -> dict[str, Any]:
    path = table_path(args.table)
    info = await admin.get_table_info(path)
    parts = [] if not info.is_partitioned() else [
        {"id": pid, "name": name} for pid, name in await partitions_of(admin, path, info)]
    return {
        "table_id": info.table_id, "schema_id": info.schema_id, "num_buckets": info.num_buckets,
        "columns": [{"name": n, "type": t} for n, t in info.get_schema().get_columns()],
        "primary_keys": info.get_primary_keys(), "bucket_keys": info.get_bucket_keys(),
        "partition_keys": info.get_partition_keys(), "partitions": parts,
        "properties": info.get_properties(),
    }


async def cmd_create_table(conn, admin, args) -> dict[str, Any]:
    path = table_path(args.table)
    cols = parse_json_list(args.schema_json, "--schema-json")
    fields = []
    for c in cols:
        if not isinstance(c, dict) or "name" not in c or "type" not in c:
            raise UsageError("--schema-json wants [{\"name\": ..., \"type\": ...}, ...]")
        fields.append(pa.field(c["name"], arrow_type(c["type"]), nullable=c.get("nullable", True)))
    pk = [x for x in (args.primary_key or "").split(",") if x]
    schema = fluss.Schema(pa.schema(fields), primary_keys=pk) if pk else fluss.Schema(pa.schema(fields))
    kwargs: dict[str, Any] = {}
    if args.buckets:
        kwargs["bucket_count"] = args.buckets
    if args.bucket_keys:
        kwargs["bucket_keys"] = args.bucket_keys.split(",")
    if args.partition_keys:
        kwargs["partition_keys"] = args.partition_keys.split(",")
    if args.log_format:
        kwargs["log_format"] = args.log_format
    if args.kv_format:
        kwargs["kv_format"] = args.kv_format
    if args.property:
        props = {}
        for kv in args.property:
            k, sep, v = kv.partition("=")
            if not sep:
                raise UsageError(f"--property wants key=value, got {kv!r}")
            props[k] = v
        kwargs["properties"] = props
    await admin.create_database(path.database_name, ignore_if_exists=True)
    # A Fluss 0.9.1 tablet server can get a new bucket's leadership before it sees the
    # schema, fail to create the replica and never retry: re-create such a table (as
    # fluss.Client.CreateTableReady does in Go).
    for attempt in range(3):
        if attempt:
            await admin.drop_table(path, True)
        await admin.create_table(path, fluss.TableDescriptor(schema, **kwargs), False)
        info = await admin.get_table_info(path)
        if args.partition_keys:
            break
        try:
            await wait_for_leaders(admin, path, info, timeout=30.0)
            break
        except Exception:
            if attempt == 2:
                raise
    return {"table_id": info.table_id, "num_buckets": info.num_buckets}


async def wait_for_leaders(admin, path, info, timeout: float = 60.0) -> None:
    """Wait until every bucket of a new table has a serving leader, as pyfluss's own
    test setup does: a write to a bucket whose leader is not ready can hang."""
    deadline = time.monotonic() + timeout
    buckets = list(range(info.num_buckets))
    while True:
        try:
            await admin.list_offsets(path, bucket_ids=buckets, offset_spec=fluss.OffsetSpec.latest())
            return
        except Exception as e:  # pyfluss raises one generic error type
            msg = str(e).lower()
            if time.monotonic() > deadline or not ("leader" in msg or "unknown table or bucket" in msg):
                raise
        await asyncio.sleep(0.2)


async def cmd_drop_table(conn, admin, args) -> dict[str, Any]:
    await admin.drop_table(table_path(args.table), False)
    return {"dropped": True}


async def cmd_create_partition(conn, admin, args) -> dict[str, Any]:
    spec = json.loads(args.spec_json)
    if not isinstance(spec, dict):
        raise UsageError("--spec-json wants an object such as {\"region\": \"US\"}")
    await admin.create_partition(table_path(args.table), {k: str(v) for k, v in spec.items()}, True)
    return {"created": True}


async def cmd_scan_log(conn, admin, args) -> dict[str, Any]:
    return {"rows": await scan_rows(conn, admin, table_path(args.table), args.timeout)}


async def cmd_list_offsets(conn, admin, args) -> dict[str, Any]:
    path = table_path(args.table)
    if args.spec == "latest":
        spec = fluss.OffsetSpec.latest()
    elif args.spec == "earliest":
        spec = fluss.OffsetSpec.earliest()
    elif args.spec.startswith("timestamp:"):
        spec = fluss.OffsetSpec.timestamp(int(args.spec.split(":", 1)[1]))
    else:
        raise UsageError(f"--spec wants latest, earliest or timestamp:MILLIS, got {args.spec!r}")
    info = await admin.get_table_info(path)
    got = await offsets(admin, path, info, spec)
    out = [{"partition": pname, "bucket": b, "offset": off} for (pid, b), (pname, off) in got.items()]
    out.sort(key=lambda r: (r["partition"] or "", r["bucket"]))
    return {"offsets": out}


async def cmd_lookup(conn, admin, args) -> dict[str, Any]:
    table = await conn.get_table(table_path(args.table))
    schema = arrow_schema(table)
    lk = table.new_lookup().create_lookuper()
    rows = []
    for key in parse_json_list(args.keys_json, "--keys-json"):
        row = await lk.lookup(json_row_to_py(key, schema))
        rows.append(None if row is None else {k: py_to_json(v) for k, v in row.items()})
    return {"rows": rows}


WRITE_TIMEOUT = 90.0


async def write_rows(conn, args, kind: str) -> int:
    table = await conn.get_table(table_path(args.table))
    schema = arrow_schema(table)
    text = args.keys_json if kind == "delete" else args.rows_json
    rows = [json_row_to_py(r, schema) for r in parse_json_list(text, "--keys-json" if kind == "delete" else "--rows-json")]
    if kind == "append":
        w = table.new_append().create_writer()
        handles = [w.append(r) for r in rows]
    else:
        w = table.new_upsert().create_writer()
        handles = [w.delete(r) if kind == "delete" else w.upsert(r) for r in rows]
    try:
        await asyncio.wait_for(w.flush(), timeout=WRITE_TIMEOUT)
    except asyncio.TimeoutError:
        raise RuntimeError(f"{kind} of {len(rows)} rows to {args.table} not acknowledged within {WRITE_TIMEOUT}s") from None
    for h in handles:  # surface per-record errors where the client reports them
        wait = getattr(h, "wait", None)
        if wait is not None:
            res = wait()
            if asyncio.iscoroutine(res) or isinstance(res, asyncio.Future):
                await res
    return len(rows)


async def cmd_upsert(conn, admin, args) -> dict[str, Any]:
    return {"upserted": await write_rows(conn, args, "upsert")}


async def cmd_delete(conn, admin, args) -> dict[str, Any]:
    return {"deleted": await write_rows(conn, args, "delete")}


async def cmd_append(conn, admin, args) -> dict[str, Any]:
    return {"appended": await write_rows(conn, args, "append")}


async def cmd_buckets_of(conn, admin, args) -> dict[str, Any]:
    path = table_path(args.table)
    table = await conn.get_table(path)
    schema = arrow_schema(table)
    keys = parse_json_list(args.keys_json, "--keys-json")
    # Canonical form of each key: its JSON representation after a round trip through the column types.
    want = []
    for k in keys:
        py = json_row_to_py(k, schema)
        want.append({name: py_to_json(v) for name, v in py.items()})
    found: list[Any] = [None] * len(want)
    for r in await scan_rows(conn, admin, path, args.timeout):
        for i, k in enumerate(want):
            if all(r["row"].get(name) == v for name, v in k.items()):
                found[i] = {"partition": r["partition"], "bucket": r["bucket"]}
    return {"buckets": found}


COMMANDS = {
    "info": cmd_info, "create-table": cmd_create_table, "drop-table": cmd_drop_table,
    "create-partition": cmd_create_partition,
    "scan-log": cmd_scan_log, "list-offsets": cmd_list_offsets, "lookup": cmd_lookup,
    "upsert": cmd_upsert, "delete": cmd_delete, "append": cmd_append, "buckets-of": cmd_buckets_of,
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flusspy", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        s = sub.add_parser(name)
        s.add_argument("--bootstrap", default=os.environ.get("FLUSS_BOOTSTRAP"),
                       help="coordinator host:port (default: env FLUSS_BOOTSTRAP)")
        s.add_argument("--table", required=True, help="db.table")
        if name in ("scan-log", "buckets-of"):
            s.add_argument("--timeout", type=float, default=60.0, help="seconds to reach the latest offsets")
        if name in ("lookup", "delete", "buckets-of"):
            s.add_argument("--keys-json", required=True)
        if name in ("upsert", "append"):
            s.add_argument("--rows-json", required=True)
        if name == "create-partition":
            s.add_argument("--spec-json", required=True)
        if name == "list-offsets":
            s.add_argument("--spec", default="latest")
        if name == "create-table":
            s.add_argument("--schema-json", required=True)
            s.add_argument("--primary-key")
            s.add_argument("--buckets", type=int)
            s.add_argument("--bucket-keys")
            s.add_argument("--partition-keys")
            s.add_argument("--log-format")
            s.add_argument("--kv-format")
            s.add_argument("--property", action="append")
    return p


async def run(args) -> dict[str, Any]:
    if not args.bootstrap:
        raise UsageError("no --bootstrap and no env FLUSS_BOOTSTRAP")
    conn = await connect(args.bootstrap)
    try:
        return await COMMANDS[args.command](conn, conn.get_admin(), args)
    finally:
        await conn.close()


def run_cli(name: str, make_parser, run_fn) -> int:
    """Parse the arguments, run the command and print its JSON result; usage errors exit
    with 2, any other failure with 1 and a message on stderr. Shared with crosscheck.py."""
    args = make_parser().parse_args()
    try:
        out = asyncio.run(run_fn(args))
    except UsageError as e:
        print(f"{name} {args.command}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - every failure becomes a message and exit status 1
        print(f"{name} {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, allow_nan=False, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


def exit_now(code: int) -> None:
    """Flush and leave. pyfluss's native runtime sometimes aborts (SIGABRT) while the
    interpreter shuts down, after all work is done and the connection is closed; leave
    without the interpreter's finalisation."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(run_cli("flusspy", parser, run))
