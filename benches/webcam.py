#!/usr/bin/env python3
"""Speed and memory of facewire's webcam tracker on one core, beside OpenSeeFace's own tracker.

Renders a 640x480 video of the default head moving (300 frames: the head turning, nodding and
tilting, the jaw opening, a blink every three seconds) with `facewire snapshot --frames`, then
runs `facewire track` on it pinned to one core (`taskset -c 0`), three times, and prints the
tracking time per frame (mean, median, 99th percentile, slowest; PNG decoding is not included),
the tracked frames a second that gives, and the peak resident memory of the whole process
(/usr/bin/time's maximum RSS). With `--peer DIR`, a checkout of emilianavt/OpenSeeFace with
onnxruntime and OpenCV installed for python3, its `Tracker` (lm_model0, one thread) runs on the
same frames on the same core, with and without its gaze model, and the ratios are printed.
Linux only.

    cargo build --release
    python3 benches/webcam.py [--bin target/release/facewire] [--peer ../OpenSeeFace]

Run it from the repository's root.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

FRAMES = 300


def poses():
    for i in range(FRAMES):
        t = i / 30
        blink = 1.0 if i % 90 < 4 else 0.0
        yield {
            "weights": {
                "jawOpen": round(max(0.0, math.sin(t * 3)) * 0.8, 3),
                "eyeBlinkLeft": blink,
                "eyeBlinkRight": blink,
            },
            "head": [
                round(15 * math.sin(t * 0.9), 2),
                round(5 * math.sin(t * 1.3), 2),
                round(8 * math.sin(t * 0.7), 2),
            ],
        }


PEER = """
import sys, time, glob
import cv2, numpy as np
sys.path.insert(0, sys.argv[1])
import tracker as T
ims = [cv2.imread(f) for f in sorted(glob.glob(sys.argv[2] + "/*.png"))]
h, w = ims[0].shape[:2]
t = T.Tracker(w, h, model_type=0, max_threads=1, silent=True, no_gaze=sys.argv[3] == "nogaze")
times = []
for im in ims:
    s = time.perf_counter()
    t.predict(im)
    times.append((time.perf_counter() - s) * 1000)
times = np.array(times)
print(f"{times.mean():.2f} {np.median(times):.2f} {np.percentile(times, 99):.2f} {times.max():.2f}")
"""


def run_facewire(binary, video):
    out = subprocess.run(
        ["taskset", "-c", "0", "/usr/bin/time", "-v", binary, "track", "--video", video],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, FACEWIRE_LOG="warn"),
    )
    summary = re.search(
        r"on average \(median ([\d.]+), 99th percentile ([\d.]+), at most ([\d.]+)\)",
        out.stderr,
    )
    mean = re.search(r"tracking took ([\d.]+) ms a frame on average", out.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    faces = re.search(r"(\d+) frames, a face in (\d+)", out.stderr)
    if not (summary and mean and rss and faces):
        sys.exit(f"unexpected output:\n{out.stderr}")
    return {
        "mean": float(mean.group(1)),
        "p50": float(summary.group(1)),
        "p99": float(summary.group(2)),
        "max": float(summary.group(3)),
        "rss_mb": int(rss.group(1)) / 1024,
        "faces": f"{faces.group(2)}/{faces.group(1)}",
    }


def run_peer(peer, video, gaze):
    script = os.path.join(tempfile.gettempdir(), "facewire_osf_peer.py")
    with open(script, "w") as f:
        f.write(PEER)
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, script, peer, video, "gaze" if gaze else "nogaze"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    mean, p50, p99, worst = map(float, out.stdout.split()[-4:])
    return {"mean": mean, "p50": p50, "p99": p99, "max": worst}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default="target/release/facewire")
    parser.add_argument("--peer", help="a checkout of emilianavt/OpenSeeFace")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lines = os.path.join(tmp, "poses.jsonl")
        with open(lines, "w") as f:
            for p in poses():
                f.write(json.dumps(p) + "\n")
        config = os.path.join(tmp, "facewire.toml")
        with open(config, "w") as f:
            f.write("# defaults\n")
        video = os.path.join(tmp, "frames")
        subprocess.run(
            [args.bin, "--config", config, "snapshot", "--size", "640x480", "--frames", lines,
             "--out", video],
            check=True,
            capture_output=True,
            env=dict(os.environ, FACEWIRE_LOG="warn"),
        )
        best = None
        for i in range(args.runs):
            r = run_facewire(args.bin, video)
            print(f"facewire run {i + 1}: {r}")
            if best is None or r["mean"] < best["mean"]:
                best = r
        print(
            f"facewire track, one core: mean {best['mean']:.1f} ms, median {best['p50']:.1f}, "
            f"p99 {best['p99']:.1f}, max {best['max']:.1f} ({1000 / best['mean']:.0f} frames a "
            f"second), peak RSS {best['rss_mb']:.0f} MB, faces {best['faces']}"
        )
        if args.peer:
            for gaze in (False, True):
                r = run_peer(args.peer, video, gaze)
                name = "with gaze" if gaze else "no gaze"
                print(
                    f"OpenSeeFace ({name}), one core: mean {r['mean']:.1f} ms, median "
                    f"{r['p50']:.1f}, p99 {r['p99']:.1f}, max {r['max']:.1f}; facewire / "
                    f"OpenSeeFace mean {best['mean'] / r['mean']:.2f}"
                )


if __name__ == "__main__":
    main()
