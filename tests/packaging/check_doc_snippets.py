#!/usr/bin/env python3
"""Checks that the code a document quotes is verbatim the code of the files it names.

Usage: check_doc_snippets.py ROOT DOC.md

In DOC, a line `<!-- snippet: PATH#NAME -->` must be followed by a fenced code block equal to the lines of
ROOT/PATH between the markers `[snippet NAME]` and `[end NAME]` (in a comment of that file, markers
excluded); `<!-- snippet: PATH -->` quotes the whole file. Every snippet marked in a quoted file must be quoted.
Exit 0 when all agree, 1 with each difference (the first differing line) otherwise.
"""
import os
import re
import sys


def regions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out, start = {}, {}
    for i, line in enumerate(lines):
        m = re.search(r"\[(snippet|end) ([A-Za-z0-9_-]+)\]\s*$", line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "snippet":
            start[name] = i + 1
        elif name in start:
            out[name] = lines[start.pop(name):i]
    if start:
        sys.exit("%s: [snippet %s] without [end %s]" % (path, ", ".join(start), ", ".join(start)))
    return out


def main():
    root, doc_path = sys.argv[1], sys.argv[2]
    doc = open(doc_path, encoding="utf-8").read().split("\n")
    errors, quoted, checked = [], {}, 0
    for i, line in enumerate(doc):
        m = re.match(r"<!-- snippet: (\S+?)(?:#(\S+))? -->$", line)
        if not m:
            continue
        rel, name = m.groups()
        where = "%s:%d (%s)" % (doc_path, i + 1, m.group(0))
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            errors.append("%s: %s does not exist" % (where, path))
            continue
        if name:
            found = regions(path)
            if name not in found:
                errors.append("%s: %s has no [snippet %s] ... [end %s]" % (where, rel, name, name))
                continue
            want = found[name]
            quoted.setdefault(rel, set()).add(name)
        else:
            want = open(path, encoding="utf-8").read().rstrip("\n").split("\n")
        if i + 1 >= len(doc) or not doc[i + 1].startswith("```"):
            errors.append("%s: not followed by a fenced code block" % where)
            continue
        end = next((k for k in range(i + 2, len(doc)) if doc[k].startswith("```")), None)
        if end is None:
            errors.append("%s: the code block is not closed" % where)
            continue
        got = doc[i + 2:end]
        if got != want:
            k = next((k for k in range(max(len(got), len(want)))
                      if k >= len(got) or k >= len(want) or got[k] != want[k]), 0)
            errors.append("%s: the quote differs from %s at its line %d:\n  doc:  %r\n  file: %r" % (
                where, rel, k + 1, got[k] if k < len(got) else "(end)", want[k] if k < len(want) else "(end)"))
        checked += 1
    for rel, names in quoted.items():
        missing = sorted(set(regions(os.path.join(root, rel))) - names)
        if missing:
            errors.append("%s: snippet(s) %s of %s are not quoted in %s" % (doc_path, ", ".join(missing), rel, doc_path))
    if checked == 0:
        errors.append("%s: no snippet markers found" % doc_path)
    for e in errors:
        print("ERROR " + e)
    if errors:
        return 1
    print("%d quoted snippet(s) agree with their files" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
