#!/usr/bin/env python3
"""The webcam tracker's three networks on other runtimes, one thread, per call: onnxruntime on the
ONNX files facewire ships (models/mediapipe/), and TFLite with XNNPACK (what MediaPipe runs) on the
task bundle's TFLite files. Prints the median of 50 calls after 5 to warm up. With
`cargo bench --bench tracker` (tract's times) it says how far each runtime is from the others.

    python3 -m venv /tmp/rt && /tmp/rt/bin/pip install onnxruntime tensorflow-cpu
    unzip face_landmarker.task -d /tmp/task
    taskset -c 0 /tmp/rt/bin/python benches/webcam_runtimes.py /tmp/task

Run it from the repository's root. Either runtime may be missing; it is then skipped.
"""
import os
import sys
import time

import numpy as np

NETWORKS = [
    ("face_detector", (1, 128, 128, 3)),
    ("face_landmarks_detector", (1, 256, 256, 3)),
    ("face_blendshapes", (1, 146, 2)),
]


def median_ms(call):
    for _ in range(5):
        call()
    times = []
    for _ in range(50):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return 1000 * sorted(times)[len(times) // 2]


def onnxruntime_times():
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    for name, shape in NETWORKS:
        session = ort.InferenceSession(f"models/mediapipe/{name}.onnx", options)
        feed = {session.get_inputs()[0].name: np.random.rand(*shape).astype(np.float32)}
        print(f"onnxruntime {ort.__version__}  {name:24} {median_ms(lambda: session.run(None, feed)):6.2f} ms")


def tflite_times(folder):
    import tensorflow as tf

    for name, shape in NETWORKS:
        it = tf.lite.Interpreter(model_path=os.path.join(folder, f"{name}.tflite"), num_threads=1)
        index = it.get_input_details()[0]["index"]
        it.resize_tensor_input(index, list(shape))
        it.allocate_tensors()
        x = np.random.rand(*shape).astype(np.float32)

        def call():
            it.set_tensor(index, x)
            it.invoke()

        print(f"TFLite {tf.__version__} (XNNPACK)  {name:24} {median_ms(call):6.2f} ms")


def main():
    try:
        onnxruntime_times()
    except ImportError:
        print("onnxruntime is not installed: skipped")
    if len(sys.argv) > 1:
        try:
            tflite_times(sys.argv[1])
        except ImportError:
            print("tensorflow is not installed: TFLite skipped")


if __name__ == "__main__":
    main()
