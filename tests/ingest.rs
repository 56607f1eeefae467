//! Ingest over real loopback UDP (VMC, Face Cap, liblo's `oscsend`) and hostile input.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, ChannelMask, FaceFrame, Protocol, FACECAP_ORDER};
use facewire::ingest::{
    spawn, DatagramClass, Decoder, IngestConfig, IngestError, IngestHandle, Stats, MAX_DATAGRAM,
    MAX_SENDERS,
};
use glam::Quat;
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

/// How long a socket test waits for something that should happen within milliseconds.
const WAIT: Duration = Duration::from_secs(5);

/// Starts ingest on a free loopback port; frames arrive on the returned channel.
fn start() -> (IngestHandle, Receiver<FaceFrame>, SocketAddr) {
    let (tx, rx) = mpsc::channel();
    let config = IngestConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..IngestConfig::default()
    };
    let handle = spawn(
        config,
        Box::new(move |frame| {
            let _ = tx.send(frame);
        }),
    )
    .expect("ingest starts on 127.0.0.1:0");
    let addr = handle.local_addrs()[0];
    assert_ne!(addr.port(), 0, "port 0 is resolved");
    (handle, rx, addr)
}

/// The next frame, or a panic after [`WAIT`].
fn next_frame(rx: &Receiver<FaceFrame>) -> FaceFrame {
    match rx.recv_timeout(WAIT) {
        Ok(frame) => frame,
        Err(RecvTimeoutError::Timeout) => panic!("no frame within {WAIT:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("the ingest thread ended"),
    }
}

/// Waits (bounded) until the stats satisfy `done`, and returns them.
fn wait_for_stats(handle: &IngestHandle, done: impl Fn(&Stats) -> bool) -> Stats {
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = handle.stats();
        if done(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "stats never reached the expected state: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn sender() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

fn msg(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.to_string(),
        args,
    })
}

fn val(name: &str, value: f32) -> OscPacket {
    msg(
        "/VMC/Ext/Blend/Val",
        vec![OscType::String(name.to_string()), OscType::Float(value)],
    )
}

fn apply() -> OscPacket {
    msg("/VMC/Ext/Blend/Apply", vec![])
}

fn w(index: i32, value: f32) -> OscPacket {
    msg("/W", vec![OscType::Int(index), OscType::Float(value)])
}

fn floats(addr: &str, values: &[f32]) -> OscPacket {
    msg(addr, values.iter().map(|&v| OscType::Float(v)).collect())
}

fn bundle(content: Vec<OscPacket>) -> OscPacket {
    OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content,
    })
}

fn encode(packet: &OscPacket) -> Vec<u8> {
    rosc::encoder::encode(packet).unwrap()
}

/// A distinct value per channel, exactly representable in f32 and in short decimal text.
fn value_of(channel: Channel) -> f32 {
    (channel.index() + 1) as f32 / 64.0
}

fn assert_all_52(frame: &FaceFrame) {
    assert_eq!(frame.present, ChannelMask::ALL);
    for c in Channel::ALL {
        assert_eq!(frame.get(c), Some(value_of(c)), "{c}");
    }
}

#[test]
fn vmc_bundle_of_52_values_arrives_as_one_frame() {
    let (handle, rx, addr) = start();
    let socket = sender();
    let mut content: Vec<_> = Channel::ALL
        .iter()
        .map(|&c| val(&c.pascal_name(), value_of(c)))
        .collect();
    content.push(apply());
    socket.send_to(&encode(&bundle(content)), addr).unwrap();

    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::Vmc);
    assert_eq!(frame.from, socket.local_addr().unwrap());
    assert_all_52(&frame);
    let stats = handle.stats();
    assert_eq!(
        (stats.datagrams, stats.ok_datagrams, stats.frames),
        (1, 1, 1)
    );
    assert_eq!(stats.vmc_messages, 53);
    handle.shutdown();
}

#[test]
fn vmc_values_sent_by_liblo_oscsend_arrive_as_one_frame() {
    let oscsend = Path::new("/usr/bin/oscsend");
    if !oscsend.exists() {
        eprintln!(
            "note: {} is missing (Debian package liblo-tools); skipping the liblo interop test",
            oscsend.display()
        );
        return;
    }
    let (handle, rx, addr) = start();
    let port = addr.port().to_string();
    let send = |args: &[&str]| {
        let status = Command::new(oscsend)
            .arg("127.0.0.1")
            .arg(&port)
            .args(args)
            .status()
            .expect("oscsend runs");
        assert!(status.success(), "oscsend {args:?}: {status}");
    };
    // Every other channel in camelCase, the rest in ARKit's raw `_L`/`_R` spelling.
    for c in Channel::ALL {
        let name = match (c.index() % 2, c.name().strip_suffix("Left")) {
            (1, Some(stem)) => format!("{stem}_L"),
            _ => c.name().to_string(),
        };
        send(&["/VMC/Ext/Blend/Val", "sf", &name, &value_of(c).to_string()]);
    }
    // Each oscsend is a separate process with its own source port; nothing commits yet.
    let stats = wait_for_stats(&handle, |s| s.datagrams == 52);
    assert_eq!(stats.frames, 0);
    assert_eq!(stats.vmc_messages, 52);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));

    send(&["/VMC/Ext/Blend/Apply"]);
    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::Vmc);
    assert_all_52(&frame);
    assert_eq!(handle.stats().malformed_datagrams, 0);
    handle.shutdown();
}

#[test]
fn facecap_bundle_of_52_weights_and_a_quaternion_arrives_as_one_frame() {
    let (handle, rx, addr) = start();
    let socket = sender();
    let mut content: Vec<_> = FACECAP_ORDER
        .iter()
        .enumerate()
        .map(|(i, &c)| w(i as i32, value_of(c)))
        .collect();
    let head = Quat::from_rotation_y(0.4) * Quat::from_rotation_x(-0.1);
    content.push(floats("/HRQ", &head.to_array()));
    content.push(floats("/HT", &[0.0, 0.0, 0.5]));
    socket.send_to(&encode(&bundle(content)), addr).unwrap();

    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::FaceCap);
    assert_all_52(&frame);
    assert_eq!(
        frame.get(Channel::EyeBlinkLeft),
        Some(value_of(FACECAP_ORDER[13]))
    );
    let got = frame.head.expect("head rotation");
    assert!(got.dot(head).abs() > 1.0 - 1e-5, "{got} vs {head}");
    assert_eq!(handle.stats().facecap_frames, 1);
    handle.shutdown();
}

#[test]
fn vmc_val_without_apply_commits_nothing_and_a_partial_apply_updates_only_its_names() {
    let (handle, rx, addr) = start();
    let socket = sender();
    socket
        .send_to(&encode(&bundle(vec![val("jawOpen", 0.5)])), addr)
        .unwrap();
    let stats = wait_for_stats(&handle, |s| s.datagrams == 1);
    assert_eq!(stats.frames, 0);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));

    // The pending value joins the next Apply.
    socket
        .send_to(
            &encode(&bundle(vec![val("eyeBlinkLeft", 0.25), apply()])),
            addr,
        )
        .unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.present.len(), 2);
    assert_eq!(frame.get(Channel::JawOpen), Some(0.5));
    assert_eq!(frame.get(Channel::EyeBlinkLeft), Some(0.25));

    // A partial second Apply carries only its own names.
    socket
        .send_to(
            &encode(&bundle(vec![val("MouthClose", 0.125), apply()])),
            addr,
        )
        .unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.present.len(), 1);
    assert_eq!(frame.get(Channel::MouthClose), Some(0.125));
    assert_eq!(frame.get(Channel::JawOpen), None);
    handle.shutdown();
}

#[test]
fn bad_datagrams_do_not_stop_the_server() {
    let (handle, rx, addr) = start();
    let socket = sender();
    for bad in [
        &b"not osc at all"[..],
        b"#bundle\0",
        b"/VMC/Ext/Blend/Val\0\0,sf\0",
        &[0xff; 1000],
        b"",
    ] {
        socket.send_to(bad, addr).unwrap();
    }
    socket
        .send_to(&encode(&bundle(vec![val("tongueOut", 1.0), apply()])), addr)
        .unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.get(Channel::TongueOut), Some(1.0));
    let stats = wait_for_stats(&handle, |s| s.datagrams == 6);
    assert_eq!((stats.malformed_datagrams, stats.ok_datagrams), (5, 1));
    assert!(stats.is_consistent());
    handle.shutdown();
}

#[test]
fn binding_errors_come_back_from_spawn_with_the_address() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let config = IngestConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap(), addr],
        ..IngestConfig::default()
    };
    match spawn(config, Box::new(|_| {})) {
        Err(IngestError::Bind { addr: failed, .. }) => assert_eq!(failed, addr),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(handle) => panic!("bound {:?} although it is taken", handle.local_addrs()),
    }
    let empty = IngestConfig {
        listen: vec![],
        ..IngestConfig::default()
    };
    assert!(matches!(
        spawn(empty, Box::new(|_| {})),
        Err(IngestError::NoListenAddress)
    ));
}

#[test]
fn shutdown_and_drop_release_the_sockets() {
    let (handle, _rx, addr) = start();
    handle.shutdown();
    // The thread has joined and dropped its socket, so the port is free again.
    let (tx, _rx) = mpsc::channel();
    let again = spawn(
        IngestConfig {
            listen: vec![addr],
            ..IngestConfig::default()
        },
        Box::new(move |frame| {
            let _ = tx.send(frame);
        }),
    )
    .expect("the port is free after shutdown");
    assert_eq!(again.local_addrs(), [addr]);
    drop(again);
    UdpSocket::bind(addr).expect("the port is free after drop");
}

#[test]
fn one_thread_listens_on_several_sockets() {
    let (tx, rx) = mpsc::channel();
    let handle = spawn(
        IngestConfig {
            listen: vec![
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.1:0".parse().unwrap(),
            ],
            ..IngestConfig::default()
        },
        Box::new(move |frame| {
            let _ = tx.send(frame);
        }),
    )
    .unwrap();
    let [first, second] = handle.local_addrs() else {
        panic!("{:?}", handle.local_addrs())
    };
    assert_ne!(first, second);
    let socket = sender();
    socket.send_to(&encode(&w(24, 0.5)), first).unwrap();
    assert_eq!(next_frame(&rx).get(Channel::JawOpen), Some(0.5));
    socket
        .send_to(
            &encode(&bundle(vec![val("jawOpen", 0.75), apply()])),
            second,
        )
        .unwrap();
    assert_eq!(next_frame(&rx).get(Channel::JawOpen), Some(0.75));
    handle.shutdown();
}

/// splitmix64: a tiny seeded generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Valid datagrams of every shape the fuzz test starts from.
fn fuzz_seeds() -> Vec<Vec<u8>> {
    let all_vmc: Vec<_> = Channel::ALL
        .iter()
        .map(|&c| val(c.name(), value_of(c)))
        .chain([
            msg(
                "/VMC/Ext/OK",
                vec![
                    OscType::Int(1),
                    OscType::Int(3),
                    OscType::Int(0),
                    OscType::Int(1),
                ],
            ),
            floats("/VMC/Ext/T", &[12.5]),
            msg(
                "/VMC/Ext/Bone/Pos",
                std::iter::once(OscType::String("Head".into()))
                    .chain([0.0, 1.5, 0.0, 0.1, 0.2, 0.0, 0.97].map(OscType::Float))
                    .collect(),
            ),
            apply(),
        ])
        .collect();
    let all_facecap: Vec<_> = (0..52)
        .map(|i| w(i, 0.5))
        .chain([
            floats("/HRQ", &[0.0, 0.1, 0.0, 1.0]),
            floats("/HR", &[1.0, 2.0, 3.0]),
            floats("/ELR", &[1.0, 2.0]),
            floats("/ERR", &[1.0, 2.0]),
            floats("/HT", &[0.0, 0.0, 0.4]),
        ])
        .collect();
    let packets = [
        bundle(all_vmc),
        bundle(all_facecap),
        bundle(vec![
            val("JawOpen", 0.5),
            val("eyeBlink_L", 0.25),
            val("A", 1.0),
            apply(),
        ]),
        bundle(vec![
            bundle(vec![val("jawOpen", 0.5), bundle(vec![w(3, 0.1)])]),
            apply(),
        ]),
        bundle(vec![w(13, 0.5), floats("/HRQ", &[0.0, 0.0, 0.0, 1.0])]),
        bundle(vec![
            floats("/unknown", &[1.0]),
            msg("/VMC/Ext/Root/Pos", vec![]),
        ]),
        val("tongueOut", 0.5),
        apply(),
        w(24, 0.5),
    ];
    packets.iter().map(encode).collect()
}

/// Offsets of every bundle element size field in a valid datagram.
fn size_fields(bytes: &[u8], base: usize, out: &mut Vec<usize>) {
    if !bytes.starts_with(b"#bundle\0") {
        return;
    }
    let mut at = 16;
    while at + 4 <= bytes.len() {
        let size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(base + at);
        let end = (at + 4 + size).min(bytes.len());
        size_fields(&bytes[at + 4..end], base + at + 4, out);
        at = end;
    }
}

/// One hostile datagram: a mutated seed, random bytes, or (rarely) an oversized one.
fn fuzz_datagram(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    match rng.below(100) {
        // Unchanged, so the valid paths stay exercised too.
        0..=9 => {}
        // Bit flips.
        10..=34 => {
            for _ in 0..=rng.below(8) {
                let bit = rng.below(bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
        }
        // Truncation.
        35..=49 => bytes.truncate(rng.below(bytes.len())),
        // Bundle element size corruption.
        50..=64 => {
            let mut fields = Vec::new();
            size_fields(&bytes, 0, &mut fields);
            if let Some(&at) = fields.get(rng.below(fields.len())) {
                let old = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
                let new = match rng.below(5) {
                    0 => 0,
                    1 => u32::MAX,
                    2 => old.wrapping_add(4),
                    3 => old.wrapping_sub(4),
                    _ => rng.next() as u32,
                };
                bytes[at..at + 4].copy_from_slice(&new.to_be_bytes());
            }
        }
        // An aligned word overwritten: type tags, floats (NaN, ±inf), ints, string bytes.
        65..=79 => {
            let words = bytes.len() / 4;
            for _ in 0..=rng.below(4) {
                let at = rng.below(words) * 4;
                let word: u32 = match rng.below(6) {
                    0 => 0x7fc0_0000,
                    1 => 0x7f80_0000,
                    2 => 0xff80_0000,
                    3 => u32::from_be_bytes(*b",ii\0"),
                    4 => 0,
                    _ => rng.next() as u32,
                };
                if at + 4 <= bytes.len() {
                    bytes[at..at + 4].copy_from_slice(&word.to_be_bytes());
                }
            }
        }
        // Random bytes, sometimes behind a plausible header.
        80..=91 => {
            let prefix: &[u8] = match rng.below(3) {
                0 => b"#bundle\0",
                1 => b"/VMC/Ext/Blend/Val\0\0,sf\0",
                _ => b"",
            };
            let len = rng.below(300);
            bytes = prefix.to_vec();
            bytes.extend((0..len).map(|_| rng.next() as u8));
        }
        // Two datagrams glued together, or a seed with junk appended.
        92..=98 => {
            let other = &seeds[rng.below(seeds.len())];
            if rng.below(2) == 0 {
                bytes.extend_from_slice(other);
            } else {
                bytes.extend((0..rng.below(16)).map(|_| rng.next() as u8));
            }
        }
        // Oversized.
        _ => {
            if rng.below(50) == 0 {
                bytes.resize(MAX_DATAGRAM + 1 + rng.below(64), 0);
            }
        }
    }
    bytes
}

#[test]
fn hostile_datagrams_never_panic_and_are_all_accounted_for() {
    const DATAGRAMS: u64 = 100_000;
    let seeds = fuzz_seeds();
    let mut rng = Rng(0x5eed_f00d_cafe_0001);
    let mut decoder = Decoder::new();
    let mut frames = 0u64;
    let mut classes = [0u64; 3];
    let received = Instant::now();
    for n in 0..DATAGRAMS {
        let bytes = fuzz_datagram(&mut rng, &seeds);
        // A dozen hosts, more than the decoder keeps, so eviction runs too.
        let from = SocketAddr::from(([10, 0, 0, rng.below(12) as u8], 9000 + (n % 3) as u16));
        let outcome = decoder.decode(&bytes, from, received, |frame| {
            frames += 1;
            for c in frame.present.iter() {
                assert!(frame.weights[c.index()].is_finite(), "{c} in {frame:?}");
            }
            for q in [frame.head, frame.left_eye, frame.right_eye]
                .into_iter()
                .flatten()
            {
                assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-3, "{q}");
            }
        });
        classes[match outcome.class {
            DatagramClass::Ok => 0,
            DatagramClass::Malformed => 1,
            DatagramClass::Oversized => 2,
        }] += 1;
        assert!(decoder.sender_count() <= MAX_SENDERS);
    }
    let stats = decoder.stats();
    assert!(stats.is_consistent(), "{stats:?}");
    assert_eq!(stats.datagrams, DATAGRAMS);
    assert_eq!(
        [
            stats.ok_datagrams,
            stats.malformed_datagrams,
            stats.oversized_datagrams
        ],
        classes
    );
    assert_eq!(stats.frames, frames);
    // The mix exercised every path.
    assert!(classes.iter().all(|&c| c > 0), "{classes:?}");
    assert!(stats.frames > 0 && stats.bad_arguments > 0 && stats.unknown_address > 0);
    assert!(stats.non_finite_values > 0 && stats.senders_evicted > 0);
}
