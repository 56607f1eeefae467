//! The hot path allocates nothing: decoding VMC and Face Cap bundles and conditioning the
//! frames they commit, and applying face-shape sliders to a pose, counted by an instrumented
//! global allocator. A test binary of its own, so that the allocator counts nothing but this;
//! its tests take turns, so that one does not count the other's allocations.

#![allow(missing_docs)]

use std::alloc::System;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

use facewire::arkit::{Channel, FACECAP_ORDER};
use facewire::calibrate::{Conditioner, SmoothingConfig, TrackingConfig};
use facewire::ingest::{DatagramClass, Decoder};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Held by each test while it counts.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn message(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.into(),
        args,
    })
}

fn bundle(content: Vec<OscPacket>) -> Vec<u8> {
    rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content,
    }))
    .expect("encodable")
}

/// A VMC frame as phone bridges send it (52 values, the head and root, the sender's time and
/// status, Apply), its values moved by `step` so the filters do work.
fn vmc(step: usize) -> Vec<u8> {
    let mut content: Vec<OscPacket> = Channel::ALL
        .iter()
        .enumerate()
        .map(|(i, c)| {
            message(
                "/VMC/Ext/Blend/Val",
                vec![
                    OscType::String(c.pascal_name()),
                    OscType::Float(((i + step) % 52) as f32 / 52.0),
                ],
            )
        })
        .collect();
    let pose = |name: &str| {
        std::iter::once(OscType::String(name.into()))
            .chain([0.0, 1.5, 0.0, 0.05, 0.1 + step as f32 * 1e-3, 0.0, 0.99].map(OscType::Float))
            .collect()
    };
    content.push(message("/VMC/Ext/Root/Pos", pose("root")));
    content.push(message("/VMC/Ext/Bone/Pos", pose("Head")));
    content.push(message("/VMC/Ext/Bone/Pos", pose("LeftEye")));
    content.push(message(
        "/VMC/Ext/T",
        vec![OscType::Float(step as f32 / 60.0)],
    ));
    content.push(message(
        "/VMC/Ext/OK",
        vec![
            OscType::Int(1),
            OscType::Int(3),
            OscType::Int(0),
            OscType::Int(1),
        ],
    ));
    content.push(message("/VMC/Ext/Blend/Apply", vec![]));
    bundle(content)
}

/// A Face Cap datagram: every `/W` weight and the head and eye rotations.
fn facecap(step: usize) -> Vec<u8> {
    let mut content: Vec<OscPacket> = (0..FACECAP_ORDER.len())
        .map(|i| {
            message(
                "/W",
                vec![
                    OscType::Int(i as i32),
                    OscType::Float(((i + step) % 52) as f32 / 52.0),
                ],
            )
        })
        .collect();
    let floats = |v: &[f32]| v.iter().copied().map(OscType::Float).collect();
    content.push(message("/HT", floats(&[0.0, 0.1, 0.4])));
    content.push(message("/HR", floats(&[10.0, step as f32 * 0.1, 0.0])));
    content.push(message("/ELR", floats(&[5.0, -3.0])));
    content.push(message("/ERR", floats(&[5.0, -3.0])));
    bundle(content)
}

#[test]
fn decoding_and_conditioning_allocate_nothing_once_warm() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let datagrams: Vec<Vec<u8>> = (0..8).flat_map(|step| [vmc(step), facecap(step)]).collect();
    let from: SocketAddr = "192.168.1.20:50123".parse().unwrap();
    let tracking = TrackingConfig {
        stale_after: 3600.0,
        frozen_after: 3600.0,
        ..TrackingConfig::default()
    };
    let start = Instant::now();
    let mut decoder = Decoder::new();
    let mut conditioner = Conditioner::new(SmoothingConfig::default(), tracking, start);
    let mut frames = 0u64;
    let mut run = |decoder: &mut Decoder, n: usize| {
        for k in 0..n {
            let now = start + Duration::from_micros(16_667 * (frames + 1));
            let datagram = &datagrams[k % datagrams.len()];
            let outcome = decoder.decode(datagram, from, now, |frame| {
                let out = conditioner.on_frame(frame, now);
                assert!(out.frame.is_some());
                frames += 1;
            });
            assert_eq!(outcome.class, DatagramClass::Ok);
            assert_eq!(outcome.frames, 1);
        }
    };
    run(&mut decoder, 100);
    // The counter counts: an allocation of our own shows.
    let probe = Region::new(GLOBAL);
    drop(std::hint::black_box(vec![0u8; 16]));
    assert!(probe.change().allocations > 0);
    let region = Region::new(GLOBAL);
    run(&mut decoder, 1000);
    let change = region.change();
    assert_eq!(frames, 1100);
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "{change:?}"
    );
    let stats = decoder.stats();
    assert_eq!(stats.messages, 550 * 58 + 550 * 56);
    assert_eq!(
        stats.bad_arguments + stats.unknown_address + stats.malformed_datagrams,
        0
    );
}

#[test]
fn applying_sliders_allocates_nothing() {
    use facewire::avatar::{Avatar, Mesh, Node};
    use facewire::look::Look;
    use facewire::mapping::{CompiledMapping, MappingFile};
    use glam::Vec3;

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let node = |name: &str| Node {
        name: Some(name.into()),
        mesh: Some(0),
        ..Node::default()
    };
    let names: Vec<String> = ["look_eye_size_up", "look_eye_size_down", "Squint"]
        .map(String::from)
        .to_vec();
    let avatar = Avatar {
        nodes: vec![node("LeftEye"), node("RightEye")],
        roots: vec![0, 1],
        meshes: vec![Mesh {
            name: None,
            default_weights: vec![0.0; names.len()],
            target_names: names,
            primitives: vec![],
        }],
        ..Avatar::default()
    };
    let text = "version = 1\n\
                [sliders.eye_size]\nup = \"look_eye_size_up\"\ndown = \"look_eye_size_down\"\n\
                targets = { Squint = { spline = [[-1.0, 1.0], [-0.5, 0.2], [0.0, 0.0]] } }\n\
                [sliders.eye_spacing]\nnodes = { LeftEye = [0.003, 0.0, 0.0], RightEye = [-0.003, 0.0, 0.0] }\n";
    let mapping =
        CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &avatar).unwrap();
    let sliders = mapping.sliders();
    let rest = avatar.rest_pose();
    let mut pose = rest.clone();
    let mut values = Look::default().values(sliders);
    // The counter sees every thread: the test harness reporting another test's result can
    // allocate while this one counts. An allocation in `apply` would show 1000 times in every
    // round, so the quietest of three rounds is the one to judge.
    let mut change = None::<stats_alloc::Stats>;
    for _ in 0..3 {
        let region = Region::new(GLOBAL);
        for k in 0..1000 {
            let x = (k as f32 * 0.01).sin();
            values.set(0, x);
            values.set(1, -x);
            pose.clone_from(&rest);
            sliders.apply(&values, &mut pose);
        }
        let round = region.change();
        if change.is_none_or(|c| {
            round.allocations + round.reallocations < c.allocations + c.reallocations
        }) {
            change = Some(round);
        }
    }
    let change = change.unwrap();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "{change:?}"
    );
    assert!(pose.weights[0].iter().any(|&w| w > 0.0));
    assert!(pose.translations[0] != Vec3::ZERO);
}
