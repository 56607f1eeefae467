#!/usr/bin/env python3
"""Reads a glTF/GLB file's morph data by hand (json + struct only) and prints the rows of an
`Expected` table for tests/conformance.rs.

Independent of facewire and of the `gltf` crate: accessors are decoded from the glTF 2.0
specification (byteOffset, byteStride, component types, normalisation, sparse substitution).
Vertices are numbered as facewire loads them: a primitive without NORMAL is flat-shaded, so its
loaded vertex k is the file's vertex indices[k].

Usage: python3 tests/gltf_reference.py FIXTURES_DIR RELATIVE_PATH CONST_NAME
(then rustfmt the pasted table; the Rust tests never run this script)
"""
import json
import os
import struct
import sys

COMPONENT = {5120: ('b', 1), 5121: ('B', 1), 5122: ('h', 2), 5123: ('H', 2), 5125: ('I', 4), 5126: ('f', 4)}
WIDTH = {'SCALAR': 1, 'VEC2': 2, 'VEC3': 3, 'VEC4': 4, 'MAT4': 16}


def load(path):
    raw = open(path, 'rb').read()
    if raw[:4] == b'glTF':
        json_len = struct.unpack_from('<I', raw, 12)[0]
        doc = json.loads(raw[20:20 + json_len])
        at = 20 + json_len
        bin_len = struct.unpack_from('<I', raw, at)[0]
        blob = raw[at + 8:at + 8 + bin_len]
    else:
        doc = json.loads(raw)
        blob = None
    buffers = []
    for b in doc.get('buffers', []):
        uri = b.get('uri')
        if uri is None:
            buffers.append(blob)
        elif uri.startswith('data:'):
            import base64
            buffers.append(base64.b64decode(uri.split(',', 1)[1]))
        else:
            buffers.append(open(os.path.join(os.path.dirname(path), uri), 'rb').read())
    return doc, buffers


def normalise(c, ctype):
    return {5120: lambda: max(c / 127.0, -1.0), 5121: lambda: c / 255.0,
            5122: lambda: max(c / 32767.0, -1.0), 5123: lambda: c / 65535.0}[ctype]()


def read_elements(doc, buffers, view_index, offset, count, ctype, width, stride=None):
    fmt, size = COMPONENT[ctype]
    view = doc['bufferViews'][view_index]
    data = buffers[view['buffer']]
    base = view.get('byteOffset', 0) + offset
    stride = stride or view.get('byteStride') or size * width
    return [list(struct.unpack_from('<' + fmt * width, data, base + i * stride)) for i in range(count)]


def read_accessor(doc, buffers, index):
    acc = doc['accessors'][index]
    ctype, width, count = acc['componentType'], WIDTH[acc['type']], acc['count']
    if 'bufferView' in acc:
        values = read_elements(doc, buffers, acc['bufferView'], acc.get('byteOffset', 0), count, ctype, width)
    else:
        values = [[0] * width for _ in range(count)]
    sparse = acc.get('sparse')
    if sparse:
        idx = sparse['indices']
        fmt, size = COMPONENT[idx['componentType']]
        where = read_elements(doc, buffers, idx['bufferView'], idx.get('byteOffset', 0), sparse['count'],
                              idx['componentType'], 1, size)
        val = sparse['values']
        subst = read_elements(doc, buffers, val['bufferView'], val.get('byteOffset', 0), sparse['count'],
                              ctype, width, COMPONENT[ctype][1] * width)
        for (i,), v in zip(where, subst):
            values[i] = v
    if acc.get('normalized') and ctype != 5126:
        values = [[normalise(c, ctype) for c in v] for v in values]
    return [[float(c) for c in v] for v in values]


def f32(x):
    """The shortest decimal that reads back as the same f32 (as Rust prints it)."""
    x32 = struct.unpack('<f', struct.pack('<f', x))[0]
    if x32 == 0:
        return '0.0'
    for digits in range(1, 10):
        s = '%.*g' % (digits, x32)
        if struct.unpack('<f', struct.pack('<f', float(s)))[0] == x32:
            if 'e' not in s and '.' not in s:
                s += '.0'
            return s
    raise ValueError(x)


def vec(v):
    return '[%s]' % ', '.join(f32(c) for c in v[:3])


def main(fixtures, relative, name):
    doc, buffers = load(os.path.join(fixtures, relative))
    meshes = doc.get('meshes', [])
    mesh_rows, prim_rows, sample_rows, sum_rows = [], [], [], []
    for m, mesh in enumerate(meshes):
        prims = [p for p in mesh['primitives'] if p.get('mode', 4) == 4]
        target_count = len(mesh['weights']) if 'weights' in mesh else (len(prims[0].get('targets', [])) if prims else 0)
        names = (mesh.get('extras') or {}).get('targetNames')
        if names is None:
            for p in mesh['primitives']:
                names = (p.get('extras') or {}).get('targetNames')
                if names is not None:
                    break
        names = list(names or [])
        names = (names + [''] * target_count)[:target_count]
        mesh_rows.append('(%d, %d, &[%s])' % (m, len(prims), ', '.join('"%s"' % n for n in names)))
        for p, prim in enumerate(prims):
            attrs = prim['attributes']
            base = read_accessor(doc, buffers, attrs['POSITION'])
            if 'indices' in prim:
                indices = [i for (i,) in read_accessor(doc, buffers, prim['indices'])]
            else:
                indices = list(range(len(base)))
            flat = 'NORMAL' not in attrs
            order = [int(i) for i in indices] if flat else list(range(len(base)))
            targets = prim.get('targets', [])
            prim_rows.append('(%d, %d, %d, %d)' % (m, p, len(order), len(targets)))
            kinds = [('POSITION', 'Position')] + ([] if flat else [('NORMAL', 'Normal')]) + [('TANGENT', 'Tangent')]
            decoded = []
            for t, target in enumerate(targets):
                per = {}
                for key, kind in kinds:
                    if key in target:
                        values = read_accessor(doc, buffers, target[key])
                        per[kind] = [values[i] for i in order]
                decoded.append(per)
            if not targets:
                # Only the base positions to check (SimpleSparseAccessor's sparse accessor).
                loaded = [base[i] for i in order]
                picks = sorted({0, len(loaded) // 2, len(loaded) - 1,
                                max(range(len(loaded)), key=lambda v: loaded[v][1])})
                sparse = 'sparse' in doc['accessors'][attrs['POSITION']]
                for v in picks if sparse else []:
                    sample_rows.append('(%d, %d, 0, Base, %d, %s)' % (m, p, v, vec(loaded[v])))
                total = sum(abs(c) for v in loaded for c in v[:3])
                sum_rows.append('(%d, %d, 0, Base, %r)' % (m, p, total))
                continue
            # Sample vertices: the one this target moves most in this attribute (the first such),
            # and the middle one.
            n = len(order)
            for t, per in enumerate(decoded):
                for kind, values in per.items():
                    total = sum(abs(c) for v in values for c in v[:3])
                    most = max(range(n), key=lambda v: sum(abs(c) for c in values[v][:3]))
                    # An all-zero attribute is covered by its sum alone.
                    for v in sorted({most, n // 2}) if total else []:
                        sample_rows.append('(%d, %d, %d, %s, %d, %s)' % (m, p, t, kind, v, vec(values[v])))
                    sum_rows.append('(%d, %d, %d, %s, %r)' % (m, p, t, kind, total))
    print('const %s: Expected = Expected {' % name)
    print('    path: "%s",' % relative)
    print('    meshes: %d,' % len(meshes))
    print('    mesh_rows: &[%s],' % ', '.join(mesh_rows))
    print('    prim_rows: &[%s],' % ', '.join(prim_rows))
    print('    samples: &[')
    for row in sample_rows:
        print('        %s,' % row)
    print('    ],')
    print('    sums: &[')
    for row in sum_rows:
        print('        %s,' % row)
    print('    ],')
    print('};')


if __name__ == '__main__':
    main(*sys.argv[1:4])
