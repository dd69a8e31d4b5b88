#!/usr/bin/python3
"""Runs every traced scenario variant through aotcache.torch.aot_function
against one daemon and compares it with eager (oracle_compare); prints one
JSON object per variant: name, mode, status (hit/miss/bypass), differences.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/run_scenarios.py --server unix:SOCKET

The pytest suite runs it in a second process to check the warm path.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
sys.path.insert(0, HERE)

import oracle_compare  # noqa: E402
import scenarios  # noqa: E402
from aotcache.torch import aot_function  # noqa: E402


def traced_variants():
    return [v for v in scenarios.VARIANTS if v.hand_graph is None]


def run(variant, server):
    f = aot_function(variant.fn, server=server)
    compiled = oracle_compare.observe(variant, f)
    eager = oracle_compare.observe(variant)
    info = f.cache_info()
    return {
        "name": variant.name,
        "mode": info[0]["mode"] if info else "",
        "status": info[0]["status"] if info else "",
        "differences": oracle_compare.differences(eager, compiled),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    for v in traced_variants():
        print(json.dumps(run(v, args.server)), flush=True)


if __name__ == "__main__":
    main()
