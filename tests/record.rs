//! Recording and replay: the `.fwrec` format against files, hostile bytes, loopback UDP recording,
//! replay over UDP and into the pipeline, and Live Link Face CSV replay.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, FaceFrame, Protocol};
use facewire::ingest::{
    self, Decoder, IngestConfig, PhoneListen, PhonePorts, IFM_START, MAX_DATAGRAM,
};
use facewire::record::{
    self, spawn_recorder, spawn_replay, Format, Header, Record, RecordError, RecorderConfig,
    Recording, ReplayOptions, Writer,
};
use glam::Quat;

use crate::support::{apply, bundle, encode, val};

/// A small deterministic PRNG (xorshift64*), so fuzz failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A VMC stream of `n` frames as datagrams: most frames are one bundle, every fifth one is split
/// across two datagrams (values, then `Apply`), and one malformed datagram is mixed in.
fn vmc_stream(n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..n {
        let t = i as f32 / n as f32;
        let values = vec![
            val("jawOpen", t),
            val("EyeBlinkLeft", 1.0 - t),
            val("mouthSmile_L", t * 0.5),
        ];
        if i % 5 == 4 {
            out.push(encode(&bundle(values)));
            out.push(encode(&bundle(vec![apply()])));
        } else {
            let mut content = values;
            content.push(apply());
            out.push(encode(&bundle(content)));
        }
        if i == n / 2 {
            out.push(b"not osc at all".to_vec());
        }
    }
    out
}

/// A recording of `datagrams` from one phone, `step` apart.
fn recording_of(datagrams: &[Vec<u8>], step: Duration) -> Recording {
    let records = datagrams
        .iter()
        .enumerate()
        .map(|(i, d)| Record {
            offset: step * i as u32,
            from: addr("192.168.1.20:50123"),
            datagram: d.clone(),
        })
        .collect();
    Recording::from_records(Header::default(), records, false)
}

/// The frames a fresh decoder gives for `recording`'s datagrams.
fn decode_directly(recording: &Recording) -> Vec<FaceFrame> {
    let mut decoder = Decoder::new();
    let mut frames = Vec::new();
    let now = Instant::now();
    for record in recording.records() {
        decoder.decode(&record.datagram, record.from, now, |f| frames.push(*f));
    }
    frames
}

fn assert_same_faces(a: &[FaceFrame], b: &[FaceFrame]) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.present, y.present, "frame {i}");
        for channel in x.present.iter() {
            assert_eq!(x.get(channel), y.get(channel), "frame {i} {channel}");
        }
        assert_eq!((x.head, x.from, x.protocol), (y.head, y.from, y.protocol));
    }
}

/// Writes `records` to a `.fwrec` file and returns its path and bytes.
fn write_file(
    dir: &tempfile::TempDir,
    records: &[(Duration, SocketAddr, Vec<u8>)],
) -> (PathBuf, Vec<u8>) {
    let mut writer = Writer::new(Vec::new(), Header::default()).unwrap();
    for (offset, from, datagram) in records {
        writer.write(*offset, *from, datagram).unwrap();
    }
    let bytes = writer.into_inner();
    let path = dir.path().join("take.fwrec");
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

fn sample_records() -> Vec<(Duration, SocketAddr, Vec<u8>)> {
    vec![
        (
            Duration::from_micros(10),
            addr("192.168.1.20:50123"),
            vmc_stream(1).remove(0),
        ),
        (Duration::from_millis(5), addr("[::1]:9000"), Vec::new()),
        (
            Duration::from_millis(17),
            addr("[2001:db8::7]:39539"),
            vec![0x5A; MAX_DATAGRAM],
        ),
        (
            Duration::from_millis(33),
            addr("10.0.0.2:1"),
            b"tail".to_vec(),
        ),
    ]
}

#[test]
fn files_round_trip_ipv4_ipv6_empty_and_max_size_datagrams() {
    let dir = tempfile::tempdir().unwrap();
    let records = sample_records();
    let (path, _) = write_file(&dir, &records);
    let recording = Recording::load(&path).unwrap();
    assert_eq!(recording.format(), Format::Fwrec);
    assert!(!recording.truncated());
    assert_eq!(recording.len(), records.len());
    for (r, (offset, from, datagram)) in recording.records().iter().zip(&records) {
        assert_eq!((r.offset, r.from, &r.datagram), (*offset, *from, datagram));
    }
    // Replay offsets start at the first record.
    assert_eq!(recording.offsets()[0], Duration::ZERO);
    assert_eq!(recording.duration(), Duration::from_micros(33_000 - 10));
    let explicit = Recording::load_as(&path, Format::Fwrec).unwrap();
    assert_eq!(explicit.records(), recording.records());
}

#[test]
fn a_truncated_file_reads_up_to_its_last_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    let records = sample_records();
    let (path, bytes) = write_file(&dir, &records);
    // Cut inside the max-size datagram of the third record.
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let recording = Recording::load(&path).unwrap();
    assert!(recording.truncated());
    assert_eq!(recording.len(), 2);
    assert_eq!(recording.records()[1].from, addr("[::1]:9000"));
    // Cut exactly after the second record: a clean end.
    let second_end = 20 + (8 + 1 + 4 + 2 + 4 + records[0].2.len()) + (8 + 1 + 16 + 2 + 4);
    std::fs::write(&path, &bytes[..second_end]).unwrap();
    let recording = Recording::load(&path).unwrap();
    assert!(!recording.truncated());
    assert_eq!(recording.len(), 2);
}

#[test]
fn hostile_files_are_errors_or_clean_ends_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (_, good) = write_file(&dir, &sample_records()[..2]);
    let mut rng = Rng(0x5EED_F00D_1234_5678);
    let mut outcomes = [0usize; 2];
    for _ in 0..4000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.below(4) {
            match rng.below(5) {
                0 if !bytes.is_empty() => {
                    let i = rng.below(bytes.len());
                    bytes[i] ^= 1 << rng.below(8);
                }
                1 if !bytes.is_empty() => {
                    let i = rng.below(bytes.len());
                    bytes[i] = rng.next() as u8;
                }
                2 => bytes.truncate(rng.below(bytes.len() + 1)),
                3 => {
                    // A huge or random length field somewhere after the header.
                    if bytes.len() > 24 {
                        let i = 20 + rng.below(bytes.len() - 24);
                        let len = if rng.below(2) == 0 {
                            u32::MAX
                        } else {
                            rng.next() as u32
                        };
                        bytes[i..i + 4].copy_from_slice(&len.to_le_bytes());
                    }
                }
                0 | 1 => {}
                _ => {
                    let i = rng.below(bytes.len() + 1);
                    let junk: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
                    bytes.splice(i..i, junk);
                }
            }
        }
        match Recording::from_fwrec(&bytes) {
            Ok(recording) => {
                outcomes[0] += 1;
                assert!(recording
                    .records()
                    .iter()
                    .all(|r| r.datagram.len() <= MAX_DATAGRAM));
                // Whatever survived must decode without trouble too.
                let _ = record::frames(&recording).count();
            }
            Err(_) => outcomes[1] += 1,
        }
    }
    // The mutations reach both outcomes, so both paths were exercised.
    assert!(outcomes[0] > 100 && outcomes[1] > 100, "{outcomes:?}");

    // Files that are not recordings at all.
    let path = dir.path().join("junk.bin");
    for junk in [
        &b""[..],
        b"FW",
        b"FWREC\0\r\n\x01",
        b"\x89PNG\r\n\x1a\n",
        b"hello, world\n",
    ] {
        std::fs::write(&path, junk).unwrap();
        let err = Recording::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                RecordError::Fwrec { .. } | RecordError::UnknownFormat { .. }
            ),
            "{err}"
        );
    }
    assert!(matches!(
        Recording::load(&dir.path().join("missing.fwrec")),
        Err(RecordError::Open { .. })
    ));
}

#[test]
fn records_loopback_udp_with_increasing_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("loopback.fwrec");
    let handle = spawn_recorder(RecorderConfig {
        ingest: IngestConfig {
            listen: vec![addr("127.0.0.1:0")],
            ..IngestConfig::default()
        },
        out: out.clone(),
        max_datagrams: None,
        max_duration: None,
    })
    .unwrap();
    let to = handle.local_addrs()[0];
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let datagrams = vmc_stream(20);
    for d in &datagrams {
        sender.send_to(d, to).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while handle.attached().stats().datagrams < datagrams.len() as u64 && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = handle.shutdown().finish().unwrap();
    assert_eq!(stats.datagrams, datagrams.len() as u64);

    let recording = Recording::load(&out).unwrap();
    let records = recording.records();
    assert_eq!(records.len(), datagrams.len());
    for (r, d) in records.iter().zip(&datagrams) {
        assert_eq!(&r.datagram, d);
        assert_eq!(r.from, sender.local_addr().unwrap());
    }
    assert!(records.windows(2).all(|w| w[0].offset <= w[1].offset));
    // The sender slept between datagrams, so the recording spans real time.
    assert!(records.last().unwrap().offset > records[0].offset);
}

/// Waits (bounded) until the recorder has written `n` datagrams.
fn wait_for_records(handle: &ingest::IngestHandle<record::Recorder>, n: u64) {
    let recorder = handle.attached();
    let deadline = Instant::now() + Duration::from_secs(30);
    while recorder.stats().datagrams < n {
        assert!(
            Instant::now() < deadline,
            "recorded only {:?}",
            recorder.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_recording_holds_every_listener_including_what_the_guard_ignores() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("two.fwrec");
    let handle = spawn_recorder(RecorderConfig {
        ingest: IngestConfig {
            listen: vec![addr("127.0.0.1:0")],
            phones: vec![PhoneListen {
                protocol: Protocol::LiveLinkFace,
                addr: addr("127.0.0.1:0"),
                required: true,
            }],
            ..IngestConfig::default()
        },
        out: out.clone(),
        max_datagrams: None,
        max_duration: None,
    })
    .unwrap();
    let osc = handle.local_addr(Protocol::Vmc).unwrap();
    let llf = handle.local_addr(Protocol::LiveLinkFace).unwrap();
    assert_ne!(osc.port(), llf.port());
    let bound: Vec<SocketAddr> = handle.listeners().iter().map(|l| l.addr).collect();
    assert_eq!(bound, [osc, llf]);
    assert_eq!(handle.local_addrs(), [osc], "the OSC addresses");
    assert_eq!(handle.local_addr(Protocol::FaceCap), Some(osc));

    let pc = UdpSocket::bind("127.0.0.1:0").unwrap();
    let phone = UdpSocket::bind("127.0.0.1:0").unwrap();
    let vmc = encode(&bundle(vec![val("jawOpen", 0.5), apply()]));
    let packet = crate::support::llf_packet(0.25);
    // The VMC sender takes the source lock; the phone's packets are then ignored by the guard,
    // but the recording is made before the guard and keeps them.
    pc.send_to(&vmc, osc).unwrap();
    wait_for_records(&handle, 1);
    phone.send_to(&packet, llf).unwrap();
    phone.send_to(b"not a packet", llf).unwrap();
    pc.send_to(&vmc, osc).unwrap();
    wait_for_records(&handle, 4);
    let stats = handle.shutdown().finish().unwrap();
    assert_eq!((stats.datagrams, stats.senders), (4, 2));

    let recording = Recording::load(&out).unwrap();
    let records = recording.records();
    assert_eq!(records.len(), 4);
    let from = |sender: &UdpSocket| -> Vec<Vec<u8>> {
        let addr = sender.local_addr().unwrap();
        records
            .iter()
            .filter(|r| r.from == addr)
            .map(|r| r.datagram.clone())
            .collect()
    };
    assert_eq!(from(&pc), [vmc.clone(), vmc]);
    assert_eq!(from(&phone), [packet, b"not a packet".to_vec()]);
    assert!(records.windows(2).all(|w| w[0].offset <= w[1].offset));
}

#[test]
fn a_recording_asks_the_phone_to_stream_like_a_live_run() {
    // A fake iFacialMocap: it streams one frame back to whoever sends it the start string.
    let phone = UdpSocket::bind("127.0.0.1:0").unwrap();
    phone
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let phone_addr = phone.local_addr().unwrap();
    let frame_text = b"eyeBlink_L-29|jawOpen-40|=head#1,2,3,0,0,-0.5|".to_vec();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let fake = {
        let stop = Arc::clone(&stop);
        let answered = Arc::clone(&answered);
        let frame_text = frame_text.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((len, from)) = phone.recv_from(&mut buf) {
                    if &buf[..len] == IFM_START.as_bytes() {
                        answered.lock().unwrap().push(from);
                        let _ = phone.send_to(&frame_text, from);
                    }
                }
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ifm.fwrec");
    let handle = spawn_recorder(RecorderConfig {
        ingest: IngestConfig {
            listen: Vec::new(),
            phones: vec![PhoneListen {
                protocol: Protocol::IFacialMocap,
                addr: addr("127.0.0.1:0"),
                required: true,
            }],
            phone: Some(phone_addr.ip()),
            phone_ports: PhonePorts {
                ifacialmocap: phone_addr.port(),
                ..PhonePorts::default()
            },
            ..IngestConfig::default()
        },
        out: out.clone(),
        max_datagrams: Some(1),
        max_duration: None,
    })
    .unwrap();
    let listener = handle.local_addr(Protocol::IFacialMocap).unwrap();
    assert!(
        handle.attached().wait_finished(Duration::from_secs(30)),
        "no frame came"
    );
    let stats = handle.shutdown().finish().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    fake.join().unwrap();
    assert_eq!(stats.datagrams, 1);
    assert_eq!(
        answered.lock().unwrap()[0],
        listener,
        "asked from the listener"
    );
    let recording = Recording::load(&out).unwrap();
    assert_eq!(recording.records()[0].from, phone_addr);
    assert_eq!(recording.records()[0].datagram, frame_text);
}

#[test]
fn replay_to_reproduces_datagrams_in_order_with_their_timing() {
    let datagrams = vmc_stream(25);
    let step = Duration::from_millis(8);
    let recording = recording_of(&datagrams, step);
    let target = UdpSocket::bind("127.0.0.1:0").unwrap();
    target
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let options = ReplayOptions {
        speed: 2.0,
        looped: false,
    };
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (stats, received) = std::thread::scope(|scope| {
        let receiver = scope.spawn(|| {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            let mut got = Vec::new();
            for _ in 0..datagrams.len() {
                let (len, _) = target.recv_from(&mut buf).unwrap();
                got.push((Instant::now(), buf[..len].to_vec()));
            }
            got
        });
        let stats =
            record::replay_to(&recording, target.local_addr().unwrap(), &options, &stop).unwrap();
        (stats, receiver.join().unwrap())
    });
    assert!(stats.finished);
    assert_eq!(stats.datagrams, datagrams.len() as u64);
    assert_eq!(stats.passes, 1);
    let bytes: Vec<&Vec<u8>> = received.iter().map(|(_, b)| b).collect();
    assert_eq!(bytes, datagrams.iter().collect::<Vec<_>>());
    // Loose bound only: the last datagram cannot arrive before it was due.
    let due = recording.duration().div_f64(options.speed);
    let slack = Duration::from_millis(5);
    assert!(
        received.last().unwrap().0 - start + slack >= due,
        "the replay ran faster than the recording"
    );
}

#[test]
fn spawn_replay_gives_the_frames_a_decoder_gives() {
    let recording = recording_of(&vmc_stream(30), Duration::from_millis(2));
    let expected = decode_directly(&recording);
    assert_eq!(expected.len(), 30);
    let frames = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let frames = Arc::clone(&frames);
        move |frame: FaceFrame| frames.lock().unwrap().push(frame)
    };
    let handle = spawn_replay(
        recording.clone(),
        ReplayOptions {
            speed: 4.0,
            looped: false,
        },
        Box::new(sink),
    )
    .unwrap();
    assert!(handle.wait_finished(Duration::from_secs(60)));
    let stats = handle.shutdown();
    assert_eq!(stats.frames, 30);
    assert_eq!(stats.malformed, 1);
    assert_eq!(stats.datagrams, recording.len() as u64);
    let got = frames.lock().unwrap().clone();
    assert_same_faces(&got, &expected);
    // Frame spacing follows the recording (received = due time), not the thread's wake-ups.
    assert!(got.windows(2).all(|w| w[0].received <= w[1].received));

    // The offline iterator agrees, with received = base + recorded offset.
    let offline: Vec<FaceFrame> = record::frames(&recording).collect();
    assert_same_faces(&offline, &expected);
    let apply_record = recording
        .records()
        .iter()
        .position(|r| !r.datagram.starts_with(b"not"))
        .unwrap();
    assert_eq!(
        offline[0].received,
        record::base_instant() + recording.records()[apply_record].offset
    );
}

#[test]
fn a_looped_replay_keeps_going_until_shut_down() {
    let recording = recording_of(&vmc_stream(3), Duration::from_millis(1));
    let count = Arc::new(Mutex::new(0usize));
    let sink = {
        let count = Arc::clone(&count);
        move |_: FaceFrame| *count.lock().unwrap() += 1
    };
    let handle = spawn_replay(
        recording,
        ReplayOptions {
            speed: 1.0,
            looped: true,
        },
        Box::new(sink),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while *count.lock().unwrap() < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = handle.shutdown();
    assert!(!stats.finished);
    assert!(stats.passes >= 3, "{stats:?}");
}

/// The JawOpen column of the fixture CSV, read independently of facewire's CSV reader.
fn csv_column(text: &str, name: &str) -> Vec<f32> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header.iter().position(|h| h.trim() == name).unwrap();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').nth(column).unwrap().trim().parse().unwrap())
        .collect()
}

fn llf_fixture() -> Option<PathBuf> {
    let dir = crate::support::fixtures("live link face csv")?;
    Some(dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv"))
}

#[test]
fn llf_csv_replays_as_frames_offline() {
    let Some(path) = llf_fixture() else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let jaw = csv_column(&text, "JawOpen");
    assert_eq!(jaw.len(), 328);

    let recording = Recording::load(&path).unwrap();
    assert_eq!(recording.format(), Format::LlfCsv);
    assert_eq!(recording.len(), 328);
    let explicit = Recording::load_as(&path, Format::LlfCsv).unwrap();
    assert_eq!(explicit.len(), 328);
    let frames: Vec<FaceFrame> = record::frames(&recording).collect();
    assert_eq!(frames.len(), 328);
    for (i, (frame, expected)) in frames.iter().zip(&jaw).enumerate() {
        assert_eq!(frame.get(Channel::JawOpen), Some(*expected), "row {i}");
        assert_eq!(frame.from, record::NO_SENDER);
    }
    // 328 rows at 60 fps span about 5.45 s.
    let span = recording.duration().as_secs_f64();
    assert!((5.0..6.0).contains(&span), "{span}");
    // Loading a CSV as .fwrec is an error, not a misread.
    assert!(matches!(
        Recording::load_as(&path, Format::Fwrec),
        Err(RecordError::Fwrec { .. })
    ));
}

/// Replays `recording` over loopback into a real ingest thread and returns the frames it
/// committed, waiting for `expect` of them.
fn replay_into_ingest(recording: &Recording, expect: usize) -> Vec<FaceFrame> {
    let frames = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let frames = Arc::clone(&frames);
        move |frame: FaceFrame| frames.lock().unwrap().push(frame)
    };
    let ingest = ingest::spawn(
        IngestConfig {
            listen: vec![addr("127.0.0.1:0")],
            ..IngestConfig::default()
        },
        Box::new(sink),
    )
    .unwrap();
    let to = ingest.local_addrs()[0];
    let stats = record::replay_to(
        recording,
        to,
        &ReplayOptions {
            speed: 4.0,
            looped: false,
        },
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(stats.datagrams, recording.len() as u64);
    assert_eq!(stats.send_errors, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while frames.lock().unwrap().len() < expect && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    ingest.shutdown();
    let frames = frames.lock().unwrap().clone();
    frames
}

#[test]
fn llf_csv_replays_over_udp_as_vmc_that_facewire_decodes_back() {
    let Some(path) = llf_fixture() else {
        return;
    };
    let recording = Recording::load(&path).unwrap();
    let offline: Vec<FaceFrame> = record::frames(&recording).collect();
    let received = replay_into_ingest(&recording, offline.len());
    assert_eq!(received.len(), 328);
    for (i, (got, want)) in received.iter().zip(&offline).enumerate() {
        assert_eq!(got.present, want.present, "row {i}");
        for channel in want.present.iter() {
            assert_eq!(got.get(channel), want.get(channel), "row {i} {channel}");
        }
        for (a, b) in [
            (got.head, want.head),
            (got.left_eye, want.left_eye),
            (got.right_eye, want.right_eye),
        ] {
            assert_eq!(a.is_some(), b.is_some(), "row {i}");
            if let (Some(a), Some(b)) = (a, b) {
                assert!(a.dot(b).abs() > 1.0 - 1e-4, "row {i}: {a} vs {b}");
            }
        }
        let time = recording.llf_rows()[i].time;
        assert_eq!(got.sender_time, Some(f64::from(time as f32)), "row {i}");
    }
}

#[test]
fn csv_rows_with_a_head_rotation_survive_the_vmc_round_trip() {
    let Some(path) = llf_fixture() else {
        return;
    };
    // The public fixtures have the head rotation off, so give the rows one.
    let mut rows = Recording::load(&path).unwrap().llf_rows().to_vec();
    rows.truncate(40);
    for (i, row) in rows.iter_mut().enumerate() {
        let t = i as f32 * 0.02;
        row.head = Some(Quat::from_euler(
            glam::EulerRot::YXZ,
            0.4 - t,
            0.1 + t,
            -0.2,
        ));
    }
    let recording = Recording::from_llf_rows(rows.clone());
    let received = replay_into_ingest(&recording, rows.len());
    assert_eq!(received.len(), rows.len());
    for (got, row) in received.iter().zip(&rows) {
        let (a, b) = (got.head.unwrap(), row.head.unwrap());
        assert!(
            (a - b).length() < 1e-4 || (a + b).length() < 1e-4,
            "{a} vs {b}"
        );
        assert_eq!(
            got.get(Channel::JawOpen),
            row.present
                .contains(Channel::JawOpen)
                .then(|| row.weights[Channel::JawOpen.index()])
        );
    }
}

#[test]
fn a_replay_shortens_a_pause_of_ages_and_says_so_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let from = addr("127.0.0.1:5000");
    let frame = crate::support::vmc_frame(&[("jawOpen", 0.5)]);
    // Almost 2^64 µs (half a million years) between the two datagrams.
    let records = [
        (Duration::ZERO, from, frame.clone()),
        (Duration::from_micros(u64::MAX - 1), from, frame),
    ];
    let (path, _) = write_file(&dir, &records);
    let target = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let output = std::process::Command::new(crate::support::facewire_bin())
        .arg("replay")
        .arg(&path)
        .arg("--to")
        .arg(target.local_addr().unwrap().to_string())
        .args(["--speed", "100"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the replay waited {:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains("1 pause(s) in the recording are longer than 10 s"),
        "{stderr}"
    );
}

#[test]
fn a_huge_recording_or_a_device_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    // 1.3 GB, sparse: no disk is used, but a whole read would take the memory.
    let huge = dir.path().join("huge.csv");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(1_300_000_000).unwrap();
    drop(file);
    let mut cases = vec![(huge, "1239.8 MiB, more than the 80 MiB")];
    if cfg!(unix) {
        cases.push((PathBuf::from("/dev/zero"), "not a regular file"));
    }
    for (path, said) in cases {
        let output = std::process::Command::new(crate::support::facewire_bin())
            .arg("replay")
            .arg(&path)
            .args(["--to", "127.0.0.1:9"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains(said), "{}: {stderr}", path.display());
    }
}

/// The most memory `facewire listen --replay FILE` took (its peak resident set, from /proc),
/// read once it printed its first line: by then the whole recording is loaded.
#[cfg(target_os = "linux")]
fn peak_memory_replaying(file: &std::path::Path) -> u64 {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("facewire.toml");
    std::fs::write(&config, "[api]\nenabled = false\n").unwrap();
    let mut child = std::process::Command::new(crate::support::facewire_bin())
        .arg("--config")
        .arg(&config)
        .args(["listen", "--replay"])
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(
        first.starts_with('{'),
        "no line from listen --replay {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

#[cfg(target_os = "linux")]
#[test]
fn the_largest_takes_load_in_bounded_memory() {
    const LIMIT: u64 = 200 << 20;
    let dir = tempfile::tempdir().unwrap();
    let n = record::MAX_RECORDING_ITEMS;
    // A Live Link Face CSV of the most rows, each with every channel and the three rotations:
    // the most a CSV can ask to hold.
    let mut header = String::from("Timecode,BlendShapeCount");
    for c in Channel::ALL {
        header.push(',');
        header.push_str(&c.pascal_name());
    }
    for part in ["Head", "LeftEye", "RightEye"] {
        for angle in ["Yaw", "Pitch", "Roll"] {
            header.push_str(&format!(",{part}{angle}"));
        }
    }
    let mut csv = header + "\n";
    let zeros = ",0".repeat(52 + 9);
    for i in 0..n {
        let (s, f) = (i / 60, i % 60);
        csv.push_str(&format!(
            "{:02}:{:02}:{:02}:{f:02}.000,61{zeros}\n",
            s / 3600,
            s / 60 % 60,
            s % 60
        ));
    }
    let csv_path = dir.path().join("long.csv");
    std::fs::write(&csv_path, &csv).unwrap();
    drop(csv);
    // A .fwrec of the most datagrams, filling the largest file: a VMC bundle of about 300 bytes
    // each (the datagrams' bytes are what a .fwrec holds in memory besides its records).
    let target = (record::MAX_RECORDING_BYTES as usize - 20) / n - 19;
    let content: Vec<_> = Channel::ALL[..4]
        .iter()
        .map(|c| val(&c.pascal_name(), 0.5))
        .chain([apply()])
        .collect();
    let mut datagram = encode(&bundle(content.clone()));
    // A message no receiver knows fills the rest, as a phone app's extras would.
    for len in 0.. {
        let mut padded = content.clone();
        padded.push(crate::support::msg(
            "/facewire/pad",
            vec![rosc::OscType::String("x".repeat(len))],
        ));
        let next = encode(&bundle(padded));
        if next.len() > target {
            break;
        }
        datagram = next;
    }
    let room = record::MAX_RECORDING_BYTES as usize - n * (datagram.len() + 19) - 20;
    assert!(
        room < n * 4,
        "the file is nearly the largest read ({room} bytes left)"
    );
    let mut writer = Writer::new(Vec::new(), Header::default()).unwrap();
    for i in 0..n {
        let offset = Duration::from_micros(i as u64 * 16_667);
        writer
            .write(offset, addr("127.0.0.1:5000"), &datagram)
            .unwrap();
    }
    let fwrec_path = dir.path().join("long.fwrec");
    std::fs::write(&fwrec_path, writer.into_inner()).unwrap();
    for path in [csv_path, fwrec_path] {
        let peak = peak_memory_replaying(&path);
        eprintln!(
            "{}: {:.0} MiB at most",
            path.display(),
            peak as f64 / f64::from(1 << 20)
        );
        assert!(peak < LIMIT, "{} took {} MiB", path.display(), peak >> 20);
    }
}

#[test]
fn a_recording_of_more_items_than_replayed_is_refused_with_the_number() {
    let dir = tempfile::tempdir().unwrap();
    let n = record::MAX_RECORDING_ITEMS + 1;
    let mut writer = Writer::new(Vec::new(), Header::default()).unwrap();
    for _ in 0..n {
        writer
            .write(Duration::ZERO, addr("127.0.0.1:5000"), &[])
            .unwrap();
    }
    let path = dir.path().join("many.fwrec");
    std::fs::write(&path, writer.into_inner()).unwrap();
    let error = Recording::load(&path).unwrap_err();
    let said = facewire::diagnostic::with_causes(&error);
    assert!(said.contains("more than 250000 datagrams"), "{said}");
    let mut csv = String::from("Timecode,BlendShapeCount,JawOpen\n");
    for _ in 0..n {
        csv.push_str("00:00:00:00.000,1,0\n");
    }
    let path = dir.path().join("many.csv");
    std::fs::write(&path, csv).unwrap();
    let said = facewire::diagnostic::with_causes(&Recording::load(&path).unwrap_err());
    assert!(said.contains("more than 250000 rows"), "{said}");
}
