//! Which app a datagram looks like, judged from its bytes: for the connect card's hint when a
//! listener receives what another protocol's listener should (a phone sending to the wrong port).
//!
//! [`looks_like`] borrows the datagram, allocates nothing and never panics; the work is bounded
//! by the datagram's length.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use super::ifacialmocap::{self, TextSender};
use super::livelink;
use super::openseeface;
use crate::arkit::Protocol;

/// Face Cap's OSC addresses.
const FACECAP_ADDRESSES: [&[u8]; 6] = [b"/W", b"/HR", b"/HRQ", b"/HT", b"/ELR", b"/ERR"];

/// How deep bundles are followed.
const MAX_DEPTH: u8 = 4;

/// How many elements of one bundle are looked at.
const MAX_ELEMENTS: usize = 64;

/// The app `datagram` looks like: OSC with `/VMC/` addresses ([`Protocol::Vmc`]) or Face Cap's
/// (`/W`, `/HR`, `/HRQ`, `/HT`, `/ELR`, `/ERR`: [`Protocol::FaceCap`]), a Live Link Face packet,
/// iFacialMocap or Facemotion3d text (`name-int|…|=head#…|`), VTube Studio JSON
/// (`{…"BlendShapes"…}`), or OpenSeeFace's face records (whole 1785-byte records from a camera,
/// [`openseeface::plausible`]); `None` for anything else.
pub fn looks_like(datagram: &[u8]) -> Option<Protocol> {
    // OpenSeeFace's records start with a binary time, so their first byte says nothing; their
    // length and camera size do, and are checked first.
    if openseeface::plausible(datagram) {
        return Some(Protocol::OpenSeeFace);
    }
    match datagram.first()? {
        b'/' | b'#' => osc(datagram, 0),
        &livelink::PACKET_VERSION => livelink::parse(datagram)
            .is_ok()
            .then_some(Protocol::LiveLinkFace),
        _ => json(datagram).or_else(|| text(datagram)),
    }
}

/// An OSC message or bundle whose first known address is VMC's or Face Cap's.
fn osc(data: &[u8], depth: u8) -> Option<Protocol> {
    if let Some(mut rest) = data.strip_prefix(b"#bundle\0") {
        if depth >= MAX_DEPTH {
            return None;
        }
        // The time tag, then (size, element) pairs.
        rest = rest.get(8..)?;
        for _ in 0..MAX_ELEMENTS {
            let size = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
            let size = usize::try_from(size).ok()?;
            let element = rest.get(4..4usize.checked_add(size)?)?;
            if let Some(protocol) = osc(element, depth + 1) {
                return Some(protocol);
            }
            rest = &rest[4 + size..];
        }
        None
    } else if data.first() == Some(&b'/') {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        let address = &data[..end];
        if address.starts_with(b"/VMC/") {
            Some(Protocol::Vmc)
        } else if FACECAP_ADDRESSES.contains(&address) {
            Some(Protocol::FaceCap)
        } else {
            None
        }
    } else {
        None
    }
}

/// VTube Studio (or MeowFace) JSON: an object with `"BlendShapes"`.
fn json(data: &[u8]) -> Option<Protocol> {
    let start = data.iter().position(|b| !b.is_ascii_whitespace())?;
    (data[start] == b'{' && contains(data, b"\"BlendShapes\"")).then_some(Protocol::VTubeStudio)
}

/// iFacialMocap or Facemotion3d text: it decodes as a text frame, or it carries a `head#` block.
fn text(data: &[u8]) -> Option<Protocol> {
    let from = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
    let decodes =
        ifacialmocap::decode(data, from, Instant::now(), TextSender::IFacialMocap).is_ok();
    if !decodes && !contains(data, b"head#") {
        return None;
    }
    Some(if ifacialmocap::looks_like_facemotion3d(data) {
        Protocol::Facemotion3d
    } else {
        Protocol::IFacialMocap
    })
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

    use super::*;
    use crate::arkit::Channel;
    use crate::ingest::livelink::{LiveLinkPacket, VALUE_COUNT};

    /// A fixture of `shared/fixtures/protocols`, or `None` with a note when absent.
    fn fixture(name: &str) -> Option<Vec<u8>> {
        let dir = std::env::var_os("FACEWIRE_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures")
            });
        let path = dir.join("protocols").join(name);
        match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(_) => {
                eprintln!("note: fixture {} is absent; not checked", path.display());
                None
            }
        }
    }

    fn message(addr: &str, args: Vec<OscType>) -> OscPacket {
        OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args,
        })
    }

    fn bundle(content: Vec<OscPacket>) -> Vec<u8> {
        rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
            timetag: OscTime::from((0, 1)),
            content,
        }))
        .unwrap()
    }

    fn live_link(jaw: f32) -> Vec<u8> {
        let mut values = [0.0f32; VALUE_COUNT];
        values[Channel::JawOpen.index()] = jaw;
        livelink::encode(&LiveLinkPacket {
            version: livelink::PACKET_VERSION,
            device_id: b"DEVICE",
            subject: b"iPhone",
            frame_number: 7,
            subframe: 0.0,
            rate_numerator: 60,
            rate_denominator: 1,
            declared_count: Some(VALUE_COUNT as u8),
            values,
            value_len: VALUE_COUNT,
        })
    }

    #[test]
    fn osc_is_told_apart_by_its_addresses() {
        let vmc = bundle(vec![
            message(
                "/VMC/Ext/Blend/Val",
                vec![OscType::String("A".into()), OscType::Float(1.0)],
            ),
            message("/VMC/Ext/Blend/Apply", vec![]),
        ]);
        assert_eq!(looks_like(&vmc), Some(Protocol::Vmc));
        let w = rosc::encoder::encode(&message("/W", vec![OscType::Int(3), OscType::Float(0.5)]))
            .unwrap();
        assert_eq!(looks_like(&w), Some(Protocol::FaceCap));
        let nested = bundle(vec![
            message("/unknown", vec![]),
            OscPacket::Bundle(OscBundle {
                timetag: OscTime::from((0, 1)),
                content: vec![message("/HRQ", vec![OscType::Float(0.0); 4])],
            }),
        ]);
        assert_eq!(looks_like(&nested), Some(Protocol::FaceCap));
        // OSC, but no app facewire knows; and a bundle whose size runs past the end.
        let other = rosc::encoder::encode(&message("/avatar/parameters/x", vec![])).unwrap();
        assert_eq!(looks_like(&other), None);
        let mut cut = vmc.clone();
        cut[16] = 0x7F;
        assert_eq!(looks_like(&cut), None);
        assert_eq!(looks_like(b"#bundle\0"), None);
    }

    #[test]
    fn live_link_face_packets_are_recognised() {
        assert_eq!(looks_like(&live_link(0.5)), Some(Protocol::LiveLinkFace));
        // The header alone (face lost) is a packet too; a cut header is not.
        let packet = live_link(0.5);
        let header = &packet[..packet.len() - 1 - 4 * VALUE_COUNT];
        assert_eq!(looks_like(header), Some(Protocol::LiveLinkFace));
        assert_eq!(looks_like(&packet[..9]), None);
        if let Some(tape) = fixture("livelinkface_llv_dao.datagrams_u32be_len.bin") {
            let len = u32::from_be_bytes(tape[..4].try_into().unwrap()) as usize;
            assert_eq!(looks_like(&tape[4..4 + len]), Some(Protocol::LiveLinkFace));
        }
    }

    #[test]
    fn text_frames_are_told_apart_by_their_names() {
        let ifm = b"mouthSmile_L-30|eyeBlink_L-29|=head#1.0,2.0,3.0,0.1,0.2,0.3|";
        assert_eq!(looks_like(ifm), Some(Protocol::IFacialMocap));
        let fm3d = b"eyeBlinkLeft&29|FM_browInnerUp_L&0|=head#1.0,2.0,3.0,0.1,0.2,0.3|";
        assert_eq!(looks_like(fm3d), Some(Protocol::Facemotion3d));
        // Cut short (no final `|`): still a head block.
        assert_eq!(
            looks_like(b"eyeBlink_L-29|=head#1.0,2."),
            Some(Protocol::IFacialMocap)
        );
        if let Some(sample) = fixture("ifacialmocap_v1_vpuppr_sample.txt") {
            assert_eq!(looks_like(&sample), Some(Protocol::IFacialMocap));
        }
    }

    #[test]
    fn vtube_studio_json_is_recognised() {
        let json = br#"  {"Timestamp":1,"FaceFound":true,"BlendShapes":[{"k":"JawOpen","v":0.5}]}"#;
        assert_eq!(looks_like(json), Some(Protocol::VTubeStudio));
        assert_eq!(
            looks_like(br#"{"messageType":"iOSTrackingDataRequest"}"#),
            None
        );
        if let Some(sample) = fixture("vts_tracking_payload_vpuppr_sample.compact.json") {
            assert_eq!(looks_like(&sample), Some(Protocol::VTubeStudio));
        }
    }

    /// One OpenSeeFace face record: a 640×480 camera, the face found.
    fn openseeface_record(id: i32) -> Vec<u8> {
        let record = openseeface::FaceRecord {
            time: 1_700_000_000.5,
            id,
            width: 640.0,
            height: 480.0,
            eye_open_right: 1.0,
            eye_open_left: 1.0,
            success: 1,
            pnp_error: 3.0,
            quaternion: [-0.7, 0.7, 0.0, 0.0],
            euler: [180.0, 0.0, -90.0],
            translation: [0.0, 0.0, 10.0],
            features: [0.0; openseeface::FEATURES],
        };
        let mut out = Vec::new();
        record.encode(&mut out);
        out
    }

    #[test]
    fn openseeface_records_are_recognised_by_length_and_camera() {
        let one = openseeface_record(0);
        assert_eq!(looks_like(&one), Some(Protocol::OpenSeeFace));
        let mut two = one.clone();
        two.extend(openseeface_record(1));
        assert_eq!(looks_like(&two), Some(Protocol::OpenSeeFace));
        // Whatever the time's first byte happens to be.
        for first in [b'/', b'#', livelink::PACKET_VERSION, b'{'] {
            let mut odd = one.clone();
            odd[0] = first;
            assert_eq!(looks_like(&odd), Some(Protocol::OpenSeeFace), "{first}");
        }
        assert_eq!(looks_like(&one[..1784]), None);
        // An OSC bundle that happens to be four records long is still OSC.
        let mut vmc = vec![message(
            "/VMC/Ext/Blend/Val",
            vec![OscType::String("A".into()), OscType::Float(1.0)],
        )];
        let mut bytes = bundle(vmc.clone());
        while bytes.len() < 4 * openseeface::RECORD_LEN {
            vmc.push(message("/VMC/Ext/Blend/Apply", vec![]));
            bytes = bundle(vmc.clone());
        }
        bytes.resize(4 * openseeface::RECORD_LEN, 0);
        assert_eq!(looks_like(&bytes), Some(Protocol::Vmc));
    }

    #[test]
    fn anything_else_is_nothing_known() {
        assert_eq!(looks_like(b""), None);
        assert_eq!(looks_like(b"hello"), None);
        assert_eq!(looks_like(ifacialmocap::IFM_START.as_bytes()), None);
        assert_eq!(looks_like(&[6, 0xFF, 0xFF, 0xFF, 0xFF]), None);
        assert_eq!(looks_like(&[0u8; 64]), None);
        assert_eq!(looks_like(&[0xFFu8; 300]), None);
        assert_eq!(looks_like(b"/"), None);
    }
}
