//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

/// The third-party fixtures folder (`$FACEWIRE_FIXTURES`, else `../shared/fixtures`), or `None`
/// with a note on stderr saying which tests are skipped.
pub fn fixtures(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: fixtures folder {} is absent; skipping {what} (set FACEWIRE_FIXTURES)",
            dir.display()
        );
        None
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built `facewire` binary.
pub fn facewire_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_facewire"))
}

/// How many cases a fuzz test runs: `default`, or `$FACEWIRE_FUZZ_CASES` for a long run.
pub fn fuzz_cases(default: u64) -> u64 {
    std::env::var("FACEWIRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The PRNG seed of a fuzz test: `default`, mixed with `$FACEWIRE_FUZZ_SEED` so long runs can
/// explore other cases.
pub fn fuzz_seed(default: u64) -> u64 {
    let extra: u64 = std::env::var("FACEWIRE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    default ^ extra.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A seeded generator (SplitMix64), so that every fuzz run mutates the same datagrams.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A VMC frame from 127.0.0.1:1, received now, with `values` set and nothing else.
pub fn frame(values: &[(facewire::arkit::Channel, f32)]) -> facewire::arkit::FaceFrame {
    let mut f = facewire::arkit::FaceFrame::empty(
        facewire::arkit::Protocol::Vmc,
        std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
        std::time::Instant::now(),
    );
    for &(c, v) in values {
        f.set(c, v);
    }
    f
}

/// An OSC message to `addr` with `args`.
pub fn msg(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.to_string(),
        args,
    })
}

/// VMC's `/VMC/Ext/Blend/Val s f`: one blendshape value, committed by the next [`apply`].
pub fn val(name: &str, value: f32) -> OscPacket {
    msg(
        "/VMC/Ext/Blend/Val",
        vec![OscType::String(name.to_string()), OscType::Float(value)],
    )
}

/// VMC's `/VMC/Ext/Blend/Apply`: commits the values sent since the last one.
pub fn apply() -> OscPacket {
    msg("/VMC/Ext/Blend/Apply", vec![])
}

/// An OSC bundle of `content` with time tag 1 ("immediately").
pub fn bundle(content: Vec<OscPacket>) -> OscPacket {
    OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content,
    })
}

/// The datagram of `packet`.
pub fn encode(packet: &OscPacket) -> Vec<u8> {
    rosc::encoder::encode(packet).unwrap()
}

/// One VMC frame as a datagram: a bundle of a [`val`] per weight, then [`apply`].
pub fn vmc_frame(weights: &[(&str, f32)]) -> Vec<u8> {
    let mut content: Vec<OscPacket> = weights.iter().map(|&(name, v)| val(name, v)).collect();
    content.push(apply());
    encode(&bundle(content))
}

/// Packs JSON and BIN chunks into a GLB container, each padded to four bytes (JSON with spaces,
/// BIN with zeros).
pub fn glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let mut json = json.to_vec();
    json.resize(json.len().next_multiple_of(4), b' ');
    let mut bin = bin.to_vec();
    bin.resize(bin.len().next_multiple_of(4), 0);
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend(json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend(bin);
    out
}

/// The datagrams of an LLV "tape" (Live Link Face captures): gzip( u8 version = 6, u32 BE count,
/// count × (u32 BE size, datagram) ).
pub fn llv_tape(gz: &[u8]) -> Vec<Vec<u8>> {
    use std::io::Read;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw[0], 6, "tape version");
    let count = u32::from_be_bytes(raw[1..5].try_into().unwrap()) as usize;
    let mut at = 5;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let size = u32::from_be_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        out.push(raw[at..at + size].to_vec());
        at += size;
    }
    assert_eq!(at, raw.len(), "the tape holds exactly {count} datagrams");
    out
}

/// The pixels where any channel of `a` and `b` differs by more than `threshold`.
pub fn changed_pixels(
    a: &facewire::image::RgbaImage,
    b: &facewire::image::RgbaImage,
    threshold: u8,
) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for y in 0..a.height {
        for x in 0..a.width {
            let (p, q) = (a.pixel(x, y), b.pixel(x, y));
            if p.iter().zip(q).any(|(m, n)| m.abs_diff(n) > threshold) {
                out.push((x, y));
            }
        }
    }
    out
}

/// A Live Link Face packet whose `jawOpen` is `jaw`.
pub fn llf_packet(jaw: f32) -> Vec<u8> {
    use facewire::ingest::livelink::{self, LiveLinkPacket};
    let mut values = [0.0f32; livelink::VALUE_COUNT];
    values[facewire::arkit::Channel::JawOpen.index()] = jaw;
    livelink::encode(&LiveLinkPacket {
        version: livelink::PACKET_VERSION,
        device_id: b"TEST-DEVICE",
        subject: b"test",
        frame_number: 1,
        subframe: 0.0,
        rate_numerator: 60,
        rate_denominator: 1,
        declared_count: Some(livelink::VALUE_COUNT as u8),
        values,
        value_len: livelink::VALUE_COUNT,
    })
}

/// Collects the WARN lines the library logs while `f` runs on this thread.
pub fn warnings_during<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    #[derive(Clone)]
    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink(std::sync::Arc::default());
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    let lines = text
        .lines()
        .filter(|l| l.contains("WARN"))
        .map(str::to_owned)
        .collect();
    (out, lines)
}
