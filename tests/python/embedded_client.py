#!/usr/bin/python3
"""One of two processes that start together on the embedded default (no
server configured): waits until both are ready, compiles and runs a
function, and prints its source ("server" or "in_process") and key.

    embedded_client.py BARRIER_DIR INDEX
"""

import os
import sys
import time

import torch

from aotcache.torch import aot_function


def main():
    barrier, index = sys.argv[1], sys.argv[2]
    open(os.path.join(barrier, index), "w").close()
    deadline = time.time() + 60
    while len(os.listdir(barrier)) < 2:  # Both started before either compiles.
        if time.time() > deadline:
            sys.exit("the other process never started")
        time.sleep(0.01)
    g = aot_function(lambda x, w: (x @ w).tanh().sum())
    x, w = torch.randn(4, 3), torch.randn(3, 2, requires_grad=True)
    g(x, w).backward()
    info = g.cache_info()[0]
    print(info["source"], info["key"])


if __name__ == "__main__":
    main()
