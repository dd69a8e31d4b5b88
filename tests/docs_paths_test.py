#!/usr/bin/env python3
"""The docs name only paths that exist: every `path` in backticks under one
of the checkout's top-level directories, and every relative link, in
README.md and docs/*.md (docs/architecture.md's map and "start here" list
above all). A file moved or removed without its docs fails here."""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = {"bench", "client", "cmake", "core", "deploy", "docs", "examples", "proto",
       "scripts", "server", "tests", "tools"}
CODE = re.compile(r"`([A-Za-z0-9_./-]+)`")
LINK = re.compile(r"\]\(([^)#:]+)(#[^)]*)?\)")


def named_paths(text):
    """(path, relative_to_the_file) pairs the text names."""
    for m in CODE.finditer(text):
        token = m.group(1)
        if "/" in token and token.split("/")[0] in TOP:
            yield token.rstrip("/"), False
    for m in LINK.finditer(text):
        yield m.group(1), True


def main():
    docs = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    missing, checked = [], 0
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        for path, relative in named_paths(text):
            base = os.path.dirname(doc) if relative else ROOT
            checked += 1
            if not os.path.exists(os.path.join(base, path)):
                missing.append("%s: %s" % (os.path.relpath(doc, ROOT), path))
    if missing:
        print("paths the docs name that do not exist:\n  " + "\n  ".join(missing))
        return 1
    if checked < 50:
        print("only %d paths found in the docs: is the pattern still right?" % checked)
        return 1
    print("%d paths named in %d files, all present" % (checked, len(docs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
