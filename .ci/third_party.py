#!/usr/bin/env python3
"""Writes THIRD-PARTY.md for a facewire download: every crate built into the binary for one
target (from `cargo metadata`, development-only crates left out), its version, its licence
expression and the licence texts it ships, each text printed once; then the data built in
(MediaPipe's networks).

usage: .ci/third_party.py TARGET OUT.md
"""

import json
import os
import subprocess
import sys


def main() -> None:
    target, out = sys.argv[1], sys.argv[2]
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target]
        )
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = meta["resolve"]["root"]

    # Normal and build dependencies of facewire, transitively (build scripts run at build time
    # but some, like cc, also decide what is linked in; listing them errs on the side of credit).
    seen, todo = set(), [root]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds <= {"dev"}:
                continue
            if dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])

    crates = sorted((packages[i] for i in seen), key=lambda p: (p["name"], p["version"]))
    texts: dict[str, list[str]] = {}
    rows = []
    for p in crates:
        folder = os.path.dirname(p["manifest_path"])
        files = sorted(
            f
            for f in os.listdir(folder)
            if f.upper().startswith(("LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE"))
            and os.path.isfile(os.path.join(folder, f))
        )
        if p.get("license_file"):
            files.append(p["license_file"])
        refs = []
        for f in dict.fromkeys(files):
            path = os.path.join(folder, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read().strip()
            texts.setdefault(text, []).append(f"{p['name']} {p['version']}")
            refs.append(f)
        licence = p.get("license") or "see its licence file"
        rows.append(f"| {p['name']} | {p['version']} | {licence} |")

    with open(out, "w", encoding="utf-8") as fh:
        fh.write("# Third-party notices\n\n")
        fh.write(
            "facewire is MIT OR Apache-2.0 (LICENSE-MIT, LICENSE-APACHE). The program is built "
            f"with these {len(crates)} crates (for {target}); their licence texts follow the table, "
            "each text once with the crates that ship it.\n\n"
        )
        fh.write("| crate | version | licence |\n|---|---|---|\n")
        fh.write("\n".join(rows) + "\n\n")
        fh.write(
            "## Data built into facewire\n\n"
            "The webcam tracker's networks (models/mediapipe/: face detector, face landmarks, "
            "face blendshapes) are Google's MediaPipe Face Landmarker, Apache-2.0, converted to "
            "ONNX; models/mediapipe/LICENSE and README.md say where they came from and how they "
            "were converted. The default head (models/default_head.glb) is facewire's own.\n\n"
        )
        fh.write("## Licence texts\n\n")
        for text, owners in texts.items():
            fh.write(f"### {', '.join(owners)}\n\n```\n{text}\n```\n\n")


if __name__ == "__main__":
    main()
