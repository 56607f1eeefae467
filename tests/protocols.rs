//! Phone protocol decoders (iFacialMocap, Live Link Face, VTube Studio, OpenSeeFace) against real
//! captures, datagrams of our own and hostile input.
//!
//! The captures are third-party fixtures (`protocols/`, see `shared/fixtures/PROVENANCE.md`):
//! Live Link Face datagrams from think-biq/LLV (BSD-2-Clause), and the iFacialMocap and VTube
//! Studio samples from vpuppr's docs (BSD-2-Clause, Timothy Yuen).

use std::f32::consts::FRAC_1_SQRT_2;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use facewire::arkit::{Channel, FaceFrame, Protocol, TrackingFlag, COUNT};
use facewire::ingest::axes;
use facewire::ingest::livelink::{self, LiveLinkPacket, VALUE_COUNT};
use facewire::ingest::openseeface::{self, feature, FaceRecord, FEATURES, RECORD_LEN};
use facewire::ingest::{phone_decoder, Decoded, PhoneDecoder, ProtocolError, MAX_PHONE_DATAGRAM};
use glam::{Quat, Vec3};

use crate::support::{self, Rng};

/// The `protocols/` fixtures folder, or `None` (with a note) when the fixtures are absent.
fn captures() -> Option<PathBuf> {
    support::fixtures("protocol captures").map(|dir| dir.join("protocols"))
}

fn addr() -> SocketAddr {
    "192.168.1.40:50000".parse().unwrap()
}

fn close(a: Quat, b: Quat) -> bool {
    a.dot(b).abs() > 1.0 - 1e-5
}

/// Splits the `u32 BE length, datagram` stream of `livelinkface_llv_dao.datagrams_u32be_len.bin`.
fn length_prefixed(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (len, tail) = rest.split_at(4);
        let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
        let (datagram, tail) = tail.split_at(len);
        out.push(datagram);
        rest = tail;
    }
    out
}

/// Pearson correlation of two series.
fn correlation(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len() as f32;
    let (ma, mb) = (a.iter().sum::<f32>() / n, b.iter().sum::<f32>() / n);
    let (mut num, mut da, mut db) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        num += (x - ma) * (y - mb);
        da += (x - ma) * (x - ma);
        db += (y - mb) * (y - mb);
    }
    num / (da * db).sqrt()
}

#[test]
fn live_link_face_capture_decodes_frame_by_frame() {
    let Some(dir) = captures() else { return };
    let bytes = std::fs::read(dir.join("livelinkface_llv_dao.datagrams_u32be_len.bin")).unwrap();
    let datagrams = length_prefixed(&bytes);
    assert_eq!(datagrams.len(), 180);
    let mut decoder = PhoneDecoder::new(Protocol::LiveLinkFace).unwrap();
    let mut last_frame = None;
    let mut last_time = f64::NEG_INFINITY;
    let mut frames = Vec::new();
    for datagram in &datagrams {
        let packet = livelink::parse(datagram).unwrap();
        // LLV rewrote the device id to 32 bytes: nothing may assume a 36-byte UUID.
        assert_eq!(packet.device_id, b"DEADC0DE-1337-1337-1337-CAFEBABE");
        assert_eq!(packet.subject, b"LLV Default Device");
        assert_eq!((packet.rate_numerator, packet.rate_denominator), (60, 1));
        if let Some(last) = last_frame {
            assert!(packet.frame_number > last, "frame numbers must increase");
        }
        last_frame = Some(packet.frame_number);
        let frame = decoder
            .decode(datagram, addr(), Instant::now())
            .unwrap()
            .frame;
        let time = frame.sender_time.unwrap();
        assert!(time > last_time);
        last_time = time;
        if packet.declared_count.is_none() {
            assert_eq!(frame.tracking, TrackingFlag::Lost);
            assert!(frame.present.is_empty());
        } else {
            assert_eq!(frame.tracking, TrackingFlag::Tracked);
            assert_eq!(frame.present.len(), COUNT);
            assert!(frame.head.is_some() && frame.left_eye.is_some() && frame.right_eye.is_some());
            frames.push(frame);
        }
    }
    let stats = decoder.stats();
    assert!(stats.is_consistent());
    assert_eq!(stats.frames, 180);
    assert_eq!(
        stats.non_finite_values + stats.bad_values + stats.unknown_keys,
        0
    );
    // The capture's timecode: frame 5375735 at 60 fps is about 24:53 in the day.
    let first = livelink::parse(datagrams[0])
        .unwrap()
        .time_seconds()
        .unwrap();
    assert!((first - (5_375_735.0 + 0.121_925_354) / 60.0).abs() < 1e-6);

    // The axes table's Live Link Face row, against the performer's own eye blendshapes: where the
    // left eye turns towards the performer's left (+X), eyeLookOutLeft − eyeLookInLeft must rise.
    let gaze_x: Vec<f32> = frames
        .iter()
        .map(|f| (f.left_eye.unwrap() * Vec3::Z).x)
        .collect();
    let out_minus_in: Vec<f32> = frames
        .iter()
        .map(|f| {
            f.weights[Channel::EyeLookOutLeft.index()] - f.weights[Channel::EyeLookInLeft.index()]
        })
        .collect();
    assert!(correlation(&gaze_x, &out_minus_in) > 0.95);
    let gaze_y: Vec<f32> = frames
        .iter()
        .map(|f| (f.right_eye.unwrap() * Vec3::Z).y)
        .collect();
    let down_minus_up: Vec<f32> = frames
        .iter()
        .map(|f| {
            f.weights[Channel::EyeLookDownRight.index()]
                - f.weights[Channel::EyeLookUpRight.index()]
        })
        .collect();
    assert!(
        correlation(&gaze_y, &down_minus_up) < -0.95,
        "looking down is −Y"
    );
}

#[test]
fn live_link_face_header_only_packets_of_the_capture_mean_face_lost() {
    let Some(dir) = captures() else { return };
    let bytes = std::fs::read(dir.join("livelinkface_llv_dao.datagrams_u32be_len.bin")).unwrap();
    for datagram in length_prefixed(&bytes).into_iter().take(20) {
        // 25 + N + M bytes: the header up to the frame rate, without the count byte.
        let header = 25 + 32 + 18;
        let decoded = livelink::decode(&datagram[..header], addr(), Instant::now()).unwrap();
        assert_eq!(decoded.frame.tracking, TrackingFlag::Lost);
        assert!(decoded.frame.present.is_empty());
        assert_eq!(decoded.frame.head, None);
        // One byte less is truncated, one more is a count with no values behind it.
        assert!(livelink::decode(&datagram[..header - 1], addr(), Instant::now()).is_err());
        assert!(livelink::decode(&datagram[..header + 1], addr(), Instant::now()).is_err());
    }
}

#[test]
fn ifacialmocap_sample_decodes() {
    let Some(dir) = captures() else { return };
    let text = std::fs::read(dir.join("ifacialmocap_v1_vpuppr_sample.txt")).unwrap();
    let decoded =
        phone_decoder(Protocol::IFacialMocap).unwrap()(&text, addr(), Instant::now()).unwrap();
    let f = decoded.frame;
    assert_eq!(f.protocol, Protocol::IFacialMocap);
    assert_eq!(f.present.len(), COUNT);
    assert_eq!(decoded.unknown_keys, 1, "hapihapi-0");
    assert_eq!((decoded.non_finite_values, decoded.bad_values), (0, 0));
    assert_eq!(f.get(Channel::EyeLookInRight), Some(0.54));
    assert_eq!(f.get(Channel::EyeLookOutLeft), Some(0.44));
    assert_eq!(f.get(Channel::EyeWideLeft), Some(0.26));
    assert_eq!(f.get(Channel::MouthShrugLower), Some(0.21));
    assert_eq!(f.get(Channel::MouthLeft), Some(0.0));
    assert_eq!(f.get(Channel::MouthRight), Some(0.02));
    let head = axes::IFACIALMOCAP
        .euler_degrees(-1.670_409_1, -7.303_246_5, 2.886_358)
        .unwrap();
    assert!(close(f.head.unwrap(), head));
    // The sample's eyes look to the performer's left (eyeLookOut_L, eyeLookIn_R) and down.
    for eye in [f.left_eye.unwrap(), f.right_eye.unwrap()] {
        let gaze = eye * Vec3::Z;
        assert!(gaze.x > 0.2 && gaze.y < 0.0, "{gaze}");
    }
    assert_eq!((f.tracking, f.sender_time), (TrackingFlag::Unknown, None));
}

#[test]
fn vts_samples_decode_alike() {
    let Some(dir) = captures() else { return };
    let now = Instant::now();
    let pretty = std::fs::read(dir.join("vts_tracking_payload_vpuppr_sample.json")).unwrap();
    let compact =
        std::fs::read(dir.join("vts_tracking_payload_vpuppr_sample.compact.json")).unwrap();
    let decode = phone_decoder(Protocol::VTubeStudio).unwrap();
    let a = decode(&pretty, addr(), now).unwrap();
    let b = decode(&compact, addr(), now).unwrap();
    assert_eq!(a, b);
    let f = a.frame;
    assert_eq!(f.protocol, Protocol::VTubeStudio);
    assert_eq!(f.present.len(), COUNT);
    assert_eq!(f.tracking, TrackingFlag::Tracked);
    // The millisecond timestamp survives exactly: it never passes through f32.
    let ms: i64 = 1_664_817_520_079;
    let t = f.sender_time.unwrap();
    assert_eq!(t, ms as f64 / 1000.0);
    assert_eq!((t * 1000.0).round() as i64, ms);
    assert_eq!(f.get(Channel::EyeBlinkRight), Some(0.002_937_057_3));
    assert_eq!(f.get(Channel::EyeWideRight), Some(0.286_455_33));
    assert_eq!(
        (a.unknown_keys, a.non_finite_values, a.bad_values),
        (0, 0, 0)
    );
    let head = axes::VTUBESTUDIO
        .euler_degrees(
            -11.091_268_539_428_711_f64 as f32,
            9.422_998_428_344_727_f64 as f32,
            3.164_631_128_311_157_4_f64 as f32,
        )
        .unwrap();
    assert!(close(f.head.unwrap(), head));
    // Like the iFacialMocap sample: the eyes look to the performer's left and down.
    for eye in [f.left_eye.unwrap(), f.right_eye.unwrap()] {
        let gaze = eye * Vec3::Z;
        assert!(gaze.x > 0.1 && gaze.y < 0.0, "{gaze}");
    }
}

/// Bytes that mean something in one of the grammars, to splice in.
const SPECIAL: &[&[u8]] = &[
    b"|",
    b"#",
    b"-",
    b"&",
    b",",
    b"=",
    b"NaN",
    b"inf",
    b"-1e39",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b"\\u0000",
    b"1e400",
    b"eyeBlink_L",
    b"head#",
    b"\xff\xfe",
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xff",
    b"\x00\x00\x00\x3d",
];

/// One random mutation of `seed`: truncation, bit flips, byte overwrites, huge length fields,
/// spliced grammar bytes, duplicated slices, or plain random bytes.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut d = seed.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(8) {
            0 => d.truncate(rng.below(d.len() + 1)),
            1 => {
                for _ in 0..1 + rng.below(8) {
                    if !d.is_empty() {
                        let i = rng.below(d.len());
                        d[i] ^= 1 << rng.below(8);
                    }
                }
            }
            2 => {
                if !d.is_empty() {
                    let i = rng.below(d.len());
                    d[i] = rng.next() as u8;
                }
            }
            3 => {
                // A length or count field made huge, negative or off by a little.
                let value: u32 = match rng.below(4) {
                    0 => u32::MAX,
                    1 => i32::MAX as u32,
                    2 => rng.next() as u32,
                    _ => rng.below(64) as u32,
                };
                let at = [1usize, 37, 41, 50, 55, 75][rng.below(6)].min(d.len());
                let end = (at + 4).min(d.len());
                d[at..end].copy_from_slice(&value.to_be_bytes()[..end - at]);
            }
            4 => {
                let s = SPECIAL[rng.below(SPECIAL.len())];
                let at = rng.below(d.len() + 1);
                d.splice(at..at, s.iter().copied());
            }
            5 => {
                if !d.is_empty() {
                    let a = rng.below(d.len());
                    let b = (a + rng.below(64)).min(d.len());
                    let slice = d[a..b].to_vec();
                    let at = rng.below(d.len() + 1);
                    d.splice(at..at, slice);
                }
            }
            6 => {
                let len = rng.below(512);
                d = (0..len).map(|_| rng.next() as u8).collect();
            }
            _ => {
                if rng.below(200) == 0 {
                    d.resize(MAX_PHONE_DATAGRAM + 1 + rng.below(100), b' ');
                }
            }
        }
    }
    d
}

/// Checks what a decoded frame promises whatever the input: finite present values and unit,
/// finite rotations.
fn check_frame(frame: &FaceFrame, protocol: Protocol) {
    assert_eq!(frame.protocol, protocol);
    for channel in frame.present.iter() {
        assert!(frame.weights[channel.index()].is_finite());
    }
    for q in [frame.head, frame.left_eye, frame.right_eye]
        .into_iter()
        .flatten()
    {
        assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-3, "{q}");
    }
    if let Some(t) = frame.sender_time {
        assert!(t.is_finite());
    }
}

/// Feeds 100,000 mutations of `seeds` (or `$FACEWIRE_FUZZ_CASES`) to a fresh decoder for `kind`;
/// no panic, every datagram counted once.
fn fuzz(kind: Protocol, seeds: &[Vec<u8>], seed: u64) {
    let n = crate::support::fuzz_cases(100_000);
    let mut rng = Rng(crate::support::fuzz_seed(seed));
    let mut decoder = PhoneDecoder::new(kind).expect("a phone protocol");
    let now = Instant::now();
    let (mut ok, mut rejected) = (0u64, 0u64);
    for _ in 0..n {
        let pick = rng.below(seeds.len());
        let datagram = mutate(&mut rng, &seeds[pick]);
        match decoder.decode(&datagram, addr(), now) {
            Ok(Decoded { frame, .. }) => {
                check_frame(&frame, kind);
                ok += 1;
            }
            Err(ProtocolError::Oversized { len, max }) => {
                assert!(len > max);
                rejected += 1;
            }
            Err(_) => rejected += 1,
        }
    }
    let stats = decoder.stats();
    assert!(stats.is_consistent(), "{stats:?}");
    assert_eq!(stats.datagrams, n);
    assert_eq!(stats.frames, ok);
    assert_eq!(
        stats.oversized + stats.truncated + stats.malformed + stats.unsupported,
        rejected
    );
    // The mutations must exercise both sides, or the fuzz proves nothing.
    assert!(ok > n / 50 && rejected > n / 50, "{stats:?}");
}

/// Reads `name` from the captures, when they are there.
fn capture(name: &str) -> Option<Vec<u8>> {
    captures().map(|dir| std::fs::read(dir.join(name)).unwrap())
}

/// Our own iFacialMocap frame with every fourth channel (short, so that 100,000 decodes stay fast
/// in debug builds; the real sample carries all 52).
fn own_ifacialmocap(separator: char) -> Vec<u8> {
    let mut text = String::from("trackingStatus-1|");
    for (i, channel) in Channel::ALL.iter().enumerate().step_by(4) {
        text.push_str(&format!("{}{separator}{}|", channel.name(), i % 101));
    }
    text.push_str("=head#-12.5,23,7,0.1,0.2,-0.45|rightEye#5,19,1.8|leftEye#5.5,15.6,1.5|");
    text.into_bytes()
}

#[test]
fn fuzz_ifacialmocap() {
    let mut seeds = vec![own_ifacialmocap('-'), own_ifacialmocap('&')];
    seeds.extend(capture("ifacialmocap_v1_vpuppr_sample.txt"));
    fuzz(Protocol::IFacialMocap, &seeds, 0x1FAC_1A10);
}

#[test]
fn fuzz_live_link_face() {
    let mut values = [0.0f32; VALUE_COUNT];
    for (i, v) in values.iter_mut().enumerate() {
        *v = i as f32 / 70.0;
    }
    let packet = LiveLinkPacket {
        version: livelink::PACKET_VERSION,
        device_id: b"1EACAA6D-D06B-4A50-9463-283791062EB9",
        subject: b"Ahmeds_iPhone",
        frame_number: 1_095_835,
        subframe: 0.3453,
        rate_numerator: 60,
        rate_denominator: 1,
        declared_count: Some(VALUE_COUNT as u8),
        values,
        value_len: VALUE_COUNT,
    };
    let mut seeds = vec![
        livelink::encode(&packet),
        livelink::encode(&LiveLinkPacket {
            declared_count: None,
            value_len: 0,
            ..packet
        }),
    ];
    if let Some(bytes) = capture("livelinkface_llv_dao.datagrams_u32be_len.bin") {
        seeds.extend(
            length_prefixed(&bytes)
                .into_iter()
                .step_by(20)
                .map(<[u8]>::to_vec),
        );
    }
    fuzz(Protocol::LiveLinkFace, &seeds, 0x11F_11F);
}

#[test]
fn fuzz_vtube_studio() {
    let shapes: Vec<String> = Channel::ALL
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{{\"k\":\"{}\",\"v\":{}}}",
                c.pascal_name(),
                i as f64 / 60.0
            )
        })
        .collect();
    let own = format!(
        "{{\"Timestamp\":1664817520079,\"Hotkey\":-1,\"FaceFound\":true,\"Rotation\":{{\"x\":-11.1,\"y\":9.4,\"z\":3.2}},\"Position\":{{\"x\":0.5,\"y\":1.3,\"z\":4.7}},\"EyeLeft\":{{\"x\":3.6,\"y\":9.1,\"z\":0.5}},\"EyeRight\":{{\"x\":3.5,\"y\":12.9,\"z\":0.7}},\"BlendShapes\":[{}]}}",
        shapes.join(",")
    );
    let mut seeds = vec![own.into_bytes(), br#"{"FaceFound":false}"#.to_vec()];
    seeds.extend(capture("vts_tracking_payload_vpuppr_sample.compact.json"));
    fuzz(Protocol::VTubeStudio, &seeds, 0x7575_2141);
}

/// An OpenSeeFace face record of our own (no capture is among the fixtures): face `id` with
/// `features`, its 3D pose found or not.
fn own_openseeface(id: i32, success: u8, features: [f32; FEATURES]) -> Vec<u8> {
    let record = FaceRecord {
        time: 1_714_000_000.125,
        id,
        width: 640.0,
        height: 480.0,
        eye_open_right: 0.9,
        eye_open_left: 0.25,
        success,
        pnp_error: 6.5,
        // A face looking into the camera, as OpenSeeFace sends it.
        quaternion: [-FRAC_1_SQRT_2, FRAC_1_SQRT_2, 0.0, 0.0],
        euler: [180.0, 0.0, -90.0],
        translation: [0.2, 0.1, 8.5],
        features,
    };
    let mut out = Vec::new();
    record.encode(&mut out);
    out
}

#[test]
fn openseeface_records_decode_through_the_phone_decoder() {
    let mut features = [0.0; FEATURES];
    features[feature::MOUTH_OPEN] = 0.5;
    features[feature::MOUTH_CORNER_UPDOWN_R] = -0.5;
    features[feature::EYEBROW_UPDOWN_L] = 0.35;
    features[feature::EYEBROW_UPDOWN_R] = 0.35;
    let datagram = own_openseeface(0, 1, features);
    assert_eq!(datagram.len(), RECORD_LEN);
    let mut decoder = PhoneDecoder::new(Protocol::OpenSeeFace).unwrap();
    let d = decoder.decode(&datagram, addr(), Instant::now()).unwrap();
    let f = d.frame;
    assert_eq!(f.protocol, Protocol::OpenSeeFace);
    assert_eq!(f.tracking, TrackingFlag::Tracked);
    assert_eq!(f.sender_time, Some(1_714_000_000.125));
    let near = |c: Channel, v: f32| {
        let got = f.get(c).unwrap_or_else(|| panic!("{c} absent"));
        assert!((got - v).abs() < 1e-5, "{c}: {got}, not {v}");
    };
    // 0.25 of the way between OpenSeeFace's closed (0.2) and open (0.55) lines.
    near(Channel::EyeBlinkLeft, 1.0 - 0.05 / 0.35);
    near(Channel::EyeBlinkRight, 0.0);
    near(Channel::JawOpen, 0.5);
    near(Channel::MouthSmileRight, 0.5);
    near(Channel::MouthSmileLeft, 0.0);
    near(Channel::BrowInnerUp, 0.5);
    near(Channel::BrowOuterUpLeft, 0.5);
    near(Channel::BrowDownLeft, 0.0);
    assert!(close(f.head.unwrap(), Quat::IDENTITY));
    assert_eq!(
        (d.unknown_keys, d.non_finite_values, d.bad_values),
        (0, 0, 0)
    );
    // The same record again, then lost, then cut: counted once each.
    let mut lost = own_openseeface(0, 0, features);
    decoder.decode(&lost, addr(), Instant::now()).unwrap();
    lost.pop();
    assert!(decoder.decode(&lost, addr(), Instant::now()).is_err());
    let stats = decoder.stats();
    assert!(stats.is_consistent());
    assert_eq!(
        (stats.frames, stats.lost_frames, stats.malformed),
        (2, 1, 1)
    );
    assert_eq!(stats.bytes, 3 * RECORD_LEN as u64 - 1);
}

#[test]
fn fuzz_openseeface() {
    let mut features = [0.0f32; FEATURES];
    for (i, f) in features.iter_mut().enumerate() {
        *f = i as f32 / 7.0 - 1.0;
    }
    let one = own_openseeface(0, 1, features);
    let mut two = own_openseeface(3, 1, [0.5; FEATURES]);
    two.extend(own_openseeface(1, 1, features));
    let seeds = vec![one, two, own_openseeface(0, 0, [0.0; FEATURES])];
    assert!(seeds.iter().all(|s| openseeface::plausible(s)));
    fuzz(Protocol::OpenSeeFace, &seeds, 0x05EE_FACE);
}

/// The datagrams of an LLV "tape": gzip( u8 version = 6, u32 BE count, count × (u32 BE size,
/// datagram) ).
fn tape(name: &str) -> Option<Vec<Vec<u8>>> {
    Some(crate::support::llv_tape(&capture(name)?))
}

/// Decodes a synthetic sweep tape into frames, after checking that exactly the raw value `index`
/// moves.
fn sweep(name: &str, index: usize) -> Option<Vec<FaceFrame>> {
    let datagrams = tape(name)?;
    assert!(
        datagrams.len() > 10,
        "{name}: {} datagrams",
        datagrams.len()
    );
    let mut frames = Vec::new();
    let mut first: Option<[f32; VALUE_COUNT]> = None;
    let mut moved = [false; VALUE_COUNT];
    for datagram in &datagrams {
        let packet = livelink::parse(datagram).unwrap();
        assert_eq!(packet.values().len(), VALUE_COUNT);
        let base = *first.get_or_insert(packet.values);
        for (i, (a, b)) in base.iter().zip(packet.values.iter()).enumerate() {
            moved[i] |= a != b;
        }
        let decoded = PhoneDecoder::new(Protocol::LiveLinkFace)
            .unwrap()
            .decode(datagram, addr(), Instant::now())
            .unwrap();
        frames.push(decoded.frame);
    }
    let moving: Vec<usize> = (0..VALUE_COUNT).filter(|&i| moved[i]).collect();
    assert_eq!(moving, [index], "{name}: only value {index} sweeps");
    Some(frames)
}

#[test]
fn live_link_face_head_yaw_sweep_turns_only_the_head_about_y() {
    let Some(frames) = sweep(
        "livelinkface_llv_debug-headyaw.gesichter",
        livelink::HEAD_YAW,
    ) else {
        return;
    };
    let first = frames[0];
    let mut turned = 0;
    for frame in &frames {
        // Every channel and both eyes stay as they were.
        assert_eq!(frame.weights, first.weights);
        assert_eq!(frame.present, first.present);
        assert_eq!(frame.left_eye, first.left_eye);
        assert_eq!(frame.right_eye, first.right_eye);
        let head = frame.head.expect("a head rotation");
        let (axis, angle) = head.to_axis_angle();
        if angle.abs() > 1e-3 {
            turned += 1;
            assert!(
                axis.x.abs() < 1e-4 && axis.z.abs() < 1e-4,
                "the head turns about Y only: axis {axis}, angle {angle}"
            );
        }
    }
    assert!(turned > frames.len() / 2, "the sweep turns the head");
    // Sign check against the table: the frame with the largest raw yaw looks towards -X.
    let datagrams = tape("livelinkface_llv_debug-headyaw.gesichter").unwrap();
    let (i, yaw) = datagrams
        .iter()
        .map(|d| livelink::parse(d).unwrap().values[livelink::HEAD_YAW])
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert!(yaw > 0.1, "the sweep reaches a positive yaw ({yaw})");
    let forward = frames[i].head.unwrap() * Vec3::Z;
    let expected = axes::LIVELINKFACE.euler_radians(0.0, yaw, 0.0).unwrap() * Vec3::Z;
    assert!((forward - expected).length() < 1e-4);
    assert!(
        forward.x < 0.0,
        "+ HeadYaw turns the face to the performer's right: {forward}"
    );
}

#[test]
fn live_link_face_eye_blink_left_sweep_moves_only_eye_blink_left() {
    let Some(frames) = sweep("livelinkface_llv_debug-eyeblinkleft.gesichter", 0) else {
        return;
    };
    let first = frames[0];
    let mut values = Vec::new();
    for frame in &frames {
        for channel in Channel::ALL {
            if channel != Channel::EyeBlinkLeft {
                assert_eq!(frame.get(channel), first.get(channel), "{channel:?}");
            }
        }
        assert_eq!(frame.head, first.head);
        assert_eq!(frame.left_eye, first.left_eye);
        assert_eq!(frame.right_eye, first.right_eye);
        values.push(
            frame
                .get(Channel::EyeBlinkLeft)
                .expect("eyeBlinkLeft present"),
        );
    }
    let (lo, hi) = values
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(hi - lo > 0.5, "eyeBlinkLeft sweeps ({lo}..{hi})");
}
