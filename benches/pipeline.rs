//! Benchmarks of the per-frame hot paths: the sparse CPU blend, decode + calibrate, and the
//! ingest chain from a datagram to the frame handed off (conditioner and mixer).
//!
//! Run with `cargo bench --bench pipeline`; figures are recorded in BENCHMARKS.md.

#![allow(missing_docs)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use glam::{Vec2, Vec3};
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

use facewire::arkit::Channel;
use facewire::avatar::blend::CpuBlender;
use facewire::avatar::{MorphTarget, Primitive};
use facewire::calibrate::{Calibrator, Conditioner, SmoothingConfig, TrackingConfig};
use facewire::ingest::Decoder;
use facewire::render::headless::HeadlessContext;
use facewire::render::DrawTarget;

/// A UV sphere of `rings` x `segments` vertices with 52 targets, each moving the vertices within
/// a cap around its own direction (about `share` of the sphere), like a face's local shapes.
fn sphere(rings: usize, segments: usize, share: f32) -> Primitive {
    let mut prim = Primitive::default();
    for r in 0..rings {
        let v = r as f32 / (rings - 1) as f32;
        let theta = v * std::f32::consts::PI;
        for s in 0..segments {
            let u = s as f32 / segments as f32;
            let phi = u * std::f32::consts::TAU;
            let n = Vec3::new(
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            );
            prim.positions.push(n);
            prim.normals.push(n);
            prim.uvs.push(Vec2::new(u, v));
        }
    }
    let cos_cap = 1.0 - 2.0 * share;
    for t in 0..52 {
        let a = t as f32 * 2.399_963;
        let dir = Vec3::new(a.cos(), (t as f32 / 26.0) - 1.0, a.sin()).normalize();
        let mut target = MorphTarget::default();
        for p in &prim.positions {
            let d = p.dot(dir);
            let k = if d > cos_cap {
                (d - cos_cap) / (1.0 - cos_cap)
            } else {
                0.0
            };
            target.positions.push(*p * 0.05 * k);
            target.normals.push(Vec3::new(0.01, 0.0, 0.0) * k);
        }
        prim.targets.push(target);
    }
    prim
}

fn bench_blend(c: &mut Criterion) {
    let prim = sphere(101, 101, 0.15);
    let blender = CpuBlender::new(&prim);
    let n = prim.positions.len();
    let mut positions = vec![Vec3::ZERO; n];
    let mut normals = vec![Vec3::ZERO; n];
    let mut interleaved = vec![0.0f32; n * 6];
    let all: Vec<f32> = (0..52).map(|i| (i as f32 * 0.37).sin().abs()).collect();
    let mut twelve = vec![0.0f32; 52];
    for i in (0..52).step_by(4).take(12) {
        twelve[i] = 0.6;
    }
    let mut group = c.benchmark_group("cpu_blend_10k_verts_52_targets");
    group.bench_function("all_52_active", |b| {
        b.iter(|| blender.blend(black_box(&all), &mut positions, &mut normals))
    });
    group.bench_function("12_active", |b| {
        b.iter(|| blender.blend(black_box(&twelve), &mut positions, &mut normals))
    });
    group.bench_function("12_active_interleaved", |b| {
        b.iter(|| blender.blend_interleaved(black_box(&twelve), &mut interleaved))
    });
    group.finish();

    let head_path = concat!(env!("CARGO_MANIFEST_DIR"), "/models/default_head.glb");
    if let Ok(avatar) = facewire::avatar::load(std::path::Path::new(head_path)) {
        let mut group = c.benchmark_group("cpu_blend_default_head");
        let blenders: Vec<(CpuBlender, usize)> = avatar
            .meshes
            .iter()
            .enumerate()
            .flat_map(|(m, mesh)| mesh.primitives.iter().map(move |p| (CpuBlender::new(p), m)))
            .collect();
        let weights: Vec<Vec<f32>> = avatar
            .meshes
            .iter()
            .map(|m| {
                (0..m.target_count())
                    .map(|i| if i % 3 == 0 { 0.5 } else { 0.0 })
                    .collect()
            })
            .collect();
        let mut buffers: Vec<Vec<f32>> = blenders
            .iter()
            .map(|(b, _)| vec![0.0; b.vertex_count() * 6])
            .collect();
        group.bench_function("a_third_of_targets_active", |b| {
            b.iter(|| {
                for ((blender, mesh), out) in blenders.iter().zip(&mut buffers) {
                    let _ = blender.blend_interleaved(black_box(&weights[*mesh]), out);
                }
            })
        });
        group.finish();
    }
}

/// One VMC frame as a phone bridge sends it: 52 values, the head bone, Apply, in one bundle.
fn vmc_datagram() -> Vec<u8> {
    let mut content: Vec<OscPacket> = Channel::ALL
        .iter()
        .enumerate()
        .map(|(i, c)| {
            OscPacket::Message(OscMessage {
                addr: "/VMC/Ext/Blend/Val".into(),
                args: vec![
                    OscType::String(c.pascal_name()),
                    OscType::Float(i as f32 / 52.0),
                ],
            })
        })
        .collect();
    content.push(OscPacket::Message(OscMessage {
        addr: "/VMC/Ext/Bone/Pos".into(),
        args: std::iter::once(OscType::String("Head".into()))
            .chain([0.0, 1.5, 0.0, 0.05, 0.1, 0.0, 0.99].map(OscType::Float))
            .collect(),
    }));
    content.push(OscPacket::Message(OscMessage {
        addr: "/VMC/Ext/Blend/Apply".into(),
        args: vec![],
    }));
    rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content,
    }))
    .expect("encodable")
}

fn bench_decode(c: &mut Criterion) {
    let datagram = vmc_datagram();
    let from: SocketAddr = "192.168.1.20:50123".parse().unwrap();
    let mut decoder = Decoder::new();
    let mut calibrator = Calibrator::new(SmoothingConfig::default());
    let mut t = Instant::now();
    c.bench_function("decode_and_calibrate_vmc_52", |b| {
        b.iter_batched(
            || {
                t += Duration::from_micros(16_667);
                t
            },
            |now| {
                let mut out = None;
                decoder.decode(black_box(&datagram), from, now, |f| {
                    out = Some(calibrator.apply(f));
                });
                out
            },
            BatchSize::SmallInput,
        )
    });
    // The two halves alone: decoding the bundle into its frame, and conditioning that frame.
    let mut decoder = Decoder::new();
    let received = Instant::now();
    c.bench_function("decode_vmc_52", |b| {
        b.iter(|| {
            let mut present = 0;
            decoder.decode(black_box(&datagram), from, received, |f| {
                present = f.present.len();
            });
            present
        })
    });
    let mut frame = None;
    Decoder::new().decode(&datagram, from, received, |f| frame = Some(*f));
    let mut frame = frame.expect("the bundle commits a frame");
    let mut calibrator = Calibrator::new(SmoothingConfig::default());
    c.bench_function("calibrate_52", |b| {
        b.iter_batched(
            || {
                t += Duration::from_micros(16_667);
                t
            },
            |now| {
                frame.received = now;
                calibrator.apply(black_box(&frame))
            },
            BatchSize::SmallInput,
        )
    });
}

/// The ingest chain per frame, from a VMC datagram to the frame handed to the render thread:
/// decode, condition (remap, clamp, smooth, tracking state) and mix the layers. Tracking-loss
/// detection is pushed out of the way: the benchmark repeats one datagram, which would otherwise
/// read as a frozen sender.
fn bench_chain(c: &mut Criterion) {
    use facewire::mixer::{BlendMode, Fade, Layer, Mixer, Region, RegionMask};
    let datagram = vmc_datagram();
    let from: SocketAddr = "192.168.1.20:50123".parse().unwrap();
    let tracking = TrackingConfig {
        stale_after: 3600.0,
        frozen_after: 3600.0,
        ..TrackingConfig::default()
    };
    let mut group = c.benchmark_group("datagram_to_handoff");
    let mut run = |name: &str, mut mixer: Option<Mixer>| {
        let mut decoder = Decoder::new();
        let mut core = Conditioner::new(SmoothingConfig::default(), tracking, Instant::now());
        let mut t = Instant::now();
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    t += Duration::from_micros(16_667);
                    t
                },
                |now| {
                    let mut out = None;
                    decoder.decode(black_box(&datagram), from, now, |f| {
                        let conditioned = core.on_frame(f, now);
                        out = match (mixer.as_mut(), conditioned.layer) {
                            (Some(m), Some((values, presence))) => {
                                m.set_tracking_layer(&values, presence);
                                Some(m.mix(now))
                            }
                            _ => conditioned.frame,
                        };
                    });
                    out
                },
                BatchSize::SmallInput,
            )
        });
    };
    run("condition", None);
    run("condition_mix_tracking", Some(Mixer::tracking_only()));
    let mut smile = Layer::new(
        "smile",
        BlendMode::Add,
        RegionMask::of(&[Region::MouthJaw]),
        Fade::new(true, Duration::ZERO, Duration::ZERO),
    );
    smile.values.set(Channel::MouthSmileLeft, 0.2);
    smile.values.set(Channel::MouthSmileRight, 0.2);
    let mut layers = Mixer::tracking_only().layers().to_vec();
    layers.push(smile);
    run("condition_mix_two_layers", Some(Mixer::new(layers)));
    group.finish();
}

/// Where the render benchmarks draw: 1280x720 over the chroma green.
const FRAME_TARGET: DrawTarget = DrawTarget {
    width: 1280,
    height: 720,
    clear_color: [0.0, 0.69, 0.25, 1.0],
    alpha: false,
};

/// A single-sampled 1280x720 headless context, or `None` with a note when there is no EGL
/// device.
fn frame_context() -> Option<HeadlessContext> {
    match HeadlessContext::with_samples(1280, 720, 0) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("note: no headless GL context ({e}); skipping render benchmarks");
            None
        }
    }
}

/// One offscreen 1280x720 frame of the default head with 12 animated weights: set the pose,
/// morph (cpu or gpu path), draw, glFinish. Skipped with a note when no EGL device is available.
fn bench_render(c: &mut Criterion) {
    use facewire::app::Scene;
    use facewire::arkit::{FaceFrame, Protocol};
    use facewire::headgen::DEFAULT_HEAD_GLB;
    use facewire::render::MorphMode;

    let mut group = c.benchmark_group("render_frame_1280x720_default_head");
    group.sample_size(30);
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let Some(ctx) = frame_context() else {
            return;
        };
        let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").unwrap();
        let mut scene = Scene::new(ctx.gl(), avatar, mode).unwrap();
        let target = FRAME_TARGET;
        let from: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let mut frame = FaceFrame::empty(Protocol::Vmc, from, Instant::now());
        let mut step = 0u32;
        group.bench_function(format!("{mode}"), |b| {
            b.iter(|| {
                step += 1;
                for (k, c) in Channel::ALL.iter().step_by(4).take(12).enumerate() {
                    frame.set(*c, ((step + k as u32) as f32 * 0.1).sin().abs());
                }
                scene.set_frame(Some(&frame));
                ctx.bind();
                scene.draw(&target);
                ctx.finish();
            })
        });
    }
    group.finish();
}

/// One offscreen 1280x720 frame of Godette (VRM 0.x: 2 skinned meshes on 68 joints, 15 face
/// targets, MToon with outlines): animated face weights and a turning head bone, on both morph
/// paths, and on the cpu path once more with the outlines removed (what the outline pass costs).
/// Skipped with a note when the fixtures or an EGL device are absent.
fn bench_render_godette(c: &mut Criterion) {
    use facewire::app::Scene;
    use facewire::render::MorphMode;
    use std::path::PathBuf;

    let fixtures = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    let path = fixtures.join("vrm/godot-vrm/Godette_vrm_v4.vrm");
    let Ok(avatar) = facewire::avatar::load(&path) else {
        eprintln!(
            "note: {} is absent or unreadable; skipping the Godette render benchmarks",
            path.display()
        );
        return;
    };
    let Some(head) = avatar.find_node("head_Armature") else {
        eprintln!("note: Godette has no head_Armature node; skipping its render benchmarks");
        return;
    };
    let mut plain = avatar.clone();
    for material in &mut plain.materials {
        if let Some(toon) = &mut material.toon {
            toon.outline = None;
        }
    }
    let mut group = c.benchmark_group("render_frame_1280x720_godette");
    group.sample_size(30);
    for (label, mode, avatar) in [
        ("cpu", MorphMode::Cpu, &avatar),
        ("gpu", MorphMode::Gpu, &avatar),
        ("cpu_no_outlines", MorphMode::Cpu, &plain),
    ] {
        let Some(ctx) = frame_context() else {
            return;
        };
        let mut scene = Scene::new(ctx.gl(), avatar.clone(), mode).unwrap();
        let target = FRAME_TARGET;
        let mut step = 0u32;
        group.bench_function(label, |b| {
            b.iter(|| {
                step += 1;
                let t = step as f32 * 0.1;
                scene.set_pose(|pose| {
                    for weights in &mut pose.weights {
                        for (k, w) in weights.iter_mut().enumerate().step_by(3) {
                            *w = (t + k as f32).sin().abs();
                        }
                    }
                    pose.rotations[head] = glam::Quat::from_rotation_y(0.4 * t.sin());
                });
                ctx.bind();
                scene.draw(&target);
                ctx.finish();
            })
        });
    }
    group.finish();
}

/// The ICT-FaceKit OBJ shape set, extracted once into `target/bench-ict/FaceXModel`; `None`
/// with a note when the fixtures (`$FACEWIRE_FIXTURES`, else `../shared/fixtures`) are absent.
fn ict_face_folder() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let fixtures = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    let archive = fixtures.join("faces/ict-facekit/ICT-FaceKit-FaceXModel.tar.xz");
    if !archive.is_file() {
        eprintln!(
            "note: {} is absent; skipping the ICT-FaceKit benchmarks",
            archive.display()
        );
        return None;
    }
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-ict");
    let folder = out.join("FaceXModel");
    // Written after a complete extraction, so an interrupted one is redone.
    let done = out.join("extracted");
    if !done.is_file() {
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).ok()?;
        let status = std::process::Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .arg("-C")
            .arg(&out)
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!(
                "note: cannot extract {}; skipping the ICT-FaceKit benchmarks",
                archive.display()
            );
            return None;
        }
        std::fs::write(&done, b"").ok()?;
    }
    Some(folder)
}

/// The ICT-FaceKit face (26,719 vertices, 55 targets: 51 ARKit shapes with its halves combined,
/// and 4 others): importing the whole OBJ set, the CPU blend with every target active, and
/// 1280x720 frames on both morph paths with all 52 channels active.
fn bench_ict_face(c: &mut Criterion) {
    use facewire::app::Scene;
    use facewire::arkit::{FaceFrame, Protocol};
    use facewire::objimport::{self, ImportOptions};
    use facewire::render::MorphMode;

    let Some(folder) = ict_face_folder() else {
        return;
    };
    let neutral = folder.join("generic_neutral_mesh.obj");
    let options = ImportOptions {
        combine_halves: true,
        ..ImportOptions::default()
    };
    let mut group = c.benchmark_group("ict_face_import");
    group.sample_size(10);
    group.bench_function("whole_set_58_obj_files", |b| {
        b.iter(|| objimport::import(&neutral, &folder, &options).expect("ICT import"))
    });
    group.finish();
    let glb = objimport::import(&neutral, &folder, &options)
        .expect("ICT import")
        .glb;
    let avatar = facewire::avatar::load_slice(&glb, "ict-face").expect("ICT face loads");

    let prim = &avatar.meshes[0].primitives[0];
    let blender = CpuBlender::new(prim);
    let n = prim.positions.len();
    let all: Vec<f32> = (0..avatar.meshes[0].target_count())
        .map(|i| 0.1 + 0.9 * (i as f32 * 0.37).sin().abs())
        .collect();
    let mut positions = vec![Vec3::ZERO; n];
    let mut normals = vec![Vec3::ZERO; n];
    let mut interleaved = vec![0.0f32; n * 6];
    let mut group = c.benchmark_group("cpu_blend_ict_face_26k_verts");
    group.bench_function("all_55_targets_active", |b| {
        b.iter(|| blender.blend(black_box(&all), &mut positions, &mut normals))
    });
    group.bench_function("all_55_targets_active_interleaved", |b| {
        b.iter(|| blender.blend_interleaved(black_box(&all), &mut interleaved))
    });
    group.finish();

    let mut group = c.benchmark_group("render_frame_1280x720_ict_face_52_active");
    group.sample_size(20);
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let Some(ctx) = frame_context() else {
            return;
        };
        let mut scene = Scene::new(ctx.gl(), avatar.clone(), mode).unwrap();
        let target = FRAME_TARGET;
        let from: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let mut frame = FaceFrame::empty(Protocol::Vmc, from, Instant::now());
        let mut step = 0u32;
        group.bench_function(format!("{mode}"), |b| {
            b.iter(|| {
                step += 1;
                for (k, c) in Channel::ALL.iter().enumerate() {
                    let phase = (step + k as u32) as f32 * 0.1;
                    frame.set(*c, 0.05 + 0.5 * phase.sin().abs());
                }
                scene.set_frame(Some(&frame));
                ctx.bind();
                scene.draw(&target);
                ctx.finish();
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_blend,
    bench_decode,
    bench_chain,
    bench_render,
    bench_render_godette,
    bench_ict_face
);
criterion_main!(benches);
