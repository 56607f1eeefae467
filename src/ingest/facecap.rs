//! Face Cap's plain OSC messages (`/W`, `/HR`, `/HRQ`, `/ELR`, `/ERR`, `/HT`) parsed into typed
//! messages.
//!
//! See `shared/docs/protocols.md` §6. Face Cap sends blendshapes by index in its own order
//! ([`FACECAP_ORDER`]) and has no explicit frame boundary; the decoder commits one frame per
//! datagram.

use super::osc::{float, floats, int, Args, Message, Parsed};
use crate::arkit::{Channel, FACECAP_ORDER};

/// One Face Cap message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum FaceCapMessage {
    /// `/W i f`: blendshape `index` (Face Cap order) has `value`.
    Weight {
        /// The index as sent; [`channel`] maps it.
        index: i32,
        /// The value as sent (not clamped, possibly non-finite).
        value: f32,
    },
    /// `/HR f f f`: head rotation as Euler degrees `(x = pitch, y = yaw, z = roll)`.
    HeadEuler([f32; 3]),
    /// `/HRQ f f f f`: head rotation as a quaternion `(x, y, z, w)`.
    HeadQuat([f32; 4]),
    /// `/ELR f f`: left eye rotation as Euler degrees `(x = pitch, y = yaw)`.
    LeftEye([f32; 2]),
    /// `/ERR f f`: right eye rotation as Euler degrees `(x = pitch, y = yaw)`.
    RightEye([f32; 2]),
    /// `/HT f f f`: head position; understood, not used.
    HeadPosition,
}

/// Parses `msg` if its address is one of Face Cap's.
pub(crate) fn parse(msg: &Message<'_>) -> Parsed<FaceCapMessage> {
    let args = &msg.args;
    match msg.addr {
        "/W" => weight(args).into(),
        "/HR" => floats::<3>(args, 0).map(FaceCapMessage::HeadEuler).into(),
        "/HRQ" => floats::<4>(args, 0).map(FaceCapMessage::HeadQuat).into(),
        "/ELR" => floats::<2>(args, 0).map(FaceCapMessage::LeftEye).into(),
        "/ERR" => floats::<2>(args, 0).map(FaceCapMessage::RightEye).into(),
        "/HT" => floats::<3>(args, 0)
            .map(|_| FaceCapMessage::HeadPosition)
            .into(),
        _ => Parsed::Unknown,
    }
}

/// `/W` arguments: `i` index, `f` value.
fn weight(args: &Args<'_>) -> Result<FaceCapMessage, &'static str> {
    Ok(FaceCapMessage::Weight {
        index: int(args, 0)?,
        value: float(args, 1)?,
    })
}

/// The channel a `/W` index carries, if the index is in range.
pub(crate) fn channel(index: i32) -> Option<Channel> {
    usize::try_from(index)
        .ok()
        .and_then(|i| FACECAP_ORDER.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosc::{OscMessage, OscType};

    /// [`super::parse`] of a message as rosc decodes it.
    fn parse(msg: &OscMessage) -> Parsed<FaceCapMessage> {
        super::parse(&Message::from(msg))
    }

    fn msg(addr: &str, args: Vec<OscType>) -> OscMessage {
        OscMessage {
            addr: addr.to_string(),
            args,
        }
    }

    #[test]
    fn index_order_is_face_caps() {
        assert_eq!(channel(0), Some(Channel::BrowInnerUp));
        assert_eq!(channel(13), Some(Channel::EyeBlinkLeft));
        assert_eq!(channel(24), Some(Channel::JawOpen));
        assert_eq!(channel(51), Some(Channel::TongueOut));
        assert_eq!(channel(52), None);
        assert_eq!(channel(-1), None);
        assert_eq!(channel(i32::MIN), None);
    }

    #[test]
    fn messages_and_arguments() {
        let f = OscType::Float;
        assert_eq!(
            parse(&msg("/W", vec![OscType::Int(24), f(0.5)])),
            Parsed::Message(FaceCapMessage::Weight {
                index: 24,
                value: 0.5
            })
        );
        assert!(matches!(
            parse(&msg("/W", vec![f(24.0), f(0.5)])),
            Parsed::BadArguments(_)
        ));
        assert_eq!(
            parse(&msg("/HRQ", vec![f(0.0), f(0.0), f(0.0), f(1.0), f(9.0)])),
            Parsed::Message(FaceCapMessage::HeadQuat([0.0, 0.0, 0.0, 1.0]))
        );
        assert!(matches!(
            parse(&msg("/HRQ", vec![f(0.0), f(0.0), f(1.0)])),
            Parsed::BadArguments(_)
        ));
        assert_eq!(
            parse(&msg("/HR", vec![f(1.0), f(2.0), f(3.0)])),
            Parsed::Message(FaceCapMessage::HeadEuler([1.0, 2.0, 3.0]))
        );
        assert_eq!(
            parse(&msg("/ELR", vec![f(1.0), f(2.0)])),
            Parsed::Message(FaceCapMessage::LeftEye([1.0, 2.0]))
        );
        assert_eq!(
            parse(&msg("/ERR", vec![f(1.0), f(2.0)])),
            Parsed::Message(FaceCapMessage::RightEye([1.0, 2.0]))
        );
        assert_eq!(
            parse(&msg("/HT", vec![f(1.0), f(2.0), f(3.0)])),
            Parsed::Message(FaceCapMessage::HeadPosition)
        );
        assert_eq!(parse(&msg("/w", vec![])), Parsed::Unknown);
        assert_eq!(parse(&msg("/VMC/Ext/T", vec![])), Parsed::Unknown);
    }
}
