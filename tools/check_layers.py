#!/usr/bin/env python3
"""Fails when a header includes one from a higher layer of the design's module table.

The layers, lowest first (docs/concepts.md): the vocabulary (units, error, limits, report,
concepts, detail/), hardware, model, training and frameworks (recipes), comm, parallel, lower,
analytic, sim, proteus (a lowering and its executor), search, calibrate, io. A header may
include its own layer and the ones below it; the umbrella headers may include anything."""
import os
import re
import sys

ORDER = ['vocabulary', 'hardware', 'model', 'training', 'comm', 'parallel', 'lower', 'analytic',
         'sim', 'proteus', 'search', 'calibrate', 'io']
UMBRELLAS = {'strata.hpp', 'plan.hpp', 'concepts.hpp'}


def layer(rel):
    top = rel.split('/')[0]
    if rel in ('training.hpp',) or top == 'frameworks':
        return 'training'
    if '/' not in rel or top == 'detail':
        return 'vocabulary'
    return top


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), '..', 'include', 'strata')
    bad = 0
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, '/')
            if rel in UMBRELLAS:
                continue
            for n, line in enumerate(open(path, encoding='utf-8'), 1):
                m = re.match(r'#include "strata/(.*)"', line)
                if not m:
                    continue
                target = m.group(1)
                if target in UMBRELLAS or ORDER.index(layer(target)) > ORDER.index(layer(rel)):
                    print(f'{rel}:{n}: includes {target}, a higher layer '
                          f'({layer(rel)} -> {layer(target)})')
                    bad += 1
    print(f'{bad} upward include(s)' if bad else 'no header includes a higher layer')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
