#!/usr/bin/env python3
"""CPU and memory of `facewire relay` under a 60 Hz phone stream with one forward target.

Starts the relay (listening on a private loopback port, the phone listeners and the API off,
forwarding to a UDP socket this script drains), sends it the Live Link Face take from
../shared/fixtures (60 frames a second, as VMC, looped by `facewire replay`), lets it settle,
then reads the relay's own CPU time (user + system, all threads, from /proc/PID/stat) over
`--seconds` and its resident memory (VmRSS and VmHWM from /proc/PID/status). Linux only.

    cargo build --release
    python3 benches/relay_cpu.py [--seconds 30] [--bin target/release/facewire]

Run it from the repository's root.
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

TAKE = "../shared/fixtures/protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv"


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def memory_kb(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--bin", default="target/release/facewire")
    args = ap.parse_args()
    take = os.environ.get("FACEWIRE_FIXTURES")
    take = os.path.join(take, "protocols", os.path.basename(TAKE)) if take else TAKE
    if not os.path.exists(take):
        sys.exit(f"the Live Link Face take {take} is absent (set FACEWIRE_FIXTURES)")

    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.settimeout(0.2)
    received = [0]
    done = threading.Event()

    def drain():
        while not done.is_set():
            try:
                sink.recv(65536)
                received[0] += 1
            except socket.timeout:
                pass

    threading.Thread(target=drain, daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "facewire.toml")
        with open(config, "w") as f:
            f.write(
                f'[forward]\nto = ["127.0.0.1:{sink.getsockname()[1]}"]\n\n'
                "[api]\nenabled = false\n\n"
                f'[ingest]\nlisten = ["127.0.0.1:{port}"]\nifacialmocap = []\n'
                "facemotion3d = []\nlivelinkface = []\nvtubestudio = []\nopenseeface = []\n"
            )
        env = dict(os.environ, FACEWIRE_LOG="warn")
        relay = subprocess.Popen(
            [args.bin, "--config", config, "relay"], env=env, stdout=subprocess.DEVNULL
        )
        sender = subprocess.Popen(
            [args.bin, "replay", take, "--to", f"127.0.0.1:{port}", "--loop"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(3)
            c0, r0, t0 = cpu_seconds(relay.pid), received[0], time.monotonic()
            time.sleep(args.seconds)
            c1, r1, t1 = cpu_seconds(relay.pid), received[0], time.monotonic()
            mem = memory_kb(relay.pid)
        finally:
            sender.terminate()
            relay.terminate()
            status = relay.wait()
            sender.wait()
            done.set()
    wall = t1 - t0
    print(f"binary: {args.bin}")
    print(f"forwarded: {(r1 - r0) / wall:.1f} frames/s over {wall:.0f} s")
    print(f"relay CPU: {100 * (c1 - c0) / wall:.2f}% of one core")
    print(f"relay memory: VmRSS {mem['VmRSS'] / 1024:.1f} MB, peak {mem['VmHWM'] / 1024:.1f} MB")
    print(f"exit status after SIGTERM: {status}")


if __name__ == "__main__":
    main()
