#!/usr/bin/env python3
"""Frame rate and CPU per frame of facewire's stage beside a web peer, on Godette, in one run.

Starts a private Xvfb display (so both sides draw with Mesa's llvmpipe where there is no GPU),
then, one after the other:

  (a) facewire: `facewire run --model <Godette> --replay <take> --exit-after S --no-panel` in its
      1280x720 stage window, replaying a generated Live Link Face take in which all 52 channels
      and the head move (benches/stage_cpu.py), with a copy of config/facewire.toml whose camera
      shows the whole body (zoom 0.6, offset_y -0.55). Frames come from its "stage closed" log
      line, the frame rate over the time the stage was open ("stage ready" to "stage closed");
      CPU is the process's user + system time (getrusage of children), loading included.
  (b) the web peer: benches/peer/index.html (three.js and @pixiv/three-vrm) in Chromium, headful,
      in a 1280x720 app window, WebGL through ANGLE's OpenGL backend on the same llvmpipe. The page
      lowers the arms from the T-pose, frames the whole body, puts seven VRM 0.x expressions on
      slow sines, turns the head, updates the spring bones (vrm.update) and renders without
      antialiasing on every requestAnimationFrame, reporting its frame count to this script's local HTTP server every half second. After the
      model is loaded and a 3 s warm-up, frames and the CPU time of every Chromium process (user +
      system from /proc/<pid>/stat of the browser's whole session and its crash handlers, reaped
      children included) are taken over S seconds.

and prints a Markdown table: side, frames, fps, CPU seconds, CPU ms per frame, the CPU time the
X server spent meanwhile (counted on neither side), and the GL renderer string each side used.

One-time setup, then the run (from the repository root):

    apt-get install -y xvfb chromium
    (cd benches/peer && npm ci)
    cargo build --release
    python3 benches/peer.py [--seconds 20] [--bin target/release/facewire] [--display :94]

Both sides are capped at 60 frames per second (facewire's fps_cap, Chromium's frame clock).
"""

import argparse
import base64
import datetime
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no benches/__pycache__ from importing stage_cpu
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stage_cpu import run as run_stage, start_xvfb, take  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "benches", "peer")
GODETTE = "/work/shared/fixtures/vrm/godot-vrm/Godette_vrm_v4.vrm"
# The stage's camera on top of its automatic bust framing: Godette's whole body, about 90% of
# the picture's height, as the peer frames it.
ZOOM, OFFSET_Y = 0.6, -0.55
WARM_UP = 3.0
CHROMIUM_FLAGS = [
    # WebGL through ANGLE's OpenGL backend on the X server's GL (Mesa llvmpipe), not SwiftShader.
    "--use-gl=angle",
    "--use-angle=gl",
    "--ignore-gpu-blocklist",
    # Closed network, root, a throwaway profile.
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--password-store=basic",
    "--disable-features=Translate,MediaRouter",
    "--mute-audio",
    # Keep the frame clock running in a window that nothing covers but no window manager manages.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    "--window-position=0,0",
    # Without a window manager Chromium draws the app window's own title bar, 56 pixels tall:
    # the page's viewport is then 1280x720 (checked).
    "--window-size=1280,776",
]


def fail(message: str) -> None:
    sys.exit(f"peer.py: {message}")


def check(opts) -> str:
    """Checks what the run needs, each missing piece with its fix; returns Chromium's path."""
    if not shutil.which("Xvfb"):
        fail("Xvfb is missing: apt-get install -y xvfb")
    chromium = shutil.which(opts.chromium)
    if not chromium:
        fail(f"{opts.chromium} is missing: apt-get install -y chromium (or pass --chromium PATH)")
    for module in ("three", "@pixiv/three-vrm"):
        if not os.path.isdir(os.path.join(PAGE, "node_modules", module)):
            fail(f"benches/peer/node_modules/{module} is missing: (cd benches/peer && npm ci)")
    if not os.path.isfile(opts.model):
        fail(f"the avatar {opts.model} is missing: pass --model PATH to Godette_vrm_v4.vrm")
    if not os.access(opts.bin, os.X_OK):
        fail(f"{opts.bin} is missing: cargo build --release (or pass --bin PATH)")
    if os.path.exists(f"/tmp/.X11-unix/X{opts.display.lstrip(':')}"):
        fail(f"display {opts.display} is taken: pass another with --display :N")
    return chromium


def full_body_config(path: str) -> None:
    """Writes config/facewire.toml (or, without one, just a [camera] table) with the full-body
    camera to `path`."""
    source = os.path.join(ROOT, "config", "facewire.toml")
    text = open(source).read() if os.path.isfile(source) else "[camera]\nzoom = 1.0\noffset_y = 0.0\n"
    text, zooms = re.subn(r"(?m)^zoom = .*$", f"zoom = {ZOOM}", text, count=1)
    text, offsets = re.subn(r"(?m)^offset_y = .*$", f"offset_y = {OFFSET_Y}", text, count=1)
    if zooms != 1 or offsets != 1:
        fail(f"{source} has no [camera] zoom and offset_y lines to change")
    with open(path, "w") as f:
        f.write(text)


def facewire(opts, tmp: str):
    csv = os.path.join(tmp, "take.csv")
    with open(csv, "w") as f:
        f.write(take(opts.seconds + 5))
    config = os.path.join(tmp, "facewire.toml")
    full_body_config(config)
    extra = ["--config", config, "--model", opts.model]
    if opts.screenshots:
        extra += ["--screenshots", os.path.join(opts.screenshots, "facewire")]
    logs = []
    frames, cpu, _, _ = run_stage(opts.bin, csv, opts.seconds, "auto", False, opts.display, extra, logs)
    log = logs[0]
    # The frame rate over the time the stage was open (its log's "stage ready" to "stage closed");
    # the CPU time is the whole process's, loading the avatar included.
    stamps = {}
    for event in ("stage ready", "stage closed"):
        m = re.search(r"^(\S+)Z .*" + event, log, re.M)
        if not m:
            fail(f"no '{event}' line in facewire's log:\n{log}")
        stamps[event] = datetime.datetime.fromisoformat(m.group(1)).timestamp()
    seconds = stamps["stage closed"] - stamps["stage ready"]
    m = re.search(r"OpenGL context created .*renderer=(.*?) version=(.*?) glsl", log)
    renderer = f"{m.group(1)}, OpenGL {m.group(2)}" if m else "(not logged)"
    m = re.search(r"morph path resolved .*path=(\w+)", log)
    morph = m.group(1).lower() if m else "?"
    return frames, seconds, cpu, renderer, morph


class Peer(http.server.ThreadingHTTPServer):
    """Serves benches/peer, the avatar as /model.vrm, and takes the page's reports."""

    daemon_threads = True

    def __init__(self, model: str):
        super().__init__(("127.0.0.1", 0), Handler)
        self.model = model
        self.reports = []  # (seconds since the epoch, the report), in arrival order
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)

    def wait_for(self, pred, timeout: float):
        deadline = time.time() + timeout
        with self.arrived:
            while True:
                for _, r in self.reports:
                    if r.get("event") == "error":
                        fail(f"the peer page failed: {r.get('message')}")
                hit = pred(self.reports)
                if hit is not None or time.time() > deadline:
                    return hit
                self.arrived.wait(0.2)


class Handler(http.server.BaseHTTPRequestHandler):
    TYPES = {".html": "text/html", ".js": "text/javascript", ".json": "application/json"}

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = urllib.parse.urlparse(self.path).path
        if path == "/model.vrm":
            file, kind = self.server.model, "model/gltf-binary"
        else:
            file = os.path.realpath(os.path.join(PAGE, path.lstrip("/") or "index.html"))
            kind = self.TYPES.get(os.path.splitext(file)[1], "application/octet-stream")
            if not file.startswith(PAGE + os.sep) or not os.path.isfile(file):
                self.send_error(404)
                return
        with open(file, "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            report = json.loads(body)
        except ValueError:
            report = {"event": "error", "message": f"unreadable report {body[:100]!r}"}
        with self.server.arrived:
            self.server.reports.append((time.time(), report))
            self.server.arrived.notify_all()
        self.send_response(204)
        self.end_headers()


def stat(pid) -> list:
    """The fields of /proc/<pid>/stat after the command's name (state ppid pgrp session ...), or
    an empty list for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_of(fields: list) -> float:
    """User + system seconds of a process (stat's utime and stime) with those of the children it
    has reaped (cutime and cstime)."""
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def crashpad_handlers() -> set:
    """The pids of Chromium's crash handlers, which leave the browser's session (setsid)."""
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().startswith("chrome_crashpad"):
                    pids.add(pid)
        except OSError:
            pass
    return pids


def chromium_cpu(sid: int, foreign: set):
    """CPU seconds (`cpu_of`) of every live process in session `sid` and of the crash handlers not
    in `foreign` (those that ran before this browser), and how many processes that is."""
    fields = [stat(pid) for pid in os.listdir("/proc") if pid.isdigit()]
    members = [f for f in fields if f and int(f[3]) == sid]
    members += [stat(pid) for pid in crashpad_handlers() - foreign]
    return sum(cpu_of(f) for f in members), len([f for f in members if f])


def frames_at(reports, t: float) -> float:
    """The page's frame count at `t` (seconds since the epoch), interpolated between reports."""
    points = [(r["t"] / 1000.0, r["frames"]) for _, r in reports if r.get("event") == "frames"]
    for (t0, f0), (t1, f1) in zip(points, points[1:]):
        if t0 <= t <= t1 and t1 > t0:
            return f0 + (f1 - f0) * (t - t0) / (t1 - t0)
    span = f"{points[0][0]:.1f} to {points[-1][0]:.1f}" if points else "none"
    fail(f"no frame reports around {t:.1f} (reports: {span})")


def peer(opts, chromium: str, tmp: str, xvfb: int):
    server = Peer(opts.model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html?model=/model.vrm"
    if opts.screenshots:
        url += "&shot=1"
    args = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={os.path.join(tmp, 'chromium')}", f"--app={url}"]
    env = dict(os.environ, DISPLAY=opts.display, DBUS_SESSION_BUS_ADDRESS="disabled:")
    log = open(os.path.join(tmp, "chromium.log"), "w")
    foreign = crashpad_handlers()
    browser = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = server.wait_for(
            lambda rs: next((r for _, r in rs if r.get("event") == "ready"), None), 90
        )
        if ready is None:
            with open(log.name) as f:
                tail = f.read()[-3000:]
            fail(f"the peer page did not get ready in 90 s; Chromium said:\n{tail}")
        renderer = ready["renderer"]
        if ready["viewport"] != [1280, 720] or ready["canvas"] != [1280, 720]:
            fail(f"the peer's viewport is {ready['viewport']} and its canvas {ready['canvas']}, not 1280x720: "
                 "change --window-size in CHROMIUM_FLAGS")
        if "llvmpipe" not in renderer:
            fail(f"Chromium's WebGL is not on llvmpipe but {renderer!r}")
        time.sleep(WARM_UP)
        t0, (cpu0, _), x0 = time.time(), chromium_cpu(browser.pid, foreign), cpu_of(stat(xvfb))
        time.sleep(opts.seconds)
        t1, (cpu1, processes), x1 = time.time(), chromium_cpu(browser.pid, foreign), cpu_of(stat(xvfb))
        if browser.poll() is not None:
            fail("Chromium exited during the measurement")
        reports = server.wait_for(
            lambda rs: list(rs) if any(r.get("t", 0) / 1000.0 > t1 for _, r in rs) else None, 5
        )
        if reports is None:
            fail("the peer page stopped reporting frames")
        frames = frames_at(reports, t1) - frames_at(reports, t0)
        shot = next((r["png"] for _, r in reports if r.get("event") == "shot"), None)
        if opts.screenshots and shot:
            with open(os.path.join(opts.screenshots, "peer.png"), "wb") as f:
                f.write(base64.b64decode(shot.split(",", 1)[1]))
        ready["processes"] = processes
        return round(frames), t1 - t0, cpu1 - cpu0, x1 - x0, renderer, ready
    finally:
        try:
            os.killpg(browser.pid, signal.SIGTERM)
            browser.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
        except ProcessLookupError:
            pass
        for pid in crashpad_handlers() - foreign:  # they end with the browser; if not, now
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass
        log.close()
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "facewire"))
    parser.add_argument("--display", default=":94")
    parser.add_argument("--model", default=GODETTE)
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument(
        "--screenshots",
        metavar="DIR",
        help="write facewire/stage.png and peer.png here, to check the framing (the peer's costs it one read-back in its warm-up)",
    )
    opts = parser.parse_args()
    opts.model = os.path.abspath(opts.model)
    if opts.screenshots:
        opts.screenshots = os.path.abspath(opts.screenshots)
        os.makedirs(opts.screenshots, exist_ok=True)
    chromium = check(opts)
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout
    version = " ".join(re.findall(r"Chromium [\d.]+", version)) or "Chromium"
    os.chdir(ROOT)  # facewire's configuration names its other files relative to the repository
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        xvfb = start_xvfb(opts.display)
        try:
            x0 = cpu_of(stat(xvfb.pid))
            frames, seconds, cpu, renderer, morph = facewire(opts, tmp)
            x1 = cpu_of(stat(xvfb.pid))
            rows.append((f"facewire stage ({morph} morph path)", frames, seconds, cpu, x1 - x0, renderer))
            frames, seconds, cpu, x, renderer, ready = peer(opts, chromium, tmp, xvfb.pid)
            rows.append((f"web peer ({version})", frames, seconds, cpu, x, renderer))
        finally:
            xvfb.terminate()
            xvfb.wait()
    print(
        f"Godette, {opts.seconds:g} s a side. Peer: viewport {ready['viewport'][0]}x{ready['viewport'][1]}, "
        f"canvas {ready['canvas'][0]}x{ready['canvas'][1]}, expressions {', '.join(ready['expressions'])}, "
        f"{ready['springs']} spring joints, {ready['processes']} Chromium processes. "
        f"Load average after the run: {' '.join(open('/proc/loadavg').read().split()[:3])}."
    )
    print()
    print("| side | frames | fps | CPU (s) | CPU per frame (ms) | Xvfb CPU (s) | renderer |")
    print("|---|---|---|---|---|---|---|")
    for side, frames, seconds, cpu, x, renderer in rows:
        print(
            f"| {side} | {frames} | {frames / seconds:.1f} | {cpu:.2f} | "
            f"{1000 * cpu / max(frames, 1):.1f} | {x:.2f} | {renderer} |"
        )


if __name__ == "__main__":
    main()
