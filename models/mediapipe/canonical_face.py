#!/usr/bin/env python3
"""Prints src/webcam/canonical_face.rs from MediaPipe's face geometry metadata.

    unzip -p face_landmarker.task geometry_pipeline_metadata_landmarks.binarypb \
        | python3 models/mediapipe/canonical_face.py > src/webcam/canonical_face.rs

The metadata is a GeometryPipelineMetadata protobuf (mediapipe/tasks/cc/vision/face_geometry/
proto): field 1 the canonical mesh (Mesh3d: field 3 the vertex buffer, five floats a vertex:
x, y, z in centimetres, then u, v), field 2 the Procrustes basis (landmark id, weight). Decoded
here with the protobuf wire format alone, so nothing beyond Python is needed.
"""
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield num, wire, v


def short(x):
    """The shortest decimal that reads back as the same f32."""
    packed = struct.pack("<f", x)
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if struct.pack("<f", float(text)) == packed:
            break
    if "e" not in text and "." not in text:
        text += ".0"
    return text


def main():
    data = sys.stdin.buffer.read()
    vertices, basis = [], []
    for num, wire, v in fields(data):
        if num == 1:
            for n, w, x in fields(v):
                if n == 3 and w == 2:
                    vertices += struct.unpack(f"<{len(x) // 4}f", x)
                elif n == 3 and w == 5:
                    vertices.append(struct.unpack("<f", x)[0])
        elif num == 2:
            ref = dict((n, x) for n, _, x in fields(v))
            basis.append((ref.get(1, 0), struct.unpack("<f", ref[2])[0]))
    assert len(vertices) == 468 * 5, len(vertices)
    print("// MediaPipe's canonical face (Apache-2.0, models/mediapipe/), printed by")
    print("// models/mediapipe/canonical_face.py from the face_landmarker.task bundle's")
    print("// geometry_pipeline_metadata_landmarks.binarypb.")
    print()
    print("/// The canonical face's 468 vertices in centimetres: x towards the face's left, y up, z out")
    print("/// of the face.")
    print("pub const VERTICES: [[f32; 3]; 468] = [")
    for k in range(468):
        x, y, z = vertices[5 * k:5 * k + 3]
        print(f"    [{short(x)}, {short(y)}, {short(z)}],")
    print("];")
    print()
    print("/// The landmarks the head's pose is fitted to, with their weights (MediaPipe's Procrustes")
    print("/// basis).")
    print(f"pub const BASIS: [(usize, f32); {len(basis)}] = [")
    for i, w in basis:
        print(f"    ({i}, {short(w)}),")
    print("];")


main()
