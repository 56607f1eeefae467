#!/usr/bin/env python3
"""CPU time per frame of the stage, headless and in a window, measured on the whole process.

Runs `facewire run --headless` (1280x720, unthrottled) and `facewire run` in a 1280x720 window
under a private Xvfb display (so on Mesa's llvmpipe where there is no GPU), with and without the
control panel, replaying a generated Live Link Face take in which all 52 channels and the head
move, for each morph path, and prints a Markdown table: frames drawn, frame rate, process CPU
time (user + system, all threads: replay, calibration, rendering, the panel) and CPU time per
frame; then the control panel's CPU per refresh.

    cargo build --release
    python3 benches/stage_cpu.py [--seconds 20] [--bin target/release/facewire] [--morph cpu]

Needs Xvfb. The window runs at its default cap of 60 frames per second.
"""

import argparse
import json
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


def headless(binary: str, csv: str, seconds: float, morph: str, size: str = "1280x720"):
    """Runs `facewire run --headless` unthrottled (`--fps-cap 0`) for `seconds` and returns its
    frames and the process's CPU seconds."""
    args = [binary, "run", "--headless", "--replay", csv, "--exit-after", str(seconds),
            "--morph", morph, "--size", size, "--fps-cap", "0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"facewire failed:\n{out.stderr}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return report["frames_drawn"], cpu


def panel_refreshes(log: str):
    """The control panel's refreshes and their p50 wall time in microseconds, from the log."""
    m = re.search(r"control panel closed refreshes=(\d+) draw_p50_us=(\d+)", log)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--bin", default="target/release/facewire")
    parser.add_argument("--display", default=":93")
    parser.add_argument("--morph", nargs="+", default=["cpu", "gpu"], choices=["cpu", "gpu"])
    opts = parser.parse_args()
    if not shutil.which("Xvfb"):
        sys.exit("Xvfb is needed (apt-get install xvfb)")
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "take.csv")
        with open(csv, "w") as f:
            f.write(take(opts.seconds + 5))
        xvfb = start_xvfb(opts.display)
        panels = []
        try:
            print("| run | morph path | frames | fps | process CPU (s) | CPU per frame (ms) | stage draw p50 / p99 (ms) |")
            print("|---|---|---|---|---|---|---|")
            for morph in opts.morph:
                frames, cpu = headless(opts.bin, csv, opts.seconds, morph)
                print(
                    f"| headless 1280x720, unthrottled | {morph} | {frames} | {frames / opts.seconds:.1f} | "
                    f"{cpu:.2f} | {1000 * cpu / max(frames, 1):.2f} | |",
                    flush=True,
                )
                closed = None
                for panel in (False, True):
                    logs = []
                    frames, cpu, p50, p99 = run(
                        opts.bin, csv, opts.seconds, morph, panel, opts.display, logs=logs
                    )
                    print(
                        f"| window 1280x720, panel {'open' if panel else 'closed'} | {morph} | {frames} | "
                        f"{frames / opts.seconds:.1f} | {cpu:.2f} | {1000 * cpu / max(frames, 1):.2f} | "
                        f"{p50 / 1000:.2f} / {p99 / 1000:.2f} |",
                        flush=True,
                    )
                    if not panel:
                        closed = (frames, cpu)
                    else:
                        refreshes, panel_p50 = panel_refreshes(logs[-1])
                        # The stage's own CPU per frame comes from the run without the panel.
                        stage_cpu = frames * closed[1] / max(closed[0], 1)
                        panels.append((morph, refreshes, (cpu - stage_cpu) / max(refreshes, 1), panel_p50))
        finally:
            xvfb.terminate()
            xvfb.wait()
    print()
    for morph, refreshes, per, p50 in panels:
        print(
            f"- {morph}: the panel refreshed {refreshes} times, about {1000 * per:.1f} ms of CPU "
            f"each (the open run's CPU less its frames at the closed run's cost per frame); "
            f"wall time per refresh p50 {p50 / 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
