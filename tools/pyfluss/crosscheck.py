#!/usr/bin/env python3
"""crosscheck: bulk pyfluss operations for fluss/pyfluss_crosscheck_integration_test.go.

Run it with the venv python from scripts/pyfluss-venv.sh. It reuses flusspy.py's value conversions
(same directory), so the JSON value representation is flusspy's. Prints ONE JSON object on stdout;
errors go to stderr with exit status 1 (2 for bad usage). --bootstrap defaults to env FLUSS_BOOTSTRAP.

Subcommands and their output:
  lookup  --table T --keys-json '[{"id": 1}, ...]' [--lookupers N]
                                        {"rows": [row-or-null, ...]} in key order
          like flusspy lookup, but the keys are looked up concurrently through N lookupers
          (default 32): one pyfluss 1.0.0 lookuper answers one key at a time, about 100 ms each,
          which is 50 s for 500 keys. The key -> bucket routing is pyfluss's own, unchanged.
  version                               {"pyfluss": "1.0.0"} the installed pyfluss distribution
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
from typing import Any

import flusspy


async def cmd_lookup(conn, args) -> dict[str, Any]:
    if args.lookupers < 1:
        raise flusspy.UsageError("--lookupers wants a positive number")
    table = await conn.get_table(flusspy.table_path(args.table))
    schema = flusspy.arrow_schema(table)
    keys = [flusspy.json_row_to_py(k, schema) for k in flusspy.parse_json_list(args.keys_json, "--keys-json")]
    lookupers = [table.new_lookup().create_lookuper() for _ in range(min(args.lookupers, max(len(keys), 1)))]
    found = await asyncio.gather(*(lookupers[i % len(lookupers)].lookup(k) for i, k in enumerate(keys)))
    return {"rows": [None if row is None else {k: flusspy.py_to_json(v) for k, v in row.items()} for row in found]}


async def cmd_version(conn, args) -> dict[str, Any]:
    return {"pyfluss": importlib.metadata.version("pyfluss")}


COMMANDS = {"lookup": cmd_lookup, "version": cmd_version}
NEEDS_CLUSTER = {"lookup"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crosscheck", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        s = sub.add_parser(name)
        s.add_argument("--bootstrap", default=os.environ.get("FLUSS_BOOTSTRAP"),
                       help="coordinator host:port (default: env FLUSS_BOOTSTRAP)")
    s = sub.choices["lookup"]
    s.add_argument("--table", required=True, help="db.table")
    s.add_argument("--keys-json", required=True)
    s.add_argument("--lookupers", type=int, default=32)
    return p


async def run(args) -> dict[str, Any]:
    if args.command not in NEEDS_CLUSTER:
        return await COMMANDS[args.command](None, args)
    if not args.bootstrap:
        raise flusspy.UsageError("no --bootstrap and no env FLUSS_BOOTSTRAP")
    conn = await flusspy.connect(args.bootstrap)
    try:
        return await COMMANDS[args.command](conn, args)
    finally:
        await conn.close()


if __name__ == "__main__":
    flusspy.exit_now(flusspy.run_cli("crosscheck", parser, run))
