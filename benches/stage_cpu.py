#!/usr/bin/env python3
"""CPU time per frame of the stage, headless and in a window, measured on the whole process.

Runs `facewire run --headless` (1280x720, unthrottled) and `facewire run` in a 1280x720 window
under a private Xvfb display (so on Mesa's llvmpipe where there is no GPU), with and without the
control panel, replaying a generated Live Link Face take in which all 52 channels and the head
move, for each morph path, and prints a Markdown table: frames drawn, frame rate, process CPU
time (user + system, all threads: replay, calibration, rendering, the panel) and CPU time per
frame; then the control panel's CPU per refresh, from the same take beside a 128x72 stage window
capped at 10 frames per second, with the panel and without. Every run is repeated (`--repeat`,
in rounds, so a slow spell of a shared machine touches every run alike) and the tables show
medians with their ranges: single runs on a 2-core VM vary by a fifth.

    cargo build --release
    python3 benches/stage_cpu.py [--seconds 20] [--repeat 3] [--bin target/release/facewire] [--morph cpu]

Run it from the repository's root. Needs Xvfb. The window runs at its default cap of 60 frames
per second.
"""

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
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


def tiny_stage_config(path: str) -> None:
    """Writes a copy of config/facewire.toml whose stage window is 128x72 at 10 frames a second,
    so that beside it the control panel's refreshes are most of the process's work."""
    with open("config/facewire.toml") as f:
        text = f.read()
    section = text.index("[window]")
    end = text.find("\n[", section + 1)
    window = text[section:end]
    for key, value in (("width", "128"), ("height", "72"), ("fps_cap", "10")):
        window, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", window, count=1)
        if n != 1:
            sys.exit(f"config/facewire.toml: no {key} in [window]")
    with open(path, "w") as f:
        f.write(text[:section] + window + text[end:])


def spread(values) -> str:
    """The median of `values`, with their range when there are several."""
    values = sorted(values)
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.1f}"
    return f"{mid:.1f} ({values[0]:.1f}-{values[-1]:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every run (medians)")
    parser.add_argument("--bin", default="target/release/facewire")
    parser.add_argument("--display", default=":93")
    parser.add_argument("--morph", nargs="+", default=["cpu", "gpu"], choices=["cpu", "gpu"])
    opts = parser.parse_args()
    if not shutil.which("Xvfb"):
        sys.exit("Xvfb is needed (apt-get install xvfb)")
    if not os.path.exists("config/facewire.toml"):
        sys.exit("run this from the repository's root (it reads config/facewire.toml)")
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "take.csv")
        with open(csv, "w") as f:
            f.write(take(opts.seconds + 5))
        tiny = os.path.join(tmp, "tiny.toml")
        tiny_stage_config(tiny)
        xvfb = start_xvfb(opts.display)
        # Per morph path and run: a list of (fps, CPU ms per frame, draw p50 ms) per round, and
        # the panel's CPU ms per refresh per round.
        results = {}
        panels = {}
        try:
            for round_ in range(opts.repeat):
                for morph in opts.morph:
                    frames, cpu = headless(opts.bin, csv, opts.seconds, morph)
                    results.setdefault((morph, "headless 1280x720, unthrottled"), []).append(
                        (frames / opts.seconds, 1000 * cpu / max(frames, 1), None)
                    )
                    for panel in (False, True):
                        frames, cpu, p50, _ = run(opts.bin, csv, opts.seconds, morph, panel, opts.display)
                        name = f"window 1280x720, panel {'open' if panel else 'closed'}"
                        results.setdefault((morph, name), []).append(
                            (frames / opts.seconds, 1000 * cpu / max(frames, 1), p50 / 1000)
                        )
                    # The panel beside a 128x72 stage at 10 fps: the difference between the
                    # runs with and without it is the panel's, over its refreshes.
                    extra = ("--config", tiny)
                    _, closed_cpu, _, _ = run(opts.bin, csv, opts.seconds, morph, False, opts.display, extra)
                    logs = []
                    _, open_cpu, _, _ = run(opts.bin, csv, opts.seconds, morph, True, opts.display, extra, logs)
                    refreshes, p50 = panel_refreshes(logs[-1])
                    panels.setdefault(morph, []).append(
                        (1000 * (open_cpu - closed_cpu) / max(refreshes, 1), p50 / 1000, refreshes)
                    )
                    print(f"round {round_ + 1} of {opts.repeat}, {morph}: done", file=sys.stderr, flush=True)
        finally:
            xvfb.terminate()
            xvfb.wait()
    print(f"Medians of {opts.repeat} rounds (range in brackets), {opts.seconds:g} s each:")
    print()
    print("| run | morph path | fps | CPU per frame (ms) | stage draw p50 (ms) |")
    print("|---|---|---|---|---|")
    for (morph, name), rows in results.items():
        draws = [r[2] for r in rows if r[2] is not None]
        print(
            f"| {name} | {morph} | {spread(r[0] for r in rows)} | {spread(r[1] for r in rows)} | "
            f"{spread(draws) if draws else ''} |"
        )
    print()
    for morph, rows in panels.items():
        print(
            f"- {morph}: the control panel beside a 128x72 stage at 10 fps: "
            f"{spread(r[0] for r in rows)} ms of CPU per refresh (the process's CPU with the panel "
            f"less without it, over about {round(statistics.median(r[2] for r in rows))} refreshes); "
            f"wall time per refresh p50 {spread(r[1] for r in rows)} ms"
        )


if __name__ == "__main__":
    main()
