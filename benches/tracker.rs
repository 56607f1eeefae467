//! The webcam tracker's steps, each alone, on one frame of a face (the committed ICT-FaceKit
//! render `tests/webcam_reference/ict_rest.png`, 480x360): the detector (only when no face is
//! followed), the crop, the landmark network, the blendshape network, smoothing with the pose
//! fit, and a whole followed frame. With `benches/webcam.py` (the tracker beside MediaPipe on
//! real videos) it says where a frame's time goes.
//!
//! Run with `taskset -c 0 cargo bench --bench tracker`; figures are recorded in BENCHMARKS.md.

#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use facewire::webcam::detect::{anchors, detect};
use facewire::webcam::model::{Networks, BLENDSHAPE_INPUTS, LANDMARK_SIDE};
use facewire::webcam::roi::Border;
use facewire::webcam::smooth::Smoother;
use facewire::webcam::track::Tracker;
use facewire::webcam::Frame;

fn frame() -> Frame {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/webcam_reference/ict_rest.png"
    );
    let image = image::open(path).expect("the committed frame").to_rgb8();
    Frame {
        width: image.width(),
        height: image.height(),
        rgb: image.into_raw(),
    }
}

fn steps(c: &mut Criterion) {
    let networks = Arc::new(Networks::load().expect("the built-in networks"));
    let frame = frame();
    let anchors = anchors();
    let mut tracker = Tracker::new(networks.clone());
    let face = tracker
        .track(&frame, 0.0)
        .expect("tracks")
        .expect("a face in the frame");
    let mut group = c.benchmark_group("tracker");
    group.sample_size(30);
    let mut scratch = Vec::new();
    group.bench_function("detector (letterbox and network)", |b| {
        b.iter(|| detect(&networks, &anchors, black_box(&frame), &mut scratch).unwrap())
    });
    group.bench_function("crop 256x256", |b| {
        b.iter(|| {
            face.roi.sample(
                black_box(&frame),
                LANDMARK_SIDE,
                Border::Replicate,
                [0.0, 1.0],
                &mut scratch,
            )
        })
    });
    let crop = {
        let mut v = Vec::new();
        face.roi
            .sample(&frame, LANDMARK_SIDE, Border::Replicate, [0.0, 1.0], &mut v);
        v
    };
    group.bench_function("landmark network", |b| {
        b.iter(|| networks.landmarks.run(black_box(&crop)).unwrap())
    });
    let points: Vec<f32> = (0..BLENDSHAPE_INPUTS * 2).map(|i| i as f32).collect();
    group.bench_function("blendshape network", |b| {
        b.iter(|| networks.blendshapes.run(black_box(&points)).unwrap())
    });
    let mut smoother = Smoother::default();
    let mut t = 0.0;
    group.bench_function("smoothing and pose fit", |b| {
        b.iter(|| {
            let mut landmarks = face.landmarks.clone();
            t += 1.0 / 30.0;
            smoother.apply(&mut landmarks, t);
            facewire::webcam::pose::fit(black_box(&landmarks), frame.width, frame.height)
        })
    });
    let mut t = 1.0;
    group.bench_function("a followed frame, whole", |b| {
        b.iter(|| {
            t += 1.0 / 30.0;
            tracker.track(black_box(&frame), t).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
