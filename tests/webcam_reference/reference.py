#!/usr/bin/env python3
"""Prints reference.json: what the Python `mediapipe` package's FaceLandmarker (IMAGE mode, one
face, blendshapes on) reads in each PNG frame of this folder, for `tests/webcam.rs`.

    python3 -m venv /tmp/mp && /tmp/mp/bin/pip install mediapipe==1.2.3
    /tmp/mp/bin/python tests/webcam_reference/reference.py face_landmarker.task \
        > tests/webcam_reference/reference.json

face_landmarker.task: models/mediapipe/README.md says where it came from and its sha256.
"""
import glob
import json
import os
import sys

import mediapipe as mp
from mediapipe.tasks.python import BaseOptions, vision

# Landmarks whose positions are kept: the nose tip, the eyes' outer and inner corners, the lips'
# middles, the chin, the forehead and the irises' centres.
KEPT = [1, 33, 133, 263, 362, 13, 14, 152, 10, 468, 473]

here = os.path.dirname(os.path.abspath(__file__))
options = vision.FaceLandmarkerOptions(
    base_options=BaseOptions(model_asset_path=sys.argv[1]),
    running_mode=vision.RunningMode.IMAGE,
    num_faces=1,
    output_face_blendshapes=True,
)
landmarker = vision.FaceLandmarker.create_from_options(options)
frames = []
for path in sorted(glob.glob(os.path.join(here, "*.png"))):
    image = mp.Image.create_from_file(path)
    result = landmarker.detect(image)
    frame = {"file": os.path.basename(path), "face": bool(result.face_landmarks)}
    if result.face_landmarks:
        points = result.face_landmarks[0]
        frame["landmarks"] = {
            str(i): [round(points[i].x * image.width, 2), round(points[i].y * image.height, 2)]
            for i in KEPT
        }
        frame["blendshapes"] = {
            c.category_name: round(c.score, 5) for c in result.face_blendshapes[0]
        }
    frames.append(frame)
print(json.dumps({"mediapipe": mp.__version__, "frames": frames}, indent=1))
