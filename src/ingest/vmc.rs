//! VMC protocol messages (`/VMC/Ext/...`): addresses and arguments parsed into typed messages.
//!
//! See `shared/docs/protocols.md` §2. Like the reference receiver EVMC4U, surplus arguments are
//! ignored; too few or wrongly typed ones drop the message (EVMC4U throws instead).

use super::osc::{float, floats, int, string, Args, Message, Parsed};
use crate::arkit::TrackingFlag;

/// The OSC address prefix of the whole VMC namespace.
const PREFIX: &str = "/VMC/";

/// The humanoid bones facewire reads from `/VMC/Ext/Bone/Pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bone {
    /// `Head`.
    Head,
    /// `LeftEye` (the avatar's, hence the performer's, left).
    LeftEye,
    /// `RightEye`.
    RightEye,
    /// Any other bone: well formed, not used.
    Other,
}

impl Bone {
    /// Unity `HumanBodyBones` name to bone; ASCII case is ignored, as tolerant receivers do.
    fn parse(name: &str) -> Bone {
        if name.eq_ignore_ascii_case("Head") {
            Bone::Head
        } else if name.eq_ignore_ascii_case("LeftEye") {
            Bone::LeftEye
        } else if name.eq_ignore_ascii_case("RightEye") {
            Bone::RightEye
        } else {
            Bone::Other
        }
    }
}

/// One VMC message facewire understands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum VmcMessage<'a> {
    /// `/VMC/Ext/Blend/Val s f`: one blendshape clip value, accumulated until `Apply`.
    BlendVal {
        /// The clip name, in any dialect (or a VRM preset, which is not ours).
        name: &'a str,
        /// The value as sent (not clamped, possibly non-finite).
        value: f32,
    },
    /// `/VMC/Ext/Blend/Apply`: commit the values accumulated since the previous `Apply`.
    BlendApply,
    /// `/VMC/Ext/Bone/Pos s f×7`: a bone's local pose; only the rotation is kept.
    BonePos {
        /// Which bone.
        bone: Bone,
        /// The rotation `(x, y, z, w)` in Unity's frame, as sent.
        rotation: [f32; 4],
    },
    /// `/VMC/Ext/OK i [i i [i]]`: availability; the optional 4th argument is tracking status.
    Ok {
        /// The tracking status when the 4th argument is present.
        tracking: Option<TrackingFlag>,
    },
    /// `/VMC/Ext/T f`: the sender's relative time in seconds.
    Time(f32),
    /// `/VMC/Ext/Key i s i`: a key went down or up on the sender's side.
    Key {
        /// Whether it went down (`active == 1`).
        pressed: bool,
        /// Its name in facewire's spelling where the sender's .NET `Keys` name differs
        /// (`D1` is `1`), else as sent; at most [`MAX_KEY_NAME`] bytes.
        name: &'a str,
    },
    /// Any other `/VMC/...` address: part of the protocol, not used by facewire.
    Ignored,
}

/// Parses `msg` if its address is in the VMC namespace.
pub(crate) fn parse<'a>(msg: &Message<'a>) -> Parsed<VmcMessage<'a>> {
    let Some(rest) = msg.addr.strip_prefix(PREFIX) else {
        return Parsed::Unknown;
    };
    let args = &msg.args;
    match rest {
        "Ext/Blend/Val" => blend_val(args).into(),
        "Ext/Blend/Apply" => Parsed::Message(VmcMessage::BlendApply),
        "Ext/Bone/Pos" => bone_pos(args).into(),
        "Ext/OK" => ok(args).into(),
        "Ext/T" => float(args, 0).map(VmcMessage::Time).into(),
        "Ext/Key" => key(args).into(),
        _ => Parsed::Message(VmcMessage::Ignored),
    }
}

/// `/VMC/Ext/Blend/Val` arguments: `s` name, `f` value.
fn blend_val<'a>(args: &Args<'a>) -> Result<VmcMessage<'a>, &'static str> {
    Ok(VmcMessage::BlendVal {
        name: string(args, 0)?,
        value: float(args, 1)?,
    })
}

/// `/VMC/Ext/Bone/Pos` arguments: `s` bone, `f` px py pz qx qy qz qw.
fn bone_pos(args: &Args<'_>) -> Result<VmcMessage<'static>, &'static str> {
    let bone = Bone::parse(string(args, 0)?);
    // The position (arguments 1 to 3) is checked for type but not used.
    let [_, _, _, x, y, z, w] = floats::<7>(args, 1)?;
    Ok(VmcMessage::BonePos {
        bone,
        rotation: [x, y, z, w],
    })
}

/// `/VMC/Ext/OK` arguments: `i` loaded [`i` calibState `i` calibMode [`i` trackingStatus]].
fn ok(args: &Args<'_>) -> Result<VmcMessage<'static>, &'static str> {
    int(args, 0)?;
    // The optional arguments must still be ints when present.
    for i in 1..args.len().min(3) {
        int(args, i)?;
    }
    let tracking = if args.len() > 3 {
        Some(match int(args, 3)? {
            0 => TrackingFlag::Lost,
            1 => TrackingFlag::Tracked,
            _ => TrackingFlag::Unknown,
        })
    } else {
        None
    };
    Ok(VmcMessage::Ok { tracking })
}

/// Longest key name accepted from `/VMC/Ext/Key`, in bytes; .NET's `Keys` names are shorter.
pub(crate) const MAX_KEY_NAME: usize = 32;

/// `/VMC/Ext/Key` arguments: `i` active, `s` name, `i` keycode (checked, not used).
fn key<'a>(args: &Args<'a>) -> Result<VmcMessage<'a>, &'static str> {
    let active = int(args, 0)?;
    let name = string(args, 1)?;
    int(args, 2)?;
    if name.is_empty() || name.len() > MAX_KEY_NAME {
        return Err("key name empty or too long");
    }
    Ok(VmcMessage::Key {
        pressed: active == 1,
        name: dotnet_key(name),
    })
}

/// The key name facewire spells for a .NET `Keys` name (what VMC senders send) where the two
/// differ: `D0` to `D9` are the digits, `Next`/`Prior` the page keys, `Back` Backspace and the
/// `Oem` punctuation its symbol. Other names pass unchanged (`F1`, `A`, `NumPad1`, `Return`
/// already parse in any letter case).
pub(crate) fn dotnet_key(name: &str) -> &str {
    if let [b'D' | b'd', b'0'..=b'9'] = name.as_bytes() {
        // Two ASCII bytes, so the slice is on a character boundary.
        return &name[1..];
    }
    const ALIASES: [(&str, &str); 7] = [
        ("Next", "PageDown"),
        ("Prior", "PageUp"),
        ("Back", "Backspace"),
        ("Oemplus", "Equal"),
        ("OemMinus", "Minus"),
        ("Oemcomma", "Comma"),
        ("OemPeriod", "Period"),
    ];
    ALIASES
        .iter()
        .find(|(dotnet, _)| dotnet.eq_ignore_ascii_case(name))
        .map_or(name, |(_, ours)| ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosc::{OscMessage, OscType};

    /// [`super::parse`] of a message as rosc decodes it.
    fn parse(msg: &OscMessage) -> Parsed<VmcMessage<'_>> {
        super::parse(&Message::from(msg))
    }

    fn msg(addr: &str, args: Vec<OscType>) -> OscMessage {
        OscMessage {
            addr: addr.to_string(),
            args,
        }
    }

    fn s(v: &str) -> OscType {
        OscType::String(v.to_string())
    }

    #[test]
    fn blend_messages() {
        let m = msg(
            "/VMC/Ext/Blend/Val",
            vec![s("JawOpen"), OscType::Float(0.5), OscType::Int(9)],
        );
        assert_eq!(
            parse(&m),
            Parsed::Message(VmcMessage::BlendVal {
                name: "JawOpen",
                value: 0.5
            })
        );
        let m = msg(
            "/VMC/Ext/Blend/Val",
            vec![s("JawOpen"), OscType::Double(0.5)],
        );
        assert!(matches!(parse(&m), Parsed::BadArguments(_)));
        let m = msg("/VMC/Ext/Blend/Val", vec![s("JawOpen")]);
        assert!(matches!(parse(&m), Parsed::BadArguments(_)));
        let m = msg("/VMC/Ext/Blend/Apply", vec![]);
        assert_eq!(parse(&m), Parsed::Message(VmcMessage::BlendApply));
    }

    #[test]
    fn bone_messages() {
        let mut args = vec![s("head")];
        args.extend((1..=7).map(|i| OscType::Float(i as f32)));
        assert_eq!(
            parse(&msg("/VMC/Ext/Bone/Pos", args.clone())),
            Parsed::Message(VmcMessage::BonePos {
                bone: Bone::Head,
                rotation: [4.0, 5.0, 6.0, 7.0]
            })
        );
        args[0] = s("Hips");
        assert!(matches!(
            parse(&msg("/VMC/Ext/Bone/Pos", args.clone())),
            Parsed::Message(VmcMessage::BonePos {
                bone: Bone::Other,
                ..
            })
        ));
        args.pop();
        assert!(matches!(
            parse(&msg("/VMC/Ext/Bone/Pos", args)),
            Parsed::BadArguments(_)
        ));
    }

    #[test]
    fn ok_messages() {
        let i = OscType::Int;
        // Some(tracking) for a well-formed OK, None for bad arguments.
        let ok = |args| match parse(&msg("/VMC/Ext/OK", args)) {
            Parsed::Message(VmcMessage::Ok { tracking }) => Some(tracking),
            Parsed::BadArguments(_) => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(ok(vec![i(1)]), Some(None));
        assert_eq!(ok(vec![i(1), i(3), i(0)]), Some(None));
        assert_eq!(
            ok(vec![i(1), i(3), i(0), i(1)]),
            Some(Some(TrackingFlag::Tracked))
        );
        assert_eq!(
            ok(vec![i(1), i(3), i(0), i(0), i(7)]),
            Some(Some(TrackingFlag::Lost))
        );
        assert_eq!(
            ok(vec![i(1), i(3), i(0), i(2)]),
            Some(Some(TrackingFlag::Unknown))
        );
        assert_eq!(ok(vec![]), None);
        assert_eq!(ok(vec![i(1), OscType::Float(3.0)]), None);
        assert_eq!(ok(vec![i(1), i(3), i(0), s("x")]), None);
    }

    #[test]
    fn other_addresses() {
        assert_eq!(
            parse(&msg("/VMC/Ext/T", vec![OscType::Float(1.5)])),
            Parsed::Message(VmcMessage::Time(1.5))
        );
        assert_eq!(
            parse(&msg("/VMC/Ext/Root/Pos", vec![])),
            Parsed::Message(VmcMessage::Ignored)
        );
        assert_eq!(parse(&msg("/vmc/Ext/T", vec![])), Parsed::Unknown);
        assert_eq!(parse(&msg("/W", vec![])), Parsed::Unknown);
    }

    #[test]
    fn key_messages_map_dotnet_names() {
        let i = OscType::Int;
        // Some((pressed, name)) for a key, None for bad arguments.
        let key = |args| match parse(&msg("/VMC/Ext/Key", args)) {
            Parsed::Message(VmcMessage::Key { pressed, name }) => Some((pressed, name.to_string())),
            Parsed::BadArguments(_) => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(key(vec![i(1), s("F1"), i(112)]), Some((true, "F1".into())));
        assert_eq!(key(vec![i(0), s("D1"), i(49)]), Some((false, "1".into())));
        assert_eq!(dotnet_key("NumPad3"), "NumPad3");
        assert_eq!(dotnet_key("Next"), "PageDown");
        assert_eq!(dotnet_key("oemminus"), "Minus");
        assert_eq!(dotnet_key("D"), "D");
        assert_eq!(dotnet_key("D12"), "D12");
        // Hostile or short argument lists are bad arguments, never a panic.
        assert_eq!(key(vec![i(1), s("F1")]), None);
        assert_eq!(key(vec![s("F1"), i(1), i(0)]), None);
        assert_eq!(key(vec![i(1), s(""), i(0)]), None);
        let long = "X".repeat(MAX_KEY_NAME + 1);
        assert_eq!(key(vec![i(1), s(&long), i(0)]), None);
        // Multi-byte names are passed on whole.
        assert_eq!(
            key(vec![i(1), s("D\u{e9}"), i(0)]),
            Some((true, "D\u{e9}".into()))
        );
    }
}
