//! Encoding a `FaceFrame` as one VMC OSC bundle, so frames without datagrams (CSV rows) can be
//! sent over UDP to any VMC receiver, facewire included.

use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};

use crate::arkit::FaceFrame;
use crate::ingest::axes;

/// The OSC time tag that means "immediately".
const IMMEDIATELY: OscTime = OscTime {
    seconds: 0,
    fractional: 1,
};

/// Encodes `frame` as one VMC bundle: a `/VMC/Ext/Blend/Val` with the camelCase name for each
/// present channel, a `/VMC/Ext/Bone/Pos` for `Head`, `LeftEye` and `RightEye` where the frame
/// has that rotation, `/VMC/Ext/T` with the frame's sender time where it has one, and a final
/// `/VMC/Ext/Blend/Apply`.
///
/// Rotations are converted back into VMC's (Unity's) axes with the inverse of [`axes::VMC`], so
/// facewire's decoder turns the bundle back into the same rotations. Non-finite values are sent
/// as they are (the decoder drops them).
pub fn vmc_datagram(frame: &FaceFrame) -> Result<Vec<u8>, rosc::OscError> {
    let mut content = Vec::with_capacity(frame.present.len() + 5);
    for channel in frame.present.iter() {
        content.push(message(
            "/VMC/Ext/Blend/Val",
            vec![
                OscType::String(channel.name().to_string()),
                OscType::Float(frame.weights[channel.index()]),
            ],
        ));
    }
    let bones = [
        ("Head", frame.head),
        ("LeftEye", frame.left_eye),
        ("RightEye", frame.right_eye),
    ];
    for (bone, rotation) in bones {
        let Some(q) = rotation else {
            continue;
        };
        let [x, y, z, w] = q.to_array();
        let [sx, sy, sz] = axes::VMC.quat;
        // The map multiplies each component by ±1, so dividing by the same factor inverts it.
        let wire = [x / sx, y / sy, z / sz, w];
        let mut args = vec![OscType::String(bone.to_string())];
        // VMC carries a local position too; facewire ignores it, so it is sent as the origin.
        args.extend([0.0f32; 3].map(OscType::Float));
        args.extend(wire.map(OscType::Float));
        content.push(message("/VMC/Ext/Bone/Pos", args));
    }
    if let Some(time) = frame.sender_time {
        // VMC's time is an f32 by definition.
        content.push(message("/VMC/Ext/T", vec![OscType::Float(time as f32)]));
    }
    content.push(message("/VMC/Ext/Blend/Apply", Vec::new()));
    rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
        timetag: IMMEDIATELY,
        content,
    }))
}

/// One OSC message packet.
fn message(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.to_string(),
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::ingest::Decoder;
    use glam::Quat;
    use std::net::SocketAddr;
    use std::time::Instant;

    #[test]
    fn the_decoder_reads_back_the_same_frame() {
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let now = Instant::now();
        let mut frame = FaceFrame::empty(Protocol::LiveLinkFace, from, now);
        frame.set(Channel::JawOpen, 0.625);
        frame.set(Channel::EyeBlinkLeft, 0.1);
        frame.set(Channel::TongueOut, 1.0033);
        frame.head = Some(Quat::from_euler(glam::EulerRot::YXZ, 0.4, -0.2, 0.1));
        frame.left_eye = Some(Quat::from_rotation_y(0.3));
        frame.sender_time = Some(12.5);
        let bytes = vmc_datagram(&frame).unwrap();

        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        decoder.decode(&bytes, from, now, |f| out.push(*f));
        assert_eq!(out.len(), 1);
        let back = out[0];
        assert_eq!(back.protocol, Protocol::Vmc);
        assert_eq!(back.present, frame.present);
        for channel in frame.present.iter() {
            assert_eq!(back.get(channel), frame.get(channel), "{channel}");
        }
        let head = back.head.unwrap();
        assert!(head.dot(frame.head.unwrap()) > 1.0 - 1e-6, "{head}");
        assert!(back.left_eye.unwrap().dot(frame.left_eye.unwrap()) > 1.0 - 1e-6);
        assert_eq!(back.right_eye, None);
        assert_eq!(back.sender_time, Some(12.5));
    }

    #[test]
    fn an_empty_frame_is_a_bare_apply() {
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let frame = FaceFrame::empty(Protocol::Vmc, from, Instant::now());
        let bytes = vmc_datagram(&frame).unwrap();
        let mut decoder = Decoder::new();
        let mut frames = 0;
        decoder.decode(&bytes, from, Instant::now(), |f| {
            frames += 1;
            assert!(f.present.is_empty());
        });
        assert_eq!(frames, 1);
    }
}
