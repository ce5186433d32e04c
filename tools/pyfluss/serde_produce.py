#!/usr/bin/env python3
"""serde_produce: produce records framed by Confluent's own Python serializers, for the e2e tests.

Run it with the venv python from scripts/serde-venv.sh (confluent-kafka 2.16 with its avro, protobuf,
json and schemaregistry extras, and grpcio-tools). Each record of --records-file is serialized with
confluent-kafka's AvroSerializer, ProtobufSerializer or JSONSerializer against the registry at
--registry (a Confluent-compatible base URL such as http://127.0.0.1:8081/apis/ccompat/v7; env
SCHEMA_REGISTRY_URL by default), which registers the schema under the subject of the strategy (by
default TOPIC-value / TOPIC-key), and produced with a librdkafka Producer (acks=all, idempotence on)
to --bootstrap (env KAFKA_BOOTSTRAP by default). It flushes and prints ONE JSON object on stdout;
diagnostics go to stderr. Exit status 0 when every record was delivered (or, with --dry-run,
serialized), 1 otherwise, 2 for bad usage.

  serde_produce.py --registry URL --topic T --format avro|protobuf|json --schema-file F
                   --records-file R [--bootstrap HOST:PORT] [--dry-run]
                   [--message NAME] [--proto-path DIR]...
                   [--schema2-file F2 [--message2 NAME]]
                   [--key-field FIELD | --envelope] [--key-format string|avro|protobuf|json]
                   [--key-schema-file F] [--key-message NAME]
                   [--header-mode prefix|header] [--no-auto-register]
                   [--subject-strategy topic|record|topic_record]
                   [--producer-config k=v]... [--registry-config k=v]... [--timeout SECONDS]

  --schema-file     Avro: an .avsc; JSON: a JSON Schema document; Protobuf: a .proto file, compiled at
                    run time with the protoc of grpcio-tools (offline; google/protobuf/*.proto
                    imports resolve to the bundled well-known types; other imports are looked up in
                    the .proto's directory and every --proto-path), or a binary FileDescriptorSet
                    (protoc --include_imports --descriptor_set_out). --message names the message
                    (full name, e.g. shop.Order; default: the first message of the file).
  --schema2-file    a second value schema of the same format (--message2 names its Protobuf
                    message, as --message does), for a run MIXING writer schemas: with --envelope,
                    a line's "schema": 2 serializes its value with this one (1, the default, with
                    --schema-file). Both serializers register their schema under the same subject
                    (the strategy's; with --no-auto-register both use its latest version). Records
                    given the same "partition" and produced within --producer-config linger.ms
                    share one Kafka batch, so a batch can mix the two schemas. Needs --envelope.
  --records-file    JSON lines, one record per line ("-" for stdin; blank lines are skipped). Each
                    line is the value. For Avro, {"$bytes_b64": "..."} and {"$bytes_hex": "..."}
                    stand for bytes/fixed values and {"$decimal": "12.30"} for a decimal; times are
                    given as the numbers the logical types hold (timestamp-micros: microseconds).
                    Protobuf values use the proto3 JSON mapping (json_format.ParseDict); JSON values
                    are sent as they are (and checked against the schema).
  --envelope        each line is {"key": K, "value": V, "headers": {"name": "text" | null},
                    "partition": N, "schema": 1 | 2}; all fields optional; a null or missing value
                    is a tombstone; "schema" picks the value schema (--schema-file or
                    --schema2-file; default 1).
  --key-field F     the key is field F of each value (instead of --envelope).
  --key-format      string (default: a string key as UTF-8, anything else as compact JSON) or a
                    schema format, serialized with --key-schema-file (and --key-message) under the
                    key subject.
  --header-mode     prefix (default): magic byte 0 + 4-byte schema id before the payload (Protobuf
                    adds its message indexes). header: the payload alone and the schema GUID in the
                    header __value_schema_id / __key_schema_id (0x01 + 16 bytes); this needs a
                    registry that returns GUIDs, which Apicurio 3.3.3 does not ("Schema GUID is not
                    set"); with --no-auto-register it works against registries that list a GUID in
                    GET subjects/S/versions/latest.
  --no-auto-register  use the subject's latest version instead of registering the schema.
  --dry-run         serialize only (the schemas are still registered): no broker is contacted, and
                    the output lists every record's bytes as hex.
  --producer-config extra librdkafka settings, e.g. compression.type=zstd, linger.ms=0.
  --registry-config extra SchemaRegistryClient settings, e.g. basic.auth.user.info=u:p.

Output:
  {"topic", "format", "records": n, "serialized": n, "delivered": n, "dry_run": bool,
   "value_schema_ids": [ids], "key_schema_ids": [ids], "error_count": n,
   "value_schema_ids_by_schema": {"1": [ids], "2": [ids]}   (by the value schema that framed them),
   "errors": [{"index": i, "stage": "serialize"|"produce"|"deliver", "error": "..."}] (first 50),
   "partitions": {"0": count, ...},
   "records_hex": [{"index", "key", "value", "headers": {"name": hex}}]   (only with --dry-run)}
  Schema ids are read from the prefix framing (empty in header mode); hex values are lowercase.
"""

from __future__ import annotations

import argparse
import base64
import decimal
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Optional

MAX_ERRORS = 50


def die(msg: str, code: int = 1) -> None:
    print(f"serde_produce: error: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_kv(pairs: list[str], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k:
            die(f"{what} wants key=value, got {p!r}", 2)
        out[k] = v
    return out


# --------------------------------------------------------------------------- records


def avro_value(v: Any) -> Any:
    """Turns the JSON stand-ins for bytes and decimals into Python values, recursively."""
    if isinstance(v, dict):
        if len(v) == 1:
            (k, inner), = v.items()
            if k == "$bytes_b64":
                return base64.b64decode(inner, validate=True)
            if k == "$bytes_hex":
                return bytes.fromhex(inner)
            if k == "$decimal":
                return decimal.Decimal(inner)
        return {k: avro_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [avro_value(x) for x in v]
    return v


def read_lines(path: str) -> list[Any]:
    f = sys.stdin if path == "-" else open(path, encoding="utf-8")
    try:
        out = []
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                die(f"{path}:{n}: not JSON: {e}", 2)
        return out
    finally:
        if f is not sys.stdin:
            f.close()


# --------------------------------------------------------------------------- protobuf


def proto_message_class(schema_file: str, message: Optional[str], proto_path: list[str], own_pool: bool = False):
    """Returns the generated-at-run-time message class for message of schema_file.

    The file's descriptors go into protobuf's default pool, or with own_pool into a pool of their
    own: a second version of a schema declares the same file and message names, which one pool
    cannot hold twice.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with open(schema_file, "rb") as f:
        data = f.read()
    fds = descriptor_pb2.FileDescriptorSet()
    main_name = None
    if schema_file.endswith(".proto"):
        fds, main_name = compile_proto(schema_file, proto_path)
    else:
        try:
            fds.ParseFromString(data)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            die(f"{schema_file}: neither a .proto file nor a FileDescriptorSet: {e}", 2)
        if not fds.file:
            die(f"{schema_file}: empty FileDescriptorSet", 2)
        main_name = fds.file[-1].name  # protoc lists dependencies first
    pool = descriptor_pool.DescriptorPool() if own_pool else descriptor_pool.Default()
    for fdp in fds.file:
        try:
            pool.FindFileByName(fdp.name)  # a well-known type already in the default pool
            continue
        except KeyError:
            pass
        pool.Add(fdp)
    main = pool.FindFileByName(main_name)
    if message is None:
        if not main.message_types_by_name:
            die(f"{schema_file} defines no message", 2)
        desc = next(iter(main.message_types_by_name.values()))
    else:
        try:
            desc = pool.FindMessageTypeByName(message)
        except KeyError:
            names = sorted(m.full_name for m in main.message_types_by_name.values())
            die(f"no message {message!r} in {schema_file} (top-level messages: {', '.join(names)})", 2)
    return message_factory.GetMessageClass(desc)


def compile_proto(schema_file: str, proto_path: list[str]):
    """Compiles schema_file with grpcio-tools' protoc into a FileDescriptorSet with its imports."""
    import importlib.resources

    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    src_dir = os.path.dirname(os.path.abspath(schema_file))
    includes = [src_dir] + [os.path.abspath(p) for p in proto_path] + [wkt]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        args = ["protoc"] + [f"-I{d}" for d in includes] + [
            "--include_imports",
            f"--descriptor_set_out={out}",
            os.path.abspath(schema_file),
        ]
        rc = protoc.main(args)  # protoc's own messages go to stderr
        if rc != 0:
            die(f"protoc could not compile {schema_file} (exit {rc})", 2)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    return fds, os.path.relpath(os.path.abspath(schema_file), src_dir)


# --------------------------------------------------------------------------- serializers


def make_serializer(fmt: str, schema_file: str, message: Optional[str], args, client, own_pool: bool = False) -> Callable:
    """Returns serialize(obj, ctx) -> bytes for one side (key or value); own_pool as for proto_message_class."""
    from confluent_kafka.schema_registry import (
        header_schema_id_serializer,
        prefix_schema_id_serializer,
        record_subject_name_strategy,
        topic_record_subject_name_strategy,
        topic_subject_name_strategy,
    )

    conf: dict[str, Any] = {
        "auto.register.schemas": not args.no_auto_register,
        "use.latest.version": args.no_auto_register,
        "subject.name.strategy": {
            "topic": topic_subject_name_strategy,
            "record": record_subject_name_strategy,
            "topic_record": topic_record_subject_name_strategy,
        }[args.subject_strategy],
        "schema.id.serializer": header_schema_id_serializer if args.header_mode == "header" else prefix_schema_id_serializer,
    }
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer

        with open(schema_file, encoding="utf-8") as f:
            ser = AvroSerializer(client, f.read(), conf=conf)
        return lambda obj, ctx: ser(avro_value(obj), ctx)
    if fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        with open(schema_file, encoding="utf-8") as f:
            ser = JSONSerializer(f.read(), client, conf=conf)
        return lambda obj, ctx: ser(obj, ctx)
    if fmt == "protobuf":
        from google.protobuf import json_format

        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        cls = proto_message_class(schema_file, message, args.proto_path, own_pool)
        conf["use.deprecated.format"] = False
        ser = ProtobufSerializer(cls, client, conf=conf)

        def serialize(obj, ctx):
            return ser(json_format.ParseDict(obj, cls()), ctx)

        return serialize
    raise AssertionError(fmt)


def string_key(v: Any) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    return json.dumps(v, separators=(",", ":"), sort_keys=True).encode("utf-8")


def framed_id(b: Optional[bytes]) -> Optional[int]:
    """The schema id of Confluent's prefix framing, or None."""
    if b is not None and len(b) >= 5 and b[0] == 0:
        return int.from_bytes(b[1:5], "big")
    return None


class QuietLogger:
    """librdkafka's log lines on stderr, the first few only (a dead broker logs every few ms)."""

    LIMIT = 5

    def __init__(self) -> None:
        self.seen = 0

    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        self.seen += 1
        if self.seen <= self.LIMIT:
            print(f"serde_produce: librdkafka: {msg % args if args else msg}", file=sys.stderr)
        elif self.seen == self.LIMIT + 1:
            print("serde_produce: librdkafka: (further log lines suppressed)", file=sys.stderr)


# --------------------------------------------------------------------------- main


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description="Produce records framed by Confluent's Python serializers.")
    p.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP"))
    p.add_argument("--registry", default=os.environ.get("SCHEMA_REGISTRY_URL"))
    p.add_argument("--topic", required=True)
    p.add_argument("--format", required=True, choices=["avro", "protobuf", "json"])
    p.add_argument("--schema-file", required=True)
    p.add_argument("--records-file", required=True)
    p.add_argument("--message")
    p.add_argument("--schema2-file")
    p.add_argument("--message2")
    p.add_argument("--proto-path", action="append", default=[])
    kg = p.add_mutually_exclusive_group()
    kg.add_argument("--key-field")
    kg.add_argument("--envelope", action="store_true")
    p.add_argument("--key-format", default="string", choices=["string", "avro", "protobuf", "json"])
    p.add_argument("--key-schema-file")
    p.add_argument("--key-message")
    p.add_argument("--header-mode", default="prefix", choices=["prefix", "header"])
    p.add_argument("--no-auto-register", action="store_true")
    p.add_argument("--subject-strategy", default="topic", choices=["topic", "record", "topic_record"])
    p.add_argument("--producer-config", action="append", default=[])
    p.add_argument("--registry-config", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)

    if not args.registry:
        die("--registry (or env SCHEMA_REGISTRY_URL) is required", 2)
    if not args.dry_run and not args.bootstrap:
        die("--bootstrap (or env KAFKA_BOOTSTRAP) is required unless --dry-run", 2)
    if args.key_format != "string" and not args.key_schema_file:
        die(f"--key-format {args.key_format} wants --key-schema-file", 2)
    if args.schema2_file and not args.envelope:
        die("--schema2-file wants --envelope (a line's \"schema\": 2 selects it)", 2)
    if args.message2 and not args.schema2_file:
        die("--message2 wants --schema2-file", 2)

    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": args.registry, **parse_kv(args.registry_config, "--registry-config")})
    value_sers = {1: make_serializer(args.format, args.schema_file, args.message, args, client)}
    if args.schema2_file:
        value_sers[2] = make_serializer(args.format, args.schema2_file, args.message2, args, client, own_pool=True)
    key_ser = None
    if args.key_format != "string":
        key_ser = make_serializer(args.key_format, args.key_schema_file, args.key_message, args, client)

    lines = read_lines(args.records_file)
    errors: list[dict[str, Any]] = []
    error_count = 0

    def error(index: int, stage: str, err: Any) -> None:
        nonlocal error_count
        error_count += 1
        if len(errors) < MAX_ERRORS:
            errors.append({"index": index, "stage": stage, "error": str(err)})
        if error_count <= 5:
            print(f"serde_produce: record {index}: {stage}: {err}", file=sys.stderr)

    value_ids: set[int] = set()
    ids_by_schema: dict[str, set[int]] = {}
    key_ids: set[int] = set()
    serialized: list[tuple[int, Optional[bytes], Optional[bytes], list, Optional[int]]] = []
    for i, line in enumerate(lines):
        if args.envelope:
            if not isinstance(line, dict):
                error(i, "serialize", "--envelope wants a JSON object per line")
                continue
            key_obj, value_obj = line.get("key"), line.get("value")
            hdrs = line.get("headers") or {}
            partition = line.get("partition")
            which = line.get("schema", 1)
            if which not in value_sers:
                error(i, "serialize", f"\"schema\": {which!r}: not 1 or 2 (2 wants --schema2-file)")
                continue
        else:
            value_obj, hdrs, partition, which = line, {}, None, 1
            key_obj = None
            if args.key_field is not None:
                if not isinstance(line, dict) or args.key_field not in line:
                    error(i, "serialize", f"no field {args.key_field!r} for the key")
                    continue
                key_obj = line[args.key_field]
        headers = [(k, None if v is None else str(v).encode("utf-8")) for k, v in hdrs.items()]
        try:
            if key_obj is None:
                key = None
            elif key_ser is None:
                key = string_key(key_obj)
            else:
                key = key_ser(key_obj, SerializationContext(args.topic, MessageField.KEY, headers))
            value = None
            if value_obj is not None:
                value = value_sers[which](value_obj, SerializationContext(args.topic, MessageField.VALUE, headers))
        except Exception as e:  # noqa: BLE001 - report every failure with its record
            error(i, "serialize", f"{type(e).__name__}: {e}")
            continue
        if args.header_mode == "prefix":
            if (vid := framed_id(value)) is not None:
                value_ids.add(vid)
                ids_by_schema.setdefault(str(which), set()).add(vid)
            if key_ser is not None and (kid := framed_id(key)) is not None:
                key_ids.add(kid)
        serialized.append((i, key, value, headers, partition))

    delivered = 0
    partitions: dict[str, int] = {}
    out: dict[str, Any] = {"topic": args.topic, "format": args.format, "records": len(lines),
                           "serialized": len(serialized), "dry_run": args.dry_run}
    if args.dry_run:
        out["records_hex"] = [
            {"index": i, "key": None if k is None else k.hex(), "value": None if v is None else v.hex(),
             "headers": {hk: None if hv is None else hv.hex() for hk, hv in h}}
            for i, k, v, h, _ in serialized
        ]
    else:
        conf = {
            "bootstrap.servers": args.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": int(args.timeout * 1000),
        }
        conf.update(parse_kv(args.producer_config, "--producer-config"))
        producer = Producer(conf, logger=QuietLogger())

        def on_delivery(index: int):
            def cb(err, msg):
                nonlocal delivered
                if err is not None:
                    error(index, "deliver", err)
                    return
                delivered += 1
                part = str(msg.partition())
                partitions[part] = partitions.get(part, 0) + 1
            return cb

        for i, k, v, h, part in serialized:
            kwargs: dict[str, Any] = {"key": k, "value": v, "headers": h or None, "on_delivery": on_delivery(i)}
            if part is not None:
                kwargs["partition"] = int(part)
            deadline = time.monotonic() + args.timeout
            while True:
                try:
                    producer.produce(args.topic, **kwargs)
                    break
                except BufferError:
                    if time.monotonic() > deadline:
                        error(i, "produce", "local queue full")
                        break
                    producer.poll(0.2)
                except Exception as e:  # noqa: BLE001
                    error(i, "produce", f"{type(e).__name__}: {e}")
                    break
            producer.poll(0)
        remaining = producer.flush(args.timeout)
        if remaining:
            error(-1, "deliver", f"{remaining} record(s) still undelivered after {args.timeout}s")
    out.update({
        "delivered": delivered,
        "value_schema_ids": sorted(value_ids),
        "value_schema_ids_by_schema": {k: sorted(v) for k, v in sorted(ids_by_schema.items())},
        "key_schema_ids": sorted(key_ids),
        "partitions": partitions,
        "error_count": error_count,
        "errors": errors,
    })
    print(json.dumps(out, separators=(",", ":")))
    if error_count:
        return 1
    if not args.dry_run and delivered != len(lines):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
