//! OSC plumbing shared by the protocol parsers: strict datagram decoding and typed arguments.
//!
//! Datagrams of bundles and `f`/`i`/`s` messages (what phone senders send) are read in place by
//! [`read_plain`], without allocating; anything else goes through rosc ([`decode_strict`]).

use rosc::{OscError, OscMessage, OscPacket, OscType};

/// Deepest bundle nesting accepted. Real senders nest at most once; the limit keeps both our walk
/// and rosc's recursive parser far from the stack limit on hostile input.
pub const MAX_BUNDLE_DEPTH: usize = 8;

/// The OSC bundle tag, NUL included.
const BUNDLE_TAG: &[u8; 8] = b"#bundle\0";

/// Why a datagram is not valid OSC.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Malformed {
    /// The datagram has no bytes.
    #[error("empty datagram")]
    Empty,
    /// A bundle is shorter than its tag and time tag.
    #[error("bundle shorter than its header")]
    ShortBundle,
    /// A bundle element's size field is zero, not a multiple of 4, or runs past its bundle.
    #[error("bundle element size does not fit its bundle")]
    BadElementSize,
    /// Bundles nest deeper than [`MAX_BUNDLE_DEPTH`].
    #[error("bundles nested deeper than {MAX_BUNDLE_DEPTH}")]
    TooDeep,
    /// rosc rejected the bytes.
    #[error("not OSC: {0}")]
    Osc(OscError),
    /// Bytes remain after the packet.
    #[error("{0} bytes after the OSC packet")]
    Trailing(usize),
    /// A bundle element failed to decode; rosc stops a bundle at its first bad element silently.
    #[error("a bundle element is not a valid OSC packet")]
    BadElement,
}

/// Decodes one datagram strictly: the bundle framing must tile each bundle exactly, nesting is
/// bounded, every element must decode and no bytes may remain.
///
/// rosc alone is lenient in two ways that would let corrupt datagrams through half-read: a bundle
/// stops at its first undecodable element without an error, and an element's unread tail is
/// ignored. The framing pre-check and the element count close both.
pub(crate) fn decode_strict(datagram: &[u8]) -> Result<OscPacket, Malformed> {
    if datagram.is_empty() {
        return Err(Malformed::Empty);
    }
    let expected = scan(datagram, 0)?;
    let (rest, packet) = rosc::decoder::decode_udp(datagram).map_err(Malformed::Osc)?;
    if !rest.is_empty() {
        return Err(Malformed::Trailing(rest.len()));
    }
    if count_packets(&packet) != expected {
        return Err(Malformed::BadElement);
    }
    Ok(packet)
}

/// Checks the bundle framing of `bytes` without allocating and returns how many packets
/// (bundles and messages) it holds. Messages are left to rosc.
fn scan(bytes: &[u8], depth: usize) -> Result<usize, Malformed> {
    if !bytes.starts_with(BUNDLE_TAG) {
        return Ok(1);
    }
    if depth >= MAX_BUNDLE_DEPTH {
        return Err(Malformed::TooDeep);
    }
    let mut rest = bytes.get(16..).ok_or(Malformed::ShortBundle)?;
    let mut packets = 1;
    while !rest.is_empty() {
        let (size, body) = rest
            .split_first_chunk::<4>()
            .ok_or(Malformed::BadElementSize)?;
        let size =
            usize::try_from(u32::from_be_bytes(*size)).map_err(|_| Malformed::BadElementSize)?;
        if size == 0 || size % 4 != 0 || size > body.len() {
            return Err(Malformed::BadElementSize);
        }
        let (element, after) = body.split_at(size);
        packets += scan(element, depth + 1)?;
        rest = after;
    }
    Ok(packets)
}

/// Number of packets (bundles and messages) in a decoded tree. The tree's depth is bounded by
/// [`scan`], so the recursion is too.
fn count_packets(packet: &OscPacket) -> usize {
    match packet {
        OscPacket::Message(_) => 1,
        OscPacket::Bundle(bundle) => 1 + bundle.content.iter().map(count_packets).sum::<usize>(),
    }
}

/// Why the plain reader handed a datagram to rosc: it holds something only rosc reads (another
/// argument type, a type tag string without its comma) or it is not valid OSC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a plain OSC datagram")]
pub(crate) struct NotPlain;

/// One argument of a message, borrowed from the datagram or from rosc's decoded message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Arg<'a> {
    /// `f`.
    Float(f32),
    /// `i`.
    Int(i32),
    /// `s`.
    Str(&'a str),
    /// Any other type.
    Other,
}

/// A message's arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Args<'a> {
    /// As rosc decoded them.
    Decoded(&'a [OscType]),
    /// As the plain reader found them: the type tags after the comma (each `f`, `i` or `s`) and
    /// the argument bytes, starting on a 4-byte boundary of the datagram, all checked.
    Plain {
        /// One tag per argument.
        tags: &'a [u8],
        /// The argument bytes.
        data: &'a [u8],
        /// The first argument when it is a string (a VMC name), as the checking pass read it,
        /// and the argument bytes after it: reading it again would check its UTF-8 again.
        first: Option<(&'a str, &'a [u8])>,
    },
}

impl<'a> Args<'a> {
    /// How many arguments there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Args::Decoded(args) => args.len(),
            Args::Plain { tags, .. } => tags.len(),
        }
    }

    /// The `index`th argument, if there is one.
    pub(crate) fn get(&self, index: usize) -> Option<Arg<'a>> {
        match *self {
            Args::Decoded(args) => args.get(index).map(|arg| match arg {
                OscType::Float(v) => Arg::Float(*v),
                OscType::Int(v) => Arg::Int(*v),
                OscType::String(v) => Arg::Str(v),
                _ => Arg::Other,
            }),
            Args::Plain {
                tags,
                mut data,
                first,
            } => {
                let tag = *tags.get(index)?;
                let mut skip = tags.get(..index)?;
                if let Some((name, after)) = first {
                    if index == 0 {
                        return Some(Arg::Str(name));
                    }
                    data = after;
                    skip = skip.get(1..)?;
                }
                // The arguments before it were checked when the message was read.
                for &before in skip {
                    data = skip_arg(before, data)?;
                }
                read_arg(tag, data).map(|(arg, _)| arg)
            }
        }
    }
}

/// One OSC message, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    /// The address.
    pub(crate) addr: &'a str,
    /// The arguments.
    pub(crate) args: Args<'a>,
}

impl<'a> From<&'a OscMessage> for Message<'a> {
    fn from(msg: &'a OscMessage) -> Message<'a> {
        Message {
            addr: &msg.addr,
            args: Args::Decoded(&msg.args),
        }
    }
}

/// Calls `on_message` for every message of `datagram`, in order, when the datagram is plain:
/// bundles (nested at most [`MAX_BUNDLE_DEPTH`] deep) and messages whose arguments are all `f`,
/// `i` or `s`, which is what phone senders send. Such a datagram is exactly one that
/// [`decode_strict`] accepts, with the same messages, and reading it allocates nothing. Any other
/// datagram gives [`NotPlain`] before `on_message` is called, and goes to [`decode_strict`].
pub(crate) fn read_plain<'a>(
    datagram: &'a [u8],
    mut on_message: impl FnMut(Message<'a>),
) -> Result<(), NotPlain> {
    if datagram.is_empty() {
        return Err(NotPlain);
    }
    // Check the whole datagram first: a malformed datagram must apply none of its messages. The
    // checking pass keeps the first KEPT messages it reads, so that a datagram of no more than
    // that is read once; a longer one is read again.
    let none = Message {
        addr: "",
        args: Args::Plain {
            tags: &[],
            data: &[],
            first: None,
        },
    };
    let mut kept = [none; KEPT];
    let mut count = 0;
    plain_packet(datagram, 0, true, &mut |message| {
        if let Some(slot) = kept.get_mut(count) {
            *slot = message;
        }
        count += 1;
    })?;
    match kept.get(..count) {
        Some(messages) => {
            messages.iter().for_each(|message| on_message(*message));
            Ok(())
        }
        None => plain_packet(datagram, 0, true, &mut on_message),
    }
}

/// How many messages [`read_plain`] keeps from its checking pass (a VMC frame has 54 to 60).
const KEPT: usize = 64;

/// Reads one packet (a bundle, or a message ending exactly at the end of `bytes` when `whole`).
/// `bytes` starts on a 4-byte boundary of the datagram.
fn plain_packet<'a>(
    bytes: &'a [u8],
    depth: usize,
    whole: bool,
    on_message: &mut impl FnMut(Message<'a>),
) -> Result<(), NotPlain> {
    if !bytes.starts_with(BUNDLE_TAG) {
        let (message, rest) = plain_message(bytes).ok_or(NotPlain)?;
        // rosc ignores what follows a message inside its bundle element; at the top level
        // `decode_strict` rejects it.
        if whole && !rest.is_empty() {
            return Err(NotPlain);
        }
        on_message(message);
        return Ok(());
    }
    if depth >= MAX_BUNDLE_DEPTH {
        return Err(NotPlain);
    }
    let mut rest = bytes.get(16..).ok_or(NotPlain)?;
    while !rest.is_empty() {
        let (size, body) = rest.split_first_chunk::<4>().ok_or(NotPlain)?;
        let size = usize::try_from(u32::from_be_bytes(*size)).map_err(|_| NotPlain)?;
        if size == 0 || size % 4 != 0 || size > body.len() {
            return Err(NotPlain);
        }
        let (element, after) = body.split_at(size);
        plain_packet(element, depth + 1, false, on_message)?;
        rest = after;
    }
    Ok(())
}

/// Reads a message at the start of `bytes` (on a 4-byte boundary of the datagram) as rosc does,
/// and returns it with the bytes after it; `None` when it is not plain or not valid.
fn plain_message(bytes: &[u8]) -> Option<(Message<'_>, &[u8])> {
    let (addr, rest) = read_string(bytes)?;
    if !addr.starts_with('/') {
        return None;
    }
    let (tags, data) = skip_string(rest)?;
    let tags = match tags {
        // rosc reads no arguments from an empty type tag string or a lone character (valid
        // UTF-8 when ASCII).
        [] => tags,
        [only] if only.is_ascii() => &[][..],
        [b',', tags @ ..] if tags.iter().all(|t| matches!(t, b'f' | b'i' | b's')) => tags,
        _ => return None,
    };
    let mut rest = data;
    let mut first = None;
    for (i, &tag) in tags.iter().enumerate() {
        let (arg, after) = read_arg(tag, rest)?;
        if let (0, Arg::Str(name)) = (i, arg) {
            first = Some((name, after));
        }
        rest = after;
    }
    Some((
        Message {
            addr,
            args: Args::Plain { tags, data, first },
        },
        rest,
    ))
}

/// Reads one `f`, `i` or `s` argument from the start of `bytes`; `None` for another tag or
/// too few bytes.
fn read_arg(tag: u8, bytes: &[u8]) -> Option<(Arg<'_>, &[u8])> {
    match tag {
        b'f' => {
            let (word, rest) = bytes.split_first_chunk::<4>()?;
            Some((Arg::Float(f32::from_be_bytes(*word)), rest))
        }
        b'i' => {
            let (word, rest) = bytes.split_first_chunk::<4>()?;
            Some((Arg::Int(i32::from_be_bytes(*word)), rest))
        }
        b's' => read_string(bytes).map(|(s, rest)| (Arg::Str(s), rest)),
        _ => None,
    }
}

/// Skips one argument already checked by [`read_arg`].
fn skip_arg(tag: u8, bytes: &[u8]) -> Option<&[u8]> {
    match tag {
        b's' => skip_string(bytes).map(|(_, rest)| rest),
        _ => bytes.get(4..),
    }
}

/// Reads an OSC string from the start of `bytes` (on a 4-byte boundary): UTF-8 up to a NUL, then
/// padding to the next boundary, whose bytes rosc does not check either.
fn read_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let (text, rest) = skip_string(bytes)?;
    Some((std::str::from_utf8(text).ok()?, rest))
}

/// The bytes of an OSC string at the start of `bytes`, unchecked, and the bytes after its
/// padding.
fn skip_string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    // The string and its padding fill whole 4-byte words, so the NUL is in the first word that
    // has a zero byte, and that word is whole.
    let mut start = 0;
    let mut words = bytes.chunks_exact(4);
    for word in &mut words {
        let w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        if w.wrapping_sub(0x0101_0101) & !w & 0x8080_8080 != 0 {
            let len = start + word.iter().position(|&b| b == 0)?;
            let (text, rest) = bytes.split_at_checked(start + 4)?;
            return Some((text.get(..len)?, rest));
        }
        start += 4;
    }
    None
}

/// What a protocol parser made of one message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Parsed<T> {
    /// A message of this protocol with well-typed arguments.
    Message(T),
    /// A message of this protocol with too few or wrongly typed arguments.
    BadArguments(&'static str),
    /// Not this protocol's address.
    Unknown,
}

/// The `index`th argument as an `f` float.
pub(crate) fn float(args: &Args<'_>, index: usize) -> Result<f32, &'static str> {
    match args.get(index) {
        Some(Arg::Float(v)) => Ok(v),
        Some(_) => Err("expected a float argument"),
        None => Err("too few arguments"),
    }
}

/// The `index`th argument as an `i` int32.
pub(crate) fn int(args: &Args<'_>, index: usize) -> Result<i32, &'static str> {
    match args.get(index) {
        Some(Arg::Int(v)) => Ok(v),
        Some(_) => Err("expected an int argument"),
        None => Err("too few arguments"),
    }
}

/// The `index`th argument as an `s` string.
pub(crate) fn string<'a>(args: &Args<'a>, index: usize) -> Result<&'a str, &'static str> {
    match args.get(index) {
        Some(Arg::Str(v)) => Ok(v),
        Some(_) => Err("expected a string argument"),
        None => Err("too few arguments"),
    }
}

/// `N` consecutive float arguments starting at `first`.
pub(crate) fn floats<const N: usize>(
    args: &Args<'_>,
    first: usize,
) -> Result<[f32; N], &'static str> {
    let mut out = [0.0; N];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = float(args, first + i)?;
    }
    Ok(out)
}

impl<T> From<Result<T, &'static str>> for Parsed<T> {
    fn from(result: Result<T, &'static str>) -> Parsed<T> {
        match result {
            Ok(message) => Parsed::Message(message),
            Err(reason) => Parsed::BadArguments(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosc::{OscBundle, OscMessage, OscTime};

    fn message(addr: &str) -> OscPacket {
        OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args: vec![OscType::Float(1.0)],
        })
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

    /// Every message of a packet rosc decoded, in order, as (address, arguments).
    fn rosc_messages(packet: &OscPacket, out: &mut Vec<(String, Vec<OscType>)>) {
        match packet {
            OscPacket::Message(m) => out.push((m.addr.clone(), m.args.clone())),
            OscPacket::Bundle(b) => b.content.iter().for_each(|p| rosc_messages(p, out)),
        }
    }

    /// Every message [`read_plain`] reads, in the same form; `None` when it hands the datagram on.
    fn plain_messages(datagram: &[u8]) -> Option<Vec<(String, Vec<OscType>)>> {
        let mut out = Vec::new();
        read_plain(datagram, |m| {
            let args = (0..m.args.len())
                .map(|i| match m.args.get(i) {
                    Some(Arg::Float(v)) => OscType::Float(v),
                    Some(Arg::Int(v)) => OscType::Int(v),
                    Some(Arg::Str(v)) => OscType::String(v.to_string()),
                    other => panic!("plain argument {i} of {}: {other:?}", m.addr),
                })
                .collect();
            out.push((m.addr.to_string(), args));
        })
        .ok()?;
        Some(out)
    }

    fn vmc_like() -> OscPacket {
        let s = |v: &str| OscType::String(v.into());
        bundle(vec![
            OscPacket::Message(OscMessage {
                addr: "/VMC/Ext/Blend/Val".into(),
                args: vec![s("JawOpen"), OscType::Float(0.5)],
            }),
            bundle(vec![OscPacket::Message(OscMessage {
                addr: "/VMC/Ext/Bone/Pos".into(),
                args: std::iter::once(s("Head"))
                    .chain((0..7).map(|i| OscType::Float(i as f32)))
                    .collect(),
            })]),
            OscPacket::Message(OscMessage {
                addr: "/VMC/Ext/OK".into(),
                args: vec![OscType::Int(1), OscType::Int(3), OscType::Int(0)],
            }),
            OscPacket::Message(OscMessage {
                addr: "/W".into(),
                args: vec![OscType::Int(24), OscType::Float(f32::NAN)],
            }),
            OscPacket::Message(OscMessage {
                addr: "/VMC/Ext/Blend/Apply".into(),
                args: vec![],
            }),
        ])
    }

    #[test]
    fn plain_datagrams_read_in_place_as_rosc_decodes_them() {
        for packet in [vmc_like(), message("/x"), bundle(vec![])] {
            let bytes = encode(&packet);
            let mut expected = Vec::new();
            rosc_messages(&packet, &mut expected);
            let plain = plain_messages(&bytes).expect("plain");
            // NaN arguments compare by their bits.
            assert_eq!(format!("{plain:?}"), format!("{expected:?}"));
        }
        // Other argument types, and malformed datagrams, are handed on to rosc.
        let double = OscPacket::Message(OscMessage {
            addr: "/x".into(),
            args: vec![OscType::Double(1.0)],
        });
        assert!(plain_messages(&encode(&double)).is_none());
        assert!(plain_messages(&[]).is_none());
        let mut bytes = encode(&message("/x"));
        bytes.extend_from_slice(&[0; 4]);
        assert!(plain_messages(&bytes).is_none());
    }

    /// Mutated datagrams: whenever the plain reader reads one, [`decode_strict`] accepts it too
    /// and finds the same messages.
    #[test]
    fn the_plain_reader_agrees_with_rosc_on_mutated_datagrams() {
        let seeds = [
            encode(&vmc_like()),
            encode(&bundle(vec![vmc_like(), message("/a")])),
            encode(&message("/VMC/Ext/T")),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut plain, mut handed_on) = (0, 0);
        for _ in 0..20_000 {
            let mut bytes = seeds[next() as usize % seeds.len()].clone();
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % bytes.len().max(1);
                match next() % 4 {
                    0 => bytes.truncate(at),
                    1 if at < bytes.len() => bytes[at] ^= 1 << (next() % 8),
                    2 if at < bytes.len() => bytes[at] = b"\0,sfidT/#"[next() as usize % 9],
                    _ => bytes.insert(at, next() as u8),
                }
            }
            let strict = decode_strict(&bytes);
            match plain_messages(&bytes) {
                Some(messages) => {
                    plain += 1;
                    let packet = strict.expect("rosc accepts what the plain reader reads");
                    let mut expected = Vec::new();
                    rosc_messages(&packet, &mut expected);
                    assert_eq!(format!("{messages:?}"), format!("{expected:?}"));
                }
                None => handed_on += 1,
            }
        }
        assert!(plain > 100 && handed_on > 100, "{plain} {handed_on}");
    }

    #[test]
    fn valid_packets_decode() {
        let nested = bundle(vec![
            message("/a"),
            bundle(vec![message("/b")]),
            message("/c"),
        ]);
        assert_eq!(decode_strict(&encode(&nested)).unwrap(), nested);
        let empty = bundle(vec![]);
        assert_eq!(decode_strict(&encode(&empty)).unwrap(), empty);
        assert_eq!(
            decode_strict(&encode(&message("/x"))).unwrap(),
            message("/x")
        );
    }

    #[test]
    fn framing_errors_are_caught() {
        assert!(matches!(decode_strict(&[]), Err(Malformed::Empty)));
        assert!(matches!(
            decode_strict(b"#bundle\0\0\0\0\0"),
            Err(Malformed::ShortBundle)
        ));
        let mut bytes = encode(&bundle(vec![message("/a"), message("/b")]));
        // Grow the first element's size field by 4 so the elements no longer tile the bundle.
        bytes[19] += 4;
        assert!(matches!(
            decode_strict(&bytes),
            Err(Malformed::BadElementSize)
        ));
        let bytes = encode(&bundle(vec![message("/a")]));
        assert!(matches!(
            decode_strict(&bytes[..bytes.len() - 4]),
            Err(Malformed::BadElementSize)
        ));
    }

    #[test]
    fn a_bad_element_inside_a_nested_bundle_is_caught() {
        let mut bytes = encode(&bundle(vec![bundle(vec![message("/a"), message("/b")])]));
        // Turn the second inner message's leading '/' into 'x': rosc would silently stop there.
        let pos = bytes.len() - 12;
        assert_eq!(bytes[pos], b'/');
        bytes[pos] = b'x';
        assert!(matches!(decode_strict(&bytes), Err(Malformed::BadElement)));
    }

    #[test]
    fn deep_nesting_is_rejected_without_recursing_into_it() {
        let mut packet = message("/deep");
        for _ in 0..MAX_BUNDLE_DEPTH {
            packet = bundle(vec![packet]);
        }
        assert!(decode_strict(&encode(&packet)).is_ok());
        let too_deep = bundle(vec![packet]);
        assert!(matches!(
            decode_strict(&encode(&too_deep)),
            Err(Malformed::TooDeep)
        ));
        // A datagram of nothing but nested bundle headers, as deep as 64 KiB allows.
        let mut bytes = Vec::new();
        const LEVELS: u32 = 3000;
        for level in 0..LEVELS {
            bytes.extend_from_slice(BUNDLE_TAG);
            bytes.extend_from_slice(&[0; 8]);
            if level + 1 < LEVELS {
                // The size of the next level: its header plus 20 bytes per level below it.
                let below = LEVELS - level - 2;
                bytes.extend_from_slice(&(16 + 20 * below).to_be_bytes());
            }
        }
        assert!(bytes.len() < 64 * 1024);
        assert!(matches!(decode_strict(&bytes), Err(Malformed::TooDeep)));
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = encode(&message("/x"));
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        assert!(decode_strict(&bytes).is_err());
    }

    #[test]
    fn typed_arguments() {
        let args = vec![
            OscType::String("Head".into()),
            OscType::Float(0.5),
            OscType::Int(3),
        ];
        let args = Args::Decoded(&args);
        assert_eq!(string(&args, 0), Ok("Head"));
        assert_eq!(float(&args, 1), Ok(0.5));
        assert_eq!(int(&args, 2), Ok(3));
        assert!(float(&args, 0).is_err());
        assert!(int(&args, 1).is_err());
        assert!(string(&args, 3).is_err());
        assert_eq!(floats::<1>(&args, 1), Ok([0.5]));
        assert!(floats::<2>(&args, 1).is_err());
    }
}
