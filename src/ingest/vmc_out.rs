//! The one VMC encoder: a [`FaceFrame`] as one OSC bundle, the inverse of the VMC decoder. The
//! relay forwards the calibrated stream with it (to VSeeFace, Warudo, VNyan, another facewire),
//! and a replay sends the rows of a CSV take with it, which came without datagrams.
//!
//! The bundle (time tag "immediately") holds a `/VMC/Ext/Blend/Val s f` for each present channel
//! with a finite value (PascalCase "perfect sync" names or camelCase), a `/VMC/Ext/Bone/Pos s
//! fffffff` for `Head`, `LeftEye` and `RightEye` where the frame has a finite rotation, converted
//! back into VMC's Unity axes with [`axes::VMC`] and sent at the origin (facewire has no head
//! translation, as the iFacialMocap PC app sends none), `/VMC/Ext/T f` with the sender's time
//! where the frame has one, and last `/VMC/Ext/Blend/Apply`. Encoding allocates only when the
//! buffer must grow.

use super::axes;
use super::section::ForwardNames;
use crate::arkit::FaceFrame;

/// OSC's "immediately" time tag.
const IMMEDIATELY: u64 = 1;

/// Encodes `frame` as one VMC bundle into `out` (cleared first); see the module documentation.
pub fn encode_vmc(frame: &FaceFrame, names: ForwardNames, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"#bundle\0");
    out.extend_from_slice(&IMMEDIATELY.to_be_bytes());
    for channel in frame.present.iter() {
        let value = frame.weights[channel.index()];
        if !value.is_finite() {
            continue;
        }
        element(out, |out| {
            osc_string(out, b"/VMC/Ext/Blend/Val");
            osc_string(out, b",sf");
            let start = out.len();
            osc_string(out, channel.name().as_bytes());
            if names == ForwardNames::Pascal {
                out[start] = out[start].to_ascii_uppercase();
            }
            out.extend_from_slice(&value.to_be_bytes());
        });
    }
    let bones = [
        (&b"Head"[..], frame.head),
        (b"LeftEye", frame.left_eye),
        (b"RightEye", frame.right_eye),
    ];
    for (bone, rotation) in bones {
        let Some(q) = rotation.filter(|q| q.is_finite() && q.length_squared() > 0.0) else {
            continue;
        };
        let wire = axes::VMC.to_wire_quat(q.normalize());
        element(out, |out| {
            osc_string(out, b"/VMC/Ext/Bone/Pos");
            osc_string(out, b",sfffffff");
            osc_string(out, bone);
            for v in [0.0f32, 0.0, 0.0].into_iter().chain(wire) {
                out.extend_from_slice(&v.to_be_bytes());
            }
        });
    }
    // VMC's time is an f32 by definition.
    if let Some(time) = frame
        .sender_time
        .map(|t| t as f32)
        .filter(|t| t.is_finite())
    {
        element(out, |out| {
            osc_string(out, b"/VMC/Ext/T");
            osc_string(out, b",f");
            out.extend_from_slice(&time.to_be_bytes());
        });
    }
    element(out, |out| {
        osc_string(out, b"/VMC/Ext/Blend/Apply");
        osc_string(out, b",");
    });
}

/// Appends one bundle element: its int32 size, then what `write` appends.
fn element(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let size_at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    // An element is at most a few hundred bytes, far below i32::MAX.
    let size = (out.len() - size_at - 4) as u32;
    out[size_at..size_at + 4].copy_from_slice(&size.to_be_bytes());
}

/// Appends an OSC string: the bytes, a NUL, then NULs up to a multiple of 4.
fn osc_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    let pad = 4 - s.len() % 4;
    out.extend(std::iter::repeat_n(0u8, pad));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::ingest::Decoder;
    use glam::Quat;
    use std::net::SocketAddr;
    use std::time::Instant;

    fn frame() -> FaceFrame {
        let mut frame = FaceFrame::empty(
            Protocol::IFacialMocap,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        frame.set(Channel::EyeBlinkLeft, 0.25);
        frame.set(Channel::JawOpen, 0.5);
        frame.set(Channel::MouthSmileRight, f32::NAN);
        frame.head = Some(Quat::from_rotation_y(0.4) * Quat::from_rotation_x(0.1));
        frame
    }

    fn messages(bytes: &[u8]) -> Vec<rosc::OscMessage> {
        let (_, packet) = rosc::decoder::decode_udp(bytes).unwrap();
        let rosc::OscPacket::Bundle(bundle) = packet else {
            panic!("not a bundle")
        };
        bundle
            .content
            .into_iter()
            .map(|p| match p {
                rosc::OscPacket::Message(m) => m,
                rosc::OscPacket::Bundle(_) => panic!("nested bundle"),
            })
            .collect()
    }

    #[test]
    fn bundles_decode_as_osc_in_order() {
        let mut buf = Vec::new();
        encode_vmc(&frame(), ForwardNames::Pascal, &mut buf);
        let messages = messages(&buf);
        let addrs: Vec<&str> = messages.iter().map(|m| m.addr.as_str()).collect();
        assert_eq!(
            addrs,
            [
                "/VMC/Ext/Blend/Val",
                "/VMC/Ext/Blend/Val",
                "/VMC/Ext/Bone/Pos",
                "/VMC/Ext/Blend/Apply"
            ],
            "the NaN channel is left out"
        );
        assert_eq!(
            messages[0].args,
            [
                rosc::OscType::String("EyeBlinkLeft".into()),
                rosc::OscType::Float(0.25)
            ]
        );
        assert_eq!(messages[1].args[0], rosc::OscType::String("JawOpen".into()));
        assert_eq!(messages[2].args.len(), 8);
        assert!(messages[3].args.is_empty());
    }

    #[test]
    fn the_decoder_reads_back_the_same_frame_in_either_spelling() {
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut original = frame();
        original.set(Channel::TongueOut, 1.0033);
        original.left_eye = Some(Quat::from_rotation_y(0.3));
        original.right_eye = Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
        original.sender_time = Some(12.5);
        for names in [ForwardNames::Pascal, ForwardNames::Camel] {
            let mut buf = Vec::new();
            encode_vmc(&original, names, &mut buf);
            let mut decoder = Decoder::new();
            let mut got = Vec::new();
            decoder.decode(&buf, from, Instant::now(), |f| got.push(*f));
            assert_eq!(got.len(), 1);
            let back = got[0];
            assert_eq!(back.protocol, Protocol::Vmc);
            assert_eq!(back.get(Channel::EyeBlinkLeft), Some(0.25));
            assert_eq!(back.get(Channel::JawOpen), Some(0.5));
            assert_eq!(back.get(Channel::TongueOut), Some(1.0033));
            assert_eq!(back.get(Channel::MouthSmileRight), None);
            assert!(back.head.unwrap().dot(original.head.unwrap()).abs() > 1.0 - 1e-5);
            assert!(back.left_eye.unwrap().dot(original.left_eye.unwrap()) > 1.0 - 1e-5);
            assert_eq!(back.right_eye, None, "a NaN rotation is not sent");
            assert_eq!(back.sender_time, Some(12.5));
        }
    }

    #[test]
    fn camel_names_stay_camel() {
        let mut buf = Vec::new();
        encode_vmc(&frame(), ForwardNames::Camel, &mut buf);
        assert!(buf.windows(12).any(|w| w == b"eyeBlinkLeft"));
        assert!(!buf.windows(12).any(|w| w == b"EyeBlinkLeft"));
    }

    #[test]
    fn an_empty_frame_is_a_bare_apply() {
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let frame = FaceFrame::empty(Protocol::Vmc, from, Instant::now());
        let mut buf = Vec::new();
        encode_vmc(&frame, ForwardNames::Camel, &mut buf);
        assert_eq!(messages(&buf).len(), 1);
        let mut decoder = Decoder::new();
        let mut frames = 0;
        decoder.decode(&buf, from, Instant::now(), |f| {
            frames += 1;
            assert!(f.present.is_empty());
        });
        assert_eq!(frames, 1);
    }
}
