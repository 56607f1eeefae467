#!/usr/bin/env python3
"""CPU time per frame of the stage window, measured on the whole facewire process.

Runs `facewire run` under a private Xvfb display (so on Mesa's llvmpipe where there is no GPU),
replaying a generated Live Link Face take in which all 52 channels and the head move, for each
morph path with and without the control panel, and prints a Markdown table: frames drawn,
frame rate, process CPU time (user + system, all threads: replay, calibration, rendering, the
panel) and CPU time per frame.

    cargo build --release
    python3 benches/stage_cpu.py [--seconds 20] [--bin target/release/facewire]

Needs Xvfb. The stage runs at its default cap of 60 frames per second.
"""

import argparse
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

CHANNELS = """EyeBlinkLeft EyeLookDownLeft EyeLookInLeft EyeLookOutLeft EyeLookUpLeft EyeSquintLeft
EyeWideLeft EyeBlinkRight EyeLookDownRight EyeLookInRight EyeLookOutRight EyeLookUpRight
EyeSquintRight EyeWideRight JawForward JawRight JawLeft JawOpen MouthClose MouthFunnel
MouthPucker MouthRight MouthLeft MouthSmileLeft MouthSmileRight MouthFrownLeft MouthFrownRight
MouthDimpleLeft MouthDimpleRight MouthStretchLeft MouthStretchRight MouthRollLower
MouthRollUpper MouthShrugLower MouthShrugUpper MouthPressLeft MouthPressRight
MouthLowerDownLeft MouthLowerDownRight MouthUpperUpLeft MouthUpperUpRight BrowDownLeft
BrowDownRight BrowInnerUp BrowOuterUpLeft BrowOuterUpRight CheekPuff CheekSquintLeft
CheekSquintRight NoseSneerLeft NoseSneerRight TongueOut""".split()


def take(seconds: float) -> str:
    """A 60 fps Live Link Face CSV: every channel on its own slow sine, the head turning."""
    lines = ["Timecode,BlendShapeCount," + ",".join(CHANNELS) + ",HeadYaw,HeadPitch,HeadRoll"]
    for i in range(int(seconds * 60)):
        t = i / 60.0
        values = [0.5 - 0.5 * math.cos(t * (1.0 + 0.07 * k) + k) for k in range(len(CHANNELS))]
        head = [0.3 * math.sin(t * 0.9), 0.15 * math.sin(t * 1.3), 0.1 * math.sin(t * 0.7)]
        s, f = divmod(i, 60)
        lines.append(
            f"00:{s // 60:02}:{s % 60:02}:{f:02}.000,52,"
            + ",".join(f"{v:.4f}" for v in values + head)
        )
    return "\n".join(lines) + "\n"


def start_xvfb(display: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "2400x1000x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    socket = f"/tmp/.X11-unix/X{display[1:]}"
    deadline = time.time() + 20
    while not os.path.exists(socket):
        if time.time() > deadline:
            sys.exit("Xvfb did not start")
        time.sleep(0.05)
    return proc


def run(binary: str, csv: str, seconds: float, morph: str, panel: bool, display: str, extra=(), logs=None):
    """Runs the stage for `seconds` (with `extra` arguments after `run`'s own; its log, without
    colours, appended to `logs` when given) and returns its frames, the process's CPU seconds
    and the stage's draw p50 and p99 in microseconds."""
    args = [binary, "run", "--replay", csv, "--exit-after", str(seconds), "--morph", morph]
    if not panel:
        args.append("--no-panel")
    args.extend(extra)
    env = dict(os.environ, DISPLAY=display, FACEWIRE_LOG="info")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"facewire failed:\n{out.stderr}")
    log = re.sub(r"\x1b\[[0-9;]*m", "", out.stderr)
    if logs is not None:
        logs.append(log)
    m = re.search(r"stage closed frames=(\d+) draw_p50_us=(\d+) draw_p99_us=(\d+)", log)
    if not m:
        sys.exit(f"no 'stage closed' line in the log:\n{log}")
    frames, p50, p99 = (int(g) for g in m.groups())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return frames, cpu, p50, p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--bin", default="target/release/facewire")
    parser.add_argument("--display", default=":93")
    opts = parser.parse_args()
    if not shutil.which("Xvfb"):
        sys.exit("Xvfb is needed (apt-get install xvfb)")
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "take.csv")
        with open(csv, "w") as f:
            f.write(take(opts.seconds + 5))
        xvfb = start_xvfb(opts.display)
        try:
            print("| morph path | panel | frames | fps | process CPU (s) | CPU per frame (ms) | stage draw p50 / p99 (ms) |")
            print("|---|---|---|---|---|---|---|")
            for morph in ("cpu", "gpu"):
                for panel in (False, True):
                    frames, cpu, p50, p99 = run(opts.bin, csv, opts.seconds, morph, panel, opts.display)
                    print(
                        f"| {morph} | {'open' if panel else 'closed'} | {frames} | "
                        f"{frames / opts.seconds:.1f} | {cpu:.2f} | {1000 * cpu / max(frames, 1):.2f} | "
                        f"{p50 / 1000:.2f} / {p99 / 1000:.2f} |",
                        flush=True,
                    )
        finally:
            xvfb.terminate()
            xvfb.wait()


if __name__ == "__main__":
    main()
