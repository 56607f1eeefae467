#!/usr/bin/env python3
"""facewire's webcam tracker beside MediaPipe's FaceLandmarker, on the same frames of real videos.

For each clip (a video file, which ffmpeg cuts into PNG frames, or a folder of numbered PNG or JPEG
frames), runs

- `facewire track --video FRAMES --json`, pinned to one core (`taskset -c 0`), and
- the Python `mediapipe` package's FaceLandmarker in VIDEO mode (blendshapes and the head's
  transformation matrix on, one face) on the same frames, pinned to the same core,

and prints per clip and over all clips:

- the frames with a face, for each tracker;
- for each channel MediaPipe moves on the clip (its 5th to 95th percentile span at least 0.1):
  Pearson's r between the two, and each tracker's p5..p95 range; the median r; the channels each
  prints;
- blinks: MediaPipe's blinks (either eye's eyeBlink rising through 0.5) matched by facewire's
  within three frames;
- head yaw, pitch and roll: the mean absolute difference in degrees, and the mean offset;
- flicker: the mean absolute change from one frame to the next of the channels MediaPipe moves,
  facewire's over MediaPipe's (median over those channels);
- speed on one core: milliseconds of tracking a frame (facewire's own summary; MediaPipe's
  detect_for_video calls), so start-up and image decoding are left out on both sides; the frames a
  second that gives; and each process's peak resident memory (/usr/bin/time, getrusage).

Both name the channels as ARKit does, left and right the performer's (src/webcam/track.rs).

    cargo build --release
    python3 -m venv /tmp/mp && /tmp/mp/bin/pip install mediapipe
    python3 benches/webcam.py --bin target/release/facewire --python /tmp/mp/bin/python \\
        --task face_landmarker.task clip1.mp4 clip2.mp4 ...

`--task` is MediaPipe's bundle (models/mediapipe/README.md says where it came from). Needs
ffmpeg for video files. Run it from the repository's root. Linux only.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

MEDIAPIPE = r"""
import json, resource, sys, time, glob
import mediapipe as mp
from mediapipe.tasks.python import vision, BaseOptions
task, folder, fps = sys.argv[1], sys.argv[2], float(sys.argv[3])
opts = vision.FaceLandmarkerOptions(
    base_options=BaseOptions(model_asset_path=task),
    running_mode=vision.RunningMode.VIDEO, num_faces=1,
    output_face_blendshapes=True, output_facial_transformation_matrixes=True)
landmarker = vision.FaceLandmarker.create_from_options(opts)
files = sorted(glob.glob(folder + "/*.png") + glob.glob(folder + "/*.jpg"))
times = []
for i, f in enumerate(files):
    image = mp.Image.create_from_file(f)
    began = time.perf_counter()
    r = landmarker.detect_for_video(image, int(round(i * 1000 / fps)))
    times.append(time.perf_counter() - began)
    line = {"frame": i, "face": bool(r.face_landmarks)}
    if r.face_landmarks:
        line["weights"] = {c.category_name: c.score for c in r.face_blendshapes[0]}
        line["matrix"] = [list(map(float, row)) for row in r.facial_transformation_matrixes[0]]
    print(json.dumps(line))
print(json.dumps({"times": times,
                  "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def angles(m):
    """Yaw, pitch, roll in degrees of a 3x3 head rotation (columns = head axes), facewire's
    convention (Ry(yaw) Rx(pitch) Rz(-roll))."""
    fx, fy, fz = m[0][2], m[1][2], m[2][2]
    yaw = math.degrees(math.atan2(fx, fz))
    pitch = math.degrees(math.atan2(-fy, math.hypot(fx, fz)))
    roll = -math.degrees(math.atan2(m[1][0], m[1][1]))
    return [yaw, pitch, roll]


def quat_matrix(q):
    x, y, z, w = q
    return [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]


def percentile(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def pearson(a, b):
    n = len(a)
    if n < 3:
        return float("nan")
    ma, mb = sum(a) / n, sum(b) / n
    sa = math.sqrt(sum((x - ma) ** 2 for x in a))
    sb = math.sqrt(sum((y - mb) ** 2 for y in b))
    if sa == 0 or sb == 0:
        return 0.0
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb)


def blinks(series):
    """Frames where either eye's blink rises through 0.5."""
    out, closed = [], False
    for i, v in enumerate(series):
        if v is None:
            continue
        if not closed and v >= 0.5:
            out.append(i)
        closed = v >= 0.5
    return out


def frames_of(clip, work, fps, width):
    if os.path.isdir(clip):
        return clip
    out = os.path.join(work, re.sub(r"\W", "_", os.path.basename(clip)))
    os.makedirs(out, exist_ok=True)
    scale = f"scale={width}:-2" if width else "null"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-y", "-i", clip, "-vf", f"fps={fps},{scale}",
         os.path.join(out, "frame_%05d.png")],
        check=True,
    )
    return out


def timed(cmd):
    """Runs cmd pinned to core 0 under /usr/bin/time -v: (stdout, stderr, peak RSS in MB)."""
    p = subprocess.run(["/usr/bin/time", "-v", "taskset", "-c", "0"] + cmd,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return p.stdout, p.stderr, int(rss.group(1)) / 1024 if rss else float("nan")


def run_clip(args, clip, work):
    folder = frames_of(clip, work, args.fps, args.width)
    out, err, fw_rss = timed([args.bin, "track", "--video", folder, "--json",
                              "--fps", str(args.fps)])
    ours = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    summary = re.search(r"took ([\d.]+) ms a frame", err)
    fw_ms = float(summary.group(1)) if summary else float("nan")
    fw_p99 = re.search(r"99th percentile ([\d.]+)", err)
    out, err, mp_rss = timed([args.python, "-c", MEDIAPIPE, args.task, folder, str(args.fps)])
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    tail = lines.pop()
    mp_ms = 1000 * statistics.mean(tail["times"][1:]) if len(tail["times"]) > 1 else float("nan")
    theirs = lines
    n = min(len(ours), len(theirs))
    ours, theirs = ours[:n], theirs[:n]
    both = [i for i in range(n) if ours[i].get("face") and theirs[i].get("face")]
    report = {
        "clip": os.path.basename(clip.rstrip("/")),
        "frames": n,
        "facewire_faces": sum(1 for o in ours if o.get("face")) / max(n, 1),
        "mediapipe_faces": sum(1 for t in theirs if t.get("face")) / max(n, 1),
        "facewire_ms": fw_ms,
        "facewire_p99_ms": float(fw_p99.group(1)) if fw_p99 else float("nan"),
        "mediapipe_ms": mp_ms,
        "facewire_rss_mb": fw_rss,
        "mediapipe_rss_mb": mp_rss,
        "channels": {},
        "both_faces": len(both),
        "mediapipe_face_frames": sum(1 for t in theirs if t.get("face")),
    }
    names = set()
    for t in theirs:
        names.update(t.get("weights", {}).keys())
    names.discard("_neutral")
    report["mediapipe_printed"] = len(names)
    printed = set()
    for o in ours:
        printed.update(o.get("weights", {}).keys())
    report["facewire_printed"] = len(printed - {"tongueOut"})
    for name in sorted(names):
        ours_name = name
        a = [ours[i]["weights"].get(ours_name, 0.0) for i in both]
        b = [theirs[i]["weights"][name] for i in both]
        span = percentile(b, 0.95) - percentile(b, 0.05)
        flick = lambda s: statistics.mean(abs(x - y) for x, y in zip(s, s[1:])) if len(s) > 1 else 0
        report["channels"][ours_name] = {
            "moves": span >= 0.1,
            "r": pearson(a, b),
            "facewire": [percentile(a, 0.05), percentile(a, 0.95)],
            "mediapipe": [percentile(b, 0.05), percentile(b, 0.95)],
            "flicker": flick(a) / flick(b) if flick(b) > 0 else float("nan"),
        }
    def blink(lines, left, right):
        s = []
        for line in lines:
            w = line.get("weights")
            s.append(max(w.get(left, 0), w.get(right, 0)) if w else None)
        return s
    theirs_blinks = blinks(blink(theirs, "eyeBlinkLeft", "eyeBlinkRight"))
    ours_blinks = blinks(blink(ours, "eyeBlinkLeft", "eyeBlinkRight"))
    matched = sum(1 for b in theirs_blinks if any(abs(b - o) <= 3 for o in ours_blinks))
    report["blinks"] = [matched, len(theirs_blinks), len(ours_blinks)]
    diffs = [[], [], []]
    for i in both:
        if "head" not in ours[i]:
            continue
        a = angles(quat_matrix(ours[i]["head"]))
        m = theirs[i]["matrix"]
        b = angles([row[:3] for row in m[:3]])
        for k in range(3):
            diffs[k].append(a[k] - b[k])
    report["head_mean_abs"] = [statistics.mean(map(abs, d)) if d else float("nan") for d in diffs]
    report["head_offset"] = [statistics.mean(d) if d else float("nan") for d in diffs]
    return report


def show(r):
    moving = {k: v for k, v in r["channels"].items() if v["moves"]}
    rs = [v["r"] for v in moving.values()]
    print(f"\n## {r['clip']}: {r['frames']} frames")
    print(f"faces: facewire {100 * r['facewire_faces']:.1f}%, MediaPipe {100 * r['mediapipe_faces']:.1f}%")
    print(f"channels printed: facewire {r['facewire_printed']}, MediaPipe {r['mediapipe_printed']}")
    print(f"channels MediaPipe moves: {len(moving)}; Pearson r median "
          f"{statistics.median(rs) if rs else float('nan'):.2f}, lowest "
          f"{min(rs) if rs else float('nan'):.2f}")
    print(f"{'channel':22} {'r':>6}  {'facewire p5..p95':>17}  {'MediaPipe p5..p95':>17}  flicker")
    for k, v in sorted(moving.items(), key=lambda kv: kv[1]["r"]):
        print(f"{k:22} {v['r']:6.2f}  {v['facewire'][0]:7.2f}..{v['facewire'][1]:<7.2f}  "
              f"{v['mediapipe'][0]:7.2f}..{v['mediapipe'][1]:<7.2f}  {v['flicker']:5.2f}x")
    m, n, o = r["blinks"]
    print(f"blinks: {m} of MediaPipe's {n} matched within 3 frames (facewire saw {o})")
    y, p, ro = r["head_mean_abs"]
    oy, op, oro = r["head_offset"]
    print(f"head: |yaw| {y:.1f}°, |pitch| {p:.1f}°, |roll| {ro:.1f}° apart "
          f"(offsets {oy:+.1f}, {op:+.1f}, {oro:+.1f})")
    print(f"speed, one core: facewire {r['facewire_ms']:.1f} ms a frame "
          f"({1000 / r['facewire_ms']:.0f}/s, p99 {r['facewire_p99_ms']:.1f} ms, "
          f"{r['facewire_rss_mb']:.0f} MB), MediaPipe {r['mediapipe_ms']:.1f} ms "
          f"({1000 / r['mediapipe_ms']:.0f}/s, {r['mediapipe_rss_mb']:.0f} MB): "
          f"{r['mediapipe_ms'] / r['facewire_ms']:.2f}x MediaPipe's frames a second")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clips", nargs="+", help="video files or folders of frames")
    ap.add_argument("--bin", default="target/release/facewire")
    ap.add_argument("--python", default="python3", help="a python with mediapipe installed")
    ap.add_argument("--task", required=True, help="face_landmarker.task")
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--width", type=int, default=640, help="frames scaled to this width (0: as is)")
    ap.add_argument("--json", help="also write the reports here")
    args = ap.parse_args()
    if not shutil.which("taskset"):
        sys.exit("needs taskset (util-linux)")
    work = tempfile.mkdtemp(prefix="facewire-webcam-bench-")
    reports = [run_clip(args, c, work) for c in args.clips]
    for r in reports:
        show(r)
    rs = [v["r"] for r in reports for v in r["channels"].values() if v["moves"]]
    blink = [sum(r["blinks"][0] for r in reports), sum(r["blinks"][1] for r in reports)]
    print("\n## all clips")
    both = sum(r["both_faces"] for r in reports)
    theirs = sum(r["mediapipe_face_frames"] for r in reports)
    print(f"faces: facewire found one in {both} of the {theirs} frames MediaPipe found one in "
          f"({100 * both / max(theirs, 1):.1f}%); lowest share of a clip's frames: facewire "
          f"{100 * min(r['facewire_faces'] for r in reports):.1f}%, MediaPipe "
          f"{100 * min(r['mediapipe_faces'] for r in reports):.1f}%")
    if rs:
        print(f"channel-clip pairs MediaPipe moves: {len(rs)}; r median {statistics.median(rs):.2f}, "
              f"lowest {min(rs):.2f}, at least 0.75: {sum(1 for r in rs if r >= 0.75)}")
    print(f"blinks matched: {blink[0]} of {blink[1]}")
    heads = [r["head_mean_abs"] for r in reports if not math.isnan(r["head_mean_abs"][0])]
    if heads:
        print("head, largest mean difference of a clip: |yaw| {:.1}°, |pitch| {:.1}°, |roll| {:.1}°"
              .format(*(max(h[k] for h in heads) for k in range(3))))
    flicker = [v["flicker"] for r in reports for v in r["channels"].values()
               if v["moves"] and not math.isnan(v["flicker"])]
    if flicker:
        print(f"flicker, facewire over MediaPipe: median {statistics.median(flicker):.2f}x, "
              f"highest {max(flicker):.2f}x")
    rss = [(r["facewire_rss_mb"], r["mediapipe_rss_mb"]) for r in reports]
    print(f"peak memory: facewire {max(a for a, _ in rss):.0f} MB, MediaPipe (with Python) "
          f"{max(b for _, b in rss):.0f} MB")
    fw = statistics.mean(r["facewire_ms"] for r in reports)
    mp = statistics.mean(r["mediapipe_ms"] for r in reports)
    print(f"speed, one core: facewire {fw:.1f} ms a frame ({1000 / fw:.0f}/s), MediaPipe "
          f"{mp:.1f} ms ({1000 / mp:.0f}/s): facewire at {mp / fw:.2f}x MediaPipe's frames a second")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=1)


if __name__ == "__main__":
    main()
