#!/usr/bin/env python3
"""Resident memory of facewire: what the GL driver alone takes, what facewire adds, and whether
it stays flat over a long stream.

The split (the default) runs `examples/gl_context` (an offscreen GL context made as a headless
run makes its own, one frame, nothing else), then `facewire run --headless` with the default
head replaying a generated take in which all 52 channels and the head move, and prints both
resident sets and the difference: facewire's own share.

The soak (`--soak MINUTES`) runs the stage with its control panel under a private Xvfb display,
listening for a looping replay sent over UDP by `facewire replay --loop`, samples the resident
set every `--every` seconds, and prints the samples and the growth after the warm-up (the first
fifth of the run, at least a minute).

    cargo build --release --examples
    python3 benches/memory.py [--bin target/release/facewire]
    python3 benches/memory.py --soak 60

Linux only (reads /proc). The soak needs Xvfb.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stage_cpu import start_xvfb, take  # noqa: E402


def rss_kb(pid: int):
    """(total, anonymous, file-backed) resident kB of process `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
    except OSError:
        return None
    fields = {}
    for line in status.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(rest.split()[0])
    if len(fields) < 3:
        return None
    return fields["VmRSS"], fields["RssAnon"], fields["RssFile"]


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


def sample(proc: subprocess.Popen, every: float, until: float, on_sample=None):
    """Samples `proc`'s resident set every `every` s until it exits or `until` passes."""
    samples = []
    start = time.time()
    while proc.poll() is None and time.time() < until:
        r = rss_kb(proc.pid)
        if r:
            samples.append((time.time() - start, *r))
            if on_sample:
                on_sample(samples[-1])
        time.sleep(every)
    return samples


def split(binary: str, example: str, seconds: float) -> None:
    out = subprocess.run([example, "--seconds", "2"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"gl_context failed:\n{out.stderr}")
    context = json.loads(out.stdout)
    out = subprocess.run([example, "--seconds", "2", "--draw"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"gl_context --draw failed:\n{out.stderr}")
    drawing = json.loads(out.stdout)
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "take.csv")
        with open(csv, "w") as f:
            f.write(take(seconds + 5))
        proc = subprocess.Popen(
            [binary, "run", "--headless", "--size", "1280x720", "--replay", csv,
             "--exit-after", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(os.environ, FACEWIRE_LOG="warn"),
        )
        samples = sample(proc, 0.25, time.time() + seconds + 30)
        proc.wait()
    # Steady state: the last half of the run.
    late = [s for s in samples if s[0] >= seconds / 2]
    if not late:
        sys.exit("facewire exited before it could be measured")
    total = statistics.median(s[1] for s in late)
    anon = statistics.median(s[2] for s in late)
    file = statistics.median(s[3] for s in late)
    print(f"| process | resident | anonymous | file-backed |")
    print(f"|---|---|---|---|")
    print(f"| GL context alone ({context['device']}, 1280x720) | {mb(context['rss_kb'])} | "
          f"{mb(context['rss_anon_kb'])} | {mb(context['rss_file_kb'])} |")
    print(f"| GL context drawing one textured quad (its shader compiled) | {mb(drawing['rss_kb'])} | "
          f"{mb(drawing['rss_anon_kb'])} | {mb(drawing['rss_file_kb'])} |")
    print(f"| `facewire run --headless`, default head, replay | {mb(total)} | {mb(anon)} | "
          f"{mb(file)} |")
    print(f"| facewire's own share, over the bare context | {mb(total - context['rss_kb'])} | "
          f"{mb(anon - context['rss_anon_kb'])} | {mb(file - context['rss_file_kb'])} |")
    print(f"| facewire's own share, over the drawing context | {mb(total - drawing['rss_kb'])} | "
          f"{mb(anon - drawing['rss_anon_kb'])} | {mb(file - drawing['rss_file_kb'])} |")


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def soak(binary: str, minutes: float, every: float) -> None:
    seconds = minutes * 60
    display = f":{90 + os.getpid() % 50}"
    xvfb = start_xvfb(display)
    port = free_udp_port()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            csv = os.path.join(tmp, "take.csv")
            with open(csv, "w") as f:
                f.write(take(60))
            stage = subprocess.Popen(
                [binary, "run", "--listen", f"127.0.0.1:{port}", "--exit-after", str(seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(os.environ, DISPLAY=display, FACEWIRE_LOG="warn"),
            )
            sender = subprocess.Popen(
                [binary, "replay", csv, "--loop", "--to", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            print("| minute | resident | anonymous |")
            print("|---|---|---|")
            shown = [-1.0]

            def show(s):
                if s[0] - shown[0] >= 60 or shown[0] < 0:
                    shown[0] = s[0]
                    print(f"| {s[0] / 60:.0f} | {mb(s[1])} | {mb(s[2])} |", flush=True)

            samples = sample(stage, every, time.time() + seconds + 60, show)
            sender.terminate()
            stage.wait()
    finally:
        xvfb.terminate()
    warm = max(60.0, seconds / 5)
    after = [s for s in samples if s[0] >= warm]
    if len(after) < 2:
        sys.exit("the run was too short to measure after the warm-up")
    first, last = after[0][1], after[-1][1]
    peak = max(s[1] for s in after)
    print(f"\nafter {warm / 60:.1f} min of warm-up: {mb(first)} -> {mb(last)} at the end "
          f"(growth {mb(last - first)}, peak {mb(peak)}) over {(after[-1][0] - warm) / 60:.1f} min")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default="target/release/facewire")
    p.add_argument("--example", default="target/release/examples/gl_context")
    p.add_argument("--seconds", type=float, default=12.0, help="length of the split's run")
    p.add_argument("--soak", type=float, metavar="MINUTES", help="run the soak for MINUTES")
    p.add_argument("--every", type=float, default=10.0, help="soak sample period, seconds")
    a = p.parse_args()
    if a.soak:
        soak(a.bin, a.soak, a.every)
    else:
        split(a.bin, a.example, a.seconds)


if __name__ == "__main__":
    main()
