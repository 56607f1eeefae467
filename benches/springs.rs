//! Spring bones: the cost of one 60 Hz frame of Godette's springs (`SpringSim::step`).
//!
//! Fixtures are read from `$FACEWIRE_FIXTURES`, else `../shared/fixtures`; without them the
//! benchmark prints a note and measures nothing. Run with `cargo bench --bench springs`;
//! figures are recorded in BENCHMARKS.md.

#![allow(missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use facewire::avatar::{self, spring::SpringSim};
use glam::Quat;

fn godette() -> Option<avatar::Avatar> {
    let fixtures = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    let path = fixtures.join("vrm/godot-vrm/Godette_vrm_v4.vrm");
    if !path.is_file() {
        eprintln!(
            "note: {} is absent; skipping the spring bone benchmarks",
            path.display()
        );
        return None;
    }
    Some(avatar::load(&path).expect("Godette loads"))
}

fn bench_springs(c: &mut Criterion) {
    let Some(g) = godette() else {
        return;
    };
    let head = g
        .vrm
        .as_ref()
        .and_then(|v| v.humanoid_bone("head"))
        .unwrap();
    let frame = Duration::from_secs_f64(1.0 / 60.0);
    let mut group = c.benchmark_group("spring_step_godette");
    // The head sways back and forth, so every frame interpolates the pose and moves the hair.
    group.bench_function("60hz_frame_head_moving", |b| {
        let mut sim = SpringSim::for_avatar(&g).unwrap();
        let mut pose = g.rest_pose();
        let mut f = 0u32;
        b.iter(|| {
            f = f.wrapping_add(1);
            pose.rotations[head] = Quat::from_rotation_y((f as f32 * 0.1).sin() * 0.6);
            sim.step(&g, &mut pose, frame);
        });
    });
    group.bench_function("60hz_frame_head_still", |b| {
        let mut sim = SpringSim::for_avatar(&g).unwrap();
        let mut pose = g.rest_pose();
        b.iter(|| sim.step(&g, &mut pose, frame));
    });
    group.finish();
}

criterion_group!(benches, bench_springs);
criterion_main!(benches);
