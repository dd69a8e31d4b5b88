"""Export a Python function as an aotcache graph and print its JSON.

    PYTHONPATH=client/python /usr/bin/python3 examples/export_graph.py > /tmp/g.json
    build/client/cli/aotcache analyze /tmp/g.json

Debian's torch is installed for Debian's interpreter (/usr/bin/python3).
"""

import json

import torch

from aotcache import export_graph


def f(a, w):
    # A tracked in-place op on an input that requires grad, and an output
    # that does not: PyTorch before #128229 chose inference here and lost
    # the gradient through `a`. aotcache decides training.
    a.mul_(w)
    return (a + 1).detach()


a = torch.randn(3, 3, requires_grad=True).clone()  # A non-leaf.
w = torch.randn(3, 3)
print(json.dumps(export_graph(f, a, w), indent=1))
