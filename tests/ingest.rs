//! Ingest over real loopback UDP (VMC, Face Cap, liblo's `oscsend`, the phone protocols against
//! fake phones), the sender guard, forwarding read back by liblo's `oscdump`, and hostile input.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, ChannelMask, FaceFrame, Protocol, TrackingFlag, FACECAP_ORDER};
use facewire::config::{ForwardNames, ForwardSection, IngestSection};
use facewire::ingest::openseeface::{self, FaceRecord};
use facewire::ingest::{
    spawn, DatagramClass, Decoder, IngestConfig, IngestError, IngestHandle, ListenerReport,
    NetStats, PhoneListen, PhonePorts, Stats, ESTABLISHED_AFTER, FM3D_START, IFM_START,
    MAX_DATAGRAM, MAX_SENDERS,
};
use facewire::session::forward::Forwarder;
use glam::{Mat3, Quat, Vec3};
use rosc::{OscPacket, OscType};

use crate::support::{self, apply, bundle, encode, llf_packet, msg, val, Rng};

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

fn w(index: i32, value: f32) -> OscPacket {
    msg("/W", vec![OscType::Int(index), OscType::Float(value)])
}

fn floats(addr: &str, values: &[f32]) -> OscPacket {
    msg(addr, values.iter().map(|&v| OscType::Float(v)).collect())
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

/// Passes the keys a sender presses on to a channel.
struct KeySink(mpsc::Sender<(String, bool)>);

impl facewire::arkit::FrameSink for KeySink {
    fn frame(&mut self, _frame: FaceFrame) {}

    fn key(&mut self, name: &str, pressed: bool) {
        let _ = self.0.send((name.to_string(), pressed));
    }
}

#[test]
fn vmc_keys_reach_the_sink_in_facewires_spelling() {
    let (tx, rx) = mpsc::channel();
    let handle = spawn(
        IngestConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            ..IngestConfig::default()
        },
        Box::new(KeySink(tx)),
    )
    .unwrap();
    let addr = handle.local_addrs()[0];
    let key = |active: i32, name: &str| {
        let args = vec![
            OscType::Int(active),
            OscType::String(name.into()),
            OscType::Int(0),
        ];
        encode(&msg("/VMC/Ext/Key", args))
    };
    let socket = sender();
    socket.send_to(&key(1, "F1"), addr).unwrap();
    socket.send_to(&key(0, "D1"), addr).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), ("F1".to_string(), true));
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), ("1".to_string(), false));
    let stats = handle.stats();
    assert_eq!((stats.malformed_datagrams, stats.bad_arguments), (0, 0));
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
    let datagrams = crate::support::fuzz_cases(100_000);
    let seeds = fuzz_seeds();
    let mut rng = Rng(crate::support::fuzz_seed(0x5eed_f00d_cafe_0001));
    let mut decoder = Decoder::new();
    let mut frames = 0u64;
    let mut classes = [0u64; 3];
    let received = Instant::now();
    for n in 0..datagrams {
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
    assert_eq!(stats.datagrams, datagrams);
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

/// What a fake phone received: the datagram, its sender and when.
type Received = Vec<(Vec<u8>, SocketAddr, Instant)>;

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A listener of `protocol` on a free loopback port.
fn phone_listen(protocol: Protocol) -> PhoneListen {
    PhoneListen {
        protocol,
        addr: loopback(),
        required: true,
    }
}

/// Starts ingest with `config`; frames arrive on the returned channel.
fn start_with(config: IngestConfig) -> (IngestHandle, Receiver<FaceFrame>) {
    let (tx, rx) = mpsc::channel();
    let handle = spawn(
        config,
        Box::new(move |frame| {
            let _ = tx.send(frame);
        }),
    )
    .expect("ingest starts on loopback");
    (handle, rx)
}

/// Waits (bounded) until the network counters satisfy `done`, and returns them.
fn wait_for_net(handle: &IngestHandle, done: impl Fn(&NetStats) -> bool) -> NetStats {
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = handle.net_stats();
        if done(&stats) {
            return stats;
        }
        assert!(
            Instant::now() < deadline,
            "counters never reached the expected state: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The iFacialMocap sample, or a short frame of our own when the fixtures are absent.
fn ifacialmocap_sample() -> Vec<u8> {
    support::fixtures("the iFacialMocap sample (using a frame of our own)")
        .map(|dir| std::fs::read(dir.join("protocols/ifacialmocap_v1_vpuppr_sample.txt")).unwrap())
        .unwrap_or_else(|| b"eyeBlink_L-29|jawOpen-40|=head#1,2,3,0,0,-0.5|".to_vec())
}

/// The VTube Studio sample, or a short payload of our own when the fixtures are absent.
fn vts_sample() -> Vec<u8> {
    support::fixtures("the VTube Studio sample (using a payload of our own)")
        .map(|dir| {
            std::fs::read(dir.join("protocols/vts_tracking_payload_vpuppr_sample.compact.json"))
                .unwrap()
        })
        .unwrap_or_else(|| {
            br#"{"FaceFound":true,"BlendShapes":[{"k":"JawOpen","v":0.4}]}"#.to_vec()
        })
}

#[test]
fn every_listener_binds_at_once_and_each_protocol_arrives() {
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        phones: [
            Protocol::IFacialMocap,
            Protocol::Facemotion3d,
            Protocol::LiveLinkFace,
            Protocol::VTubeStudio,
            Protocol::OpenSeeFace,
        ]
        .map(phone_listen)
        .to_vec(),
        ..IngestConfig::default()
    });
    let listeners = handle.listeners();
    assert_eq!(listeners.len(), 6, "{listeners:?}");
    let mut ports: Vec<u16> = listeners.iter().map(|l| l.addr.port()).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 6, "six distinct ports");
    assert!(handle.skipped().is_empty());

    let phone = sender();
    let to = |kind| handle.local_addr(kind).unwrap();
    phone
        .send_to(&llf_packet(0.25), to(Protocol::LiveLinkFace))
        .unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::LiveLinkFace);
    assert_eq!(frame.get(Channel::JawOpen), Some(0.25));
    assert_eq!(frame.from, phone.local_addr().unwrap());
    handle.shutdown();

    // The lock is per source, so each protocol gets a fresh ingest.
    for (kind, datagram, protocol) in [
        (
            Protocol::IFacialMocap,
            ifacialmocap_sample(),
            Protocol::IFacialMocap,
        ),
        (Protocol::VTubeStudio, vts_sample(), Protocol::VTubeStudio),
        (
            Protocol::OpenSeeFace,
            osf_record(0, 1, 1.0, 0.3, 0.0),
            Protocol::OpenSeeFace,
        ),
        // Facemotion3d's frames may come to the iFacialMocap port; the dialect decides the tag.
        (
            Protocol::IFacialMocap,
            b"eyeBlinkLeft&29|jawOpen&40|FM_SAD&0|".to_vec(),
            Protocol::Facemotion3d,
        ),
        (
            Protocol::Vmc,
            encode(&bundle(vec![val("jawOpen", 0.5), apply()])),
            Protocol::Vmc,
        ),
    ] {
        let (handle, rx) = start_with(IngestConfig {
            listen: vec![loopback()],
            phones: vec![
                phone_listen(Protocol::IFacialMocap),
                phone_listen(Protocol::VTubeStudio),
                phone_listen(Protocol::OpenSeeFace),
            ],
            ..IngestConfig::default()
        });
        sender()
            .send_to(&datagram, handle.local_addr(kind).unwrap())
            .unwrap();
        let frame = next_frame(&rx);
        assert_eq!(frame.protocol, protocol, "{kind}");
        assert!(frame.get(Channel::JawOpen).is_some(), "{kind}");
        handle.shutdown();
    }
}

/// One OpenSeeFace face record as `facetracker.py` sends it: face `id`, found (`success` 1) or
/// not, the left eye's openness, the mouth's `mouth_open` feature, and the head turned `yaw_left`
/// degrees towards the performer's own left.
fn osf_record(id: i32, success: u8, left_eye_open: f32, mouth_open: f32, yaw_left: f32) -> Vec<u8> {
    // OpenSeeFace fits its face model (+X the face's right, +Y up, +Z out of the face) into the
    // camera frame of the image read rows first (x down, y right, z into the scene), where a face
    // looking into the camera has its right at −y, its up at −x and its front at −z; it sends the
    // conjugate of the fitted rotation's quaternion.
    let facing = Mat3::from_cols(Vec3::NEG_Y, Vec3::NEG_X, Vec3::NEG_Z);
    let turn = Mat3::from_rotation_y(-yaw_left.to_radians());
    let quaternion = Quat::from_mat3(&(facing * turn)).conjugate().to_array();
    let mut features = [0.0; openseeface::FEATURES];
    features[openseeface::feature::MOUTH_OPEN] = mouth_open;
    let record = FaceRecord {
        time: 1_700_000_000.0 + f64::from(id),
        id,
        width: 1280.0,
        height: 720.0,
        eye_open_right: 1.0,
        eye_open_left: left_eye_open,
        success,
        pnp_error: 4.0,
        quaternion,
        euler: [180.0, yaw_left, -90.0],
        translation: [0.1, -0.2, 9.0],
        features,
    };
    let mut out = Vec::new();
    record.encode(&mut out);
    out
}

/// Waits (bounded) until the listener reports satisfy `done`, and returns them.
fn wait_for_reports(
    handle: &IngestHandle,
    done: impl Fn(&[ListenerReport]) -> bool,
) -> Vec<ListenerReport> {
    let deadline = Instant::now() + WAIT;
    loop {
        let reports = handle.reports();
        if done(&reports) {
            return reports;
        }
        assert!(
            Instant::now() < deadline,
            "reports never reached the expected state: {reports:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn openseeface_faces_arrive_over_udp_and_the_lowest_id_is_followed() {
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        phones: vec![phone_listen(Protocol::OpenSeeFace)],
        ..IngestConfig::default()
    });
    let tracker = sender();
    let to = handle.local_addr(Protocol::OpenSeeFace).unwrap();

    // One face: the left eye shut, the mouth wide open, the head turned to the performer's left.
    tracker
        .send_to(&osf_record(0, 1, 0.0, 0.9, 30.0), to)
        .unwrap();
    let f = next_frame(&rx);
    assert_eq!(f.protocol, Protocol::OpenSeeFace);
    assert_eq!(f.from, tracker.local_addr().unwrap());
    assert_eq!(f.tracking, TrackingFlag::Tracked);
    assert_eq!(f.sender_time, Some(1_700_000_000.0));
    assert_eq!(f.get(Channel::EyeBlinkLeft), Some(1.0));
    assert_eq!(f.get(Channel::EyeBlinkRight), Some(0.0));
    assert_eq!(f.get(Channel::JawOpen), Some(1.0));
    assert_eq!(f.get(Channel::MouthSmileLeft), Some(0.0));
    let forward = f.head.unwrap() * Vec3::Z;
    assert!(
        forward.x > 0.45,
        "the head faces the performer's left (+X): {forward}"
    );

    // Two faces, the one seen later (id 4, turned the other way) first: face 2 is followed.
    let mut two = osf_record(4, 1, 1.0, 0.0, -30.0);
    two.extend(osf_record(2, 1, 1.0, 0.5, 0.0));
    tracker.send_to(&two, to).unwrap();
    let f = next_frame(&rx);
    let jaw = f.get(Channel::JawOpen).unwrap();
    assert!((jaw - 0.5).abs() < 1e-5, "face 2's mouth: {jaw}");
    assert_eq!(f.sender_time, Some(1_700_000_002.0));
    assert!((f.head.unwrap() * Vec3::Z).x.abs() < 1e-4);

    // The followed face found no pose: the face is lost.
    tracker
        .send_to(&osf_record(2, 0, 1.0, 0.5, 0.0), to)
        .unwrap();
    let f = next_frame(&rx);
    assert_eq!(f.tracking, TrackingFlag::Lost);
    assert!(f.present.is_empty() && f.head.is_none());

    // A cut record gives no frame and is counted; the next whole one comes through.
    let whole = osf_record(2, 1, 1.0, 0.0, 0.0);
    tracker.send_to(&whole[..1000], to).unwrap();
    tracker.send_to(&whole, to).unwrap();
    assert_eq!(next_frame(&rx).tracking, TrackingFlag::Tracked);
    let net = wait_for_net(&handle, |n| n.openseeface.datagrams == 5);
    let osf = net.openseeface;
    assert_eq!((osf.frames, osf.lost_frames, osf.malformed), (4, 1, 1));
    assert!(osf.is_consistent(), "{osf:?}");
    assert_eq!(osf.non_finite_values + osf.bad_values + osf.unknown_keys, 0);
    assert_eq!(net.phone(Protocol::OpenSeeFace), Some(&osf));
    assert!(net.accounts_for(&handle.stats()));
    let reports = wait_for_reports(&handle, |r| r.iter().map(|l| l.datagrams).sum::<u64>() == 5);
    let report = reports
        .iter()
        .find(|r| r.kind == Protocol::OpenSeeFace)
        .unwrap();
    assert_eq!((report.frames, report.undecoded), (4, 1));
    assert_eq!(report.looks_like, None, "a cut record looks like nothing");
    handle.shutdown();

    // The tracker sending to the VMC port by mistake: the report names OpenSeeFace.
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        phones: vec![phone_listen(Protocol::OpenSeeFace)],
        ..IngestConfig::default()
    });
    sender()
        .send_to(&whole, handle.local_addr(Protocol::Vmc).unwrap())
        .unwrap();
    let reports = wait_for_reports(&handle, |r| r[0].undecoded == 1);
    assert_eq!(reports[0].kind, Protocol::Vmc);
    assert_eq!(reports[0].looks_like, Some(Protocol::OpenSeeFace));
    assert!(rx.try_recv().is_err(), "no frame from the VMC port");
    handle.shutdown();
}

#[test]
fn a_taken_usual_port_is_a_warning_and_a_chosen_one_an_error() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap();
    let mut optional = phone_listen(Protocol::LiveLinkFace);
    optional.addr = busy;
    optional.required = false;
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        listen_required: false,
        phones: vec![optional, phone_listen(Protocol::VTubeStudio)],
        ..IngestConfig::default()
    });
    assert_eq!(handle.skipped().len(), 1);
    assert_eq!(handle.skipped()[0].addr, busy);
    assert_eq!(handle.listeners().len(), 2);
    // The others run.
    sender()
        .send_to(
            &vts_sample(),
            handle.local_addr(Protocol::VTubeStudio).unwrap(),
        )
        .unwrap();
    assert_eq!(next_frame(&rx).protocol, Protocol::VTubeStudio);
    handle.shutdown();

    optional.required = true;
    let config = IngestConfig {
        listen: vec![loopback()],
        phones: vec![optional],
        ..IngestConfig::default()
    };
    match spawn(config, Box::new(|_| {})) {
        Err(IngestError::Bind { addr, .. }) => assert_eq!(addr, busy),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(handle) => panic!("bound {:?} although it is taken", handle.listeners()),
    }
}

#[test]
fn every_listener_is_required_unless_partial_or_openseeface_makes_usual_ports_optional() {
    let config = IngestConfig::from_section(&IngestSection::default());
    assert_eq!(
        config.listen,
        ["0.0.0.0:39539".parse::<SocketAddr>().unwrap()]
    );
    let ports = |config: &IngestConfig| -> Vec<(Protocol, u16, bool)> {
        config
            .phones
            .iter()
            .map(|p| (p.protocol, p.addr.port(), p.required))
            .collect()
    };
    // The default: every listener must bind, but OpenSeeFace's usual port, which VSeeFace holds
    // while its own tracker runs.
    assert!(config.listen_required);
    assert_eq!(
        ports(&config),
        [
            (Protocol::IFacialMocap, 49983, true),
            (Protocol::Facemotion3d, 49993, true),
            (Protocol::LiveLinkFace, 11111, true),
            (Protocol::VTubeStudio, 11125, true),
            (Protocol::OpenSeeFace, 11573, false),
        ]
    );
    // partial = true: the usual addresses are optional, a chosen one is still required.
    let section = IngestSection {
        partial: true,
        livelinkface: vec!["0.0.0.0:11112".parse().unwrap()],
        ..IngestSection::default()
    };
    let config = IngestConfig::from_section(&section);
    assert!(!config.listen_required);
    assert_eq!(
        ports(&config),
        [
            (Protocol::IFacialMocap, 49983, false),
            (Protocol::Facemotion3d, 49993, false),
            (Protocol::LiveLinkFace, 11112, true),
            (Protocol::VTubeStudio, 11125, false),
            (Protocol::OpenSeeFace, 11573, false),
        ]
    );
    let chosen = IngestSection {
        partial: true,
        listen: vec!["127.0.0.1:39539".parse().unwrap()],
        ..IngestSection::default()
    };
    assert!(IngestConfig::from_section(&chosen).listen_required);
}

/// A fake phone on loopback: it records every datagram it receives, and `answer` decides what it
/// streams back. It stops when told to or when `answer` says so.
struct FakePhone {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakePhone {
    /// Starts a phone whose `streamer` is called every 10 ms with the datagrams received so far
    /// and returns where to send which datagrams now.
    fn start(
        mut streamer: impl FnMut(&[(Vec<u8>, SocketAddr, Instant)], Instant) -> Vec<(Vec<u8>, SocketAddr)>
            + Send
            + 'static,
    ) -> FakePhone {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(10)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let received = Arc::clone(&received);
            let sent = Arc::clone(&sent);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((len, from)) = socket.recv_from(&mut buf) {
                        received
                            .lock()
                            .unwrap()
                            .push((buf[..len].to_vec(), from, Instant::now()));
                    }
                    let seen = received.lock().unwrap().clone();
                    for (datagram, to) in streamer(&seen, Instant::now()) {
                        if socket.send_to(&datagram, to).is_ok() {
                            sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        };
        FakePhone {
            addr,
            received,
            sent,
            stop,
            thread: Some(thread),
        }
    }

    fn received(&self) -> Received {
        self.received.lock().unwrap().clone()
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

#[test]
fn ifacialmocap_and_facemotion3d_stream_after_the_start_string() {
    for (protocol, start_string, frame_text, tag) in [
        (
            Protocol::IFacialMocap,
            IFM_START,
            ifacialmocap_sample(),
            Protocol::IFacialMocap,
        ),
        (
            Protocol::Facemotion3d,
            FM3D_START,
            b"eyeBlinkLeft&29|jawOpen&40|FM_SAD&0|=head#1,2,3,0,0,-0.5|".to_vec(),
            Protocol::Facemotion3d,
        ),
    ] {
        // Like the real apps, the phone streams only to whoever sent the start string, to the
        // port it came from, and only once it has.
        let phone = FakePhone::start(move |seen, _| {
            seen.iter()
                .find(|(d, _, _)| d == start_string.as_bytes())
                .map(|(_, from, _)| vec![(frame_text.clone(), *from)])
                .unwrap_or_default()
        });
        let ports = PhonePorts {
            ifacialmocap: phone.addr.port(),
            facemotion3d: phone.addr.port(),
            ..PhonePorts::default()
        };
        let (handle, rx) = start_with(IngestConfig {
            listen: vec![],
            phones: vec![phone_listen(protocol)],
            phone: Some(IpAddr::from([127, 0, 0, 1])),
            phone_ports: ports,
            ..IngestConfig::default()
        });
        let listener = handle.local_addr(protocol).unwrap();
        let frame = next_frame(&rx);
        assert_eq!(frame.protocol, tag);
        assert!(frame.get(Channel::JawOpen).is_some());
        assert_eq!(frame.from, phone.addr);
        let received = phone.received();
        assert_eq!(
            received[0].0,
            start_string.as_bytes(),
            "the first datagram is the start string"
        );
        assert_eq!(received[0].1, listener, "sent from the listener socket");
        assert!(received
            .iter()
            .all(|(d, _, _)| d == start_string.as_bytes()));
        assert!(handle.net_stats().handshakes_sent >= 1);
        handle.shutdown();
        phone.stop();
    }
}

/// A phone named while the run lasts (the panel's address field) gets its start message at
/// once; before that, with no phone named and no sender to follow, nothing is sent.
#[test]
fn a_phone_named_while_running_gets_the_start_message() {
    let phone = FakePhone::start(|_, _| Vec::new());
    let (handle, _rx) = start_with(IngestConfig {
        listen: vec![],
        phones: vec![phone_listen(Protocol::IFacialMocap)],
        phone: None,
        phone_ports: PhonePorts {
            ifacialmocap: phone.addr.port(),
            ..PhonePorts::default()
        },
        ..IngestConfig::default()
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(phone.received().is_empty(), "sent before a phone was named");
    assert_eq!(handle.phone(), None);
    handle.set_phone(Some(IpAddr::from([127, 0, 0, 1])));
    assert_eq!(handle.phone(), Some(IpAddr::from([127, 0, 0, 1])));
    let deadline = Instant::now() + WAIT;
    while phone.received().is_empty() {
        assert!(
            Instant::now() < deadline,
            "no start message after naming the phone"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(phone.received()[0].0, IFM_START.as_bytes());
    handle.shutdown();
    phone.stop();
}

#[test]
fn vtube_studio_streams_while_requests_come_and_stops_after() {
    let sample = vts_sample();
    // The phone streams to the request's source IP on every port it names, for `time` seconds
    // after the latest request.
    let phone = FakePhone::start(move |seen, now| {
        let Some((request, from, at)) = seen.last() else {
            return Vec::new();
        };
        let json: serde_json::Value = serde_json::from_slice(request).unwrap();
        assert_eq!(json["messageType"], "iOSTrackingDataRequest");
        let time = json["time"].as_f64().unwrap();
        if now.saturating_duration_since(*at) > Duration::from_secs_f64(time) {
            return Vec::new();
        }
        json["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    sample.clone(),
                    SocketAddr::new(from.ip(), p.as_u64().unwrap() as u16),
                )
            })
            .collect()
    });
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![],
        phones: vec![phone_listen(Protocol::VTubeStudio)],
        phone: Some(IpAddr::from([127, 0, 0, 1])),
        phone_ports: PhonePorts {
            vtubestudio: phone.addr.port(),
            ..PhonePorts::default()
        },
        ..IngestConfig::default()
    });
    let listener = handle.local_addr(Protocol::VTubeStudio).unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::VTubeStudio);
    assert_eq!(frame.tracking, facewire::arkit::TrackingFlag::Tracked);
    // Requests keep coming (about five a second).
    wait_for_net(&handle, |s| s.handshakes_sent >= 3);
    let requests = phone.received();
    let (first, from, _) = &requests[0];
    assert_eq!(
        *from, listener,
        "requests come from the VTube Studio socket"
    );
    let json: serde_json::Value = serde_json::from_slice(first).unwrap();
    assert_eq!(json["ports"], serde_json::json!([listener.port()]));
    assert_eq!(json["time"], 1.0);
    assert!(handle.net_stats().vtubestudio.frames >= 1);
    handle.shutdown();
    // Once facewire is gone no request comes any more, and the phone stops streaming once the
    // latest request's time has run out.
    let count = phone.received().len();
    let deadline = Instant::now() + WAIT;
    loop {
        let before = phone.sent();
        std::thread::sleep(Duration::from_millis(300));
        if phone.sent() == before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the phone never stopped streaming"
        );
    }
    assert_eq!(phone.received().len(), count, "no request after shutdown");
    phone.stop();
}

/// A socket on another loopback address, so that the guard sees another host; `None` (with a
/// note) where the system routes only 127.0.0.1.
fn other_host() -> Option<UdpSocket> {
    match UdpSocket::bind("127.0.0.2:0") {
        Ok(socket) => Some(socket),
        Err(err) => {
            eprintln!("note: cannot bind 127.0.0.2 ({err}); skipping the second-host checks");
            None
        }
    }
}

#[test]
fn a_second_source_is_ignored_and_counted_while_the_first_keeps_flowing() {
    let Some(intruder) = other_host() else {
        return;
    };
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        phones: vec![phone_listen(Protocol::LiveLinkFace)],
        ..IngestConfig::default()
    });
    let llf = handle.local_addr(Protocol::LiveLinkFace).unwrap();
    let osc = handle.local_addrs()[0];
    let phone = sender();
    phone.send_to(&llf_packet(0.1), llf).unwrap();
    assert_eq!(next_frame(&rx).get(Channel::JawOpen), Some(0.1));
    // Another host on the same protocol, and another protocol from the same host.
    intruder.send_to(&llf_packet(0.9), llf).unwrap();
    phone
        .send_to(&encode(&bundle(vec![val("jawOpen", 0.8), apply()])), osc)
        .unwrap();
    wait_for_net(&handle, |s| s.guard.other_source == 2);
    phone.send_to(&llf_packet(0.2), llf).unwrap();
    let frame = next_frame(&rx);
    assert_eq!(
        frame.get(Channel::JawOpen),
        Some(0.2),
        "only the first source arrives"
    );
    assert_eq!(frame.from, phone.local_addr().unwrap());
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    let stats = handle.net_stats();
    assert_eq!(stats.guard.locks, 1);
    assert_eq!(
        stats.livelinkface.datagrams, 2,
        "ignored datagrams are not decoded"
    );
    assert_eq!(handle.stats().datagrams, 0);
    handle.shutdown();
}

#[test]
fn the_lock_is_released_after_silence_and_the_preferred_protocol_takes_over() {
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        phones: vec![phone_listen(Protocol::LiveLinkFace)],
        prefer: Some(Protocol::Vmc),
        lock_release: Duration::from_millis(600),
        ..IngestConfig::default()
    });
    let llf = handle.local_addr(Protocol::LiveLinkFace).unwrap();
    let osc = handle.local_addrs()[0];
    let phone = sender();
    phone.send_to(&llf_packet(0.1), llf).unwrap();
    assert_eq!(next_frame(&rx).protocol, Protocol::LiveLinkFace);
    // VMC is preferred: it takes over at once.
    let pc = sender();
    pc.send_to(&encode(&bundle(vec![val("jawOpen", 0.5), apply()])), osc)
        .unwrap();
    assert_eq!(next_frame(&rx).protocol, Protocol::Vmc);
    phone.send_to(&llf_packet(0.3), llf).unwrap();
    wait_for_net(&handle, |s| s.guard.other_source == 1);
    // After the VMC sender is silent for the release time, the phone may take over again.
    wait_for_net(&handle, |s| s.guard.releases == 1);
    phone.send_to(&llf_packet(0.4), llf).unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.protocol, Protocol::LiveLinkFace);
    assert_eq!(frame.get(Channel::JawOpen), Some(0.4));
    let stats = handle.net_stats().guard;
    assert_eq!((stats.locks, stats.switches), (3, 1));
    handle.shutdown();
}

#[test]
fn a_flood_from_another_port_is_rejected_undecoded_and_the_followed_sender_loses_nothing() {
    const FRAMES: usize = 60;
    const FLOOD: u64 = 200_000;
    let (handle, rx, addr) = start();
    let followed = sender();
    let frame = |i: usize| support::vmc_frame(&[("jawOpen", i as f32 / FRAMES as f32)]);
    // Datagrams in a row from one port make it the followed sender's established port (one-shot
    // ports, as oscsend's, do not keep the host's other ports out).
    let warmup = u64::from(ESTABLISHED_AFTER);
    for _ in 0..warmup {
        followed.send_to(&frame(0), addr).unwrap();
        assert_eq!(next_frame(&rx).from, followed.local_addr().unwrap());
    }

    // Garbage as fast as one thread sends it, from the same host on another port.
    let kernel_drops_before = udp_receive_buffer_errors();
    let flooder = std::thread::spawn(move || {
        let flood = sender();
        let garbage = [0xA5u8; 64];
        for _ in 0..FLOOD {
            // A full loopback queue refuses a send now and then; the flood goes on.
            let _ = flood.send_to(&garbage, addr);
        }
    });
    let start = Instant::now();
    for i in 1..=FRAMES {
        let due = start + Duration::from_secs_f64(i as f64 / 60.0);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        followed.send_to(&frame(i), addr).unwrap();
    }
    flooder.join().unwrap();

    // Every frame of the followed sender, in order: facewire loses none of them. Only the
    // kernel may, when a busy machine lets the socket's receive queue fill before facewire
    // drains it (the queue is 4 MiB where the system allows; `net.core.rmem_max` may cap it).
    let mut got = Vec::new();
    while let Ok(f) = rx.recv_timeout(Duration::from_secs(2)) {
        got.push(f.get(Channel::JawOpen).unwrap());
        if got.len() == FRAMES {
            break;
        }
    }
    let want: Vec<f32> = (1..=FRAMES).map(|i| i as f32 / FRAMES as f32).collect();
    assert!(
        got.windows(2).all(|w| w[0] < w[1]) && got.iter().all(|v| want.contains(v)),
        "the followed sender's frames, in order: {got:?}"
    );
    if got.len() < FRAMES {
        let drops = udp_receive_buffer_errors().saturating_sub(kernel_drops_before);
        assert!(
            drops > 0,
            "{} of {FRAMES} frames arrived and the kernel dropped nothing",
            got.len()
        );
        eprintln!(
            "note: the kernel dropped {drops} datagrams on full receive queues (a busy machine, \
             a small net.core.rmem_max); {} of {FRAMES} frames arrived",
            got.len()
        );
    }
    let stats = wait_for_stats(&handle, |s| s.frames == got.len() as u64 + warmup);
    let net = handle.net_stats();
    assert_eq!(stats.malformed_datagrams, 0, "the flood is not parsed");
    assert_eq!(stats.datagrams, got.len() as u64 + warmup);
    assert_eq!(net.guard.other_source, net.guard.other_port);
    assert!(
        net.rejected() > 0 && net.rejected() <= FLOOD,
        "rejected {}",
        net.rejected()
    );
    assert_eq!(net.datagrams, stats.datagrams + net.rejected());
    assert!(net.accounts_for(&stats));
    eprintln!(
        "flood: {} of {FLOOD} datagrams reached the socket and were rejected",
        net.rejected()
    );
    handle.shutdown();
}

/// UDP datagrams the kernel dropped on full receive queues since boot (`RcvbufErrors` in
/// `/proc/net/snmp`; 0 where there is no such file).
fn udp_receive_buffer_errors() -> u64 {
    let Ok(snmp) = std::fs::read_to_string("/proc/net/snmp") else {
        return 0;
    };
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn senders_outside_the_allow_list_are_dropped_and_counted() {
    let Some(allowed) = other_host() else {
        return;
    };
    let (handle, rx) = start_with(IngestConfig {
        listen: vec![loopback()],
        allow: vec!["127.0.0.2/32".parse().unwrap()],
        ..IngestConfig::default()
    });
    let osc = handle.local_addrs()[0];
    let datagram = encode(&bundle(vec![val("jawOpen", 0.5), apply()]));
    sender().send_to(&datagram, osc).unwrap();
    wait_for_net(&handle, |s| s.guard.not_allowed == 1);
    allowed.send_to(&datagram, osc).unwrap();
    let frame = next_frame(&rx);
    assert_eq!(frame.from, allowed.local_addr().unwrap());
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    handle.shutdown();
}

/// Runs liblo's `oscdump` on a free port, or `None` with a note where it is not installed.
fn oscdump() -> Option<(std::process::Child, u16)> {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    match Command::new("oscdump")
        .args(["-L", &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(child) => Some((child, port)),
        Err(err) => {
            eprintln!(
                "note: liblo's oscdump is not available ({err}); skipping the forwarding check \
                 (install liblo-tools)"
            );
            None
        }
    }
}

#[test]
fn forwarded_frames_read_back_with_liblo_oscdump() {
    let Some((mut child, port)) = oscdump() else {
        return;
    };
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let mut forwarder = Forwarder::new(&ForwardSection {
        to: vec![SocketAddr::from(([127, 0, 0, 1], port))],
        names: ForwardNames::Pascal,
    })
    .unwrap()
    .expect("a receiver means a forwarder");
    let mut frame = FaceFrame::empty(Protocol::IFacialMocap, loopback(), Instant::now());
    frame.set(Channel::EyeBlinkLeft, 0.25);
    frame.set(Channel::JawOpen, 0.75);
    frame.head = Some(Quat::from_rotation_y(0.3));
    // oscdump binds after it starts; send until it has printed a whole frame.
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains("/VMC/Ext/Blend/Apply"))
    {
        assert!(Instant::now() < deadline, "oscdump printed {seen:?}");
        forwarder.send(&frame);
        while let Ok(line) = lines.recv_timeout(Duration::from_millis(50)) {
            seen.push(line);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    // One frame: from the first Blend/Val after a previous Apply (or the start) to its Apply.
    let apply = seen
        .iter()
        .position(|l| l.contains("/VMC/Ext/Blend/Apply"))
        .unwrap();
    let frame_lines = &seen[..=apply];
    let has = |needle: &str| frame_lines.iter().any(|l| l.contains(needle));
    assert!(
        has(r#"/VMC/Ext/Blend/Val sf "EyeBlinkLeft" 0.250000"#),
        "{frame_lines:?}"
    );
    assert!(
        has(r#"/VMC/Ext/Blend/Val sf "JawOpen" 0.750000"#),
        "{frame_lines:?}"
    );
    let head = frame_lines
        .iter()
        .find(|l| l.contains("/VMC/Ext/Bone/Pos"))
        .expect("a Head bone");
    assert!(head.contains(r#"sfffffff "Head""#), "{head}");
    // Our +0.3 rad yaw is a Unity yaw of -0.3 rad: y = -sin(0.15).
    let y = format!("{:.6}", -(0.15f32).sin());
    assert!(head.contains(&y), "{head} should carry y = {y}");
    assert_eq!(forwarder.stats().errors, 0);
    assert!(forwarder.stats().sent >= 1);
}
