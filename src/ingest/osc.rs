//! OSC plumbing shared by the protocol parsers: strict datagram decoding and typed arguments.

use rosc::{OscError, OscPacket, OscType};

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
pub(crate) fn float(args: &[OscType], index: usize) -> Result<f32, &'static str> {
    match args.get(index) {
        Some(OscType::Float(v)) => Ok(*v),
        Some(_) => Err("expected a float argument"),
        None => Err("too few arguments"),
    }
}

/// The `index`th argument as an `i` int32.
pub(crate) fn int(args: &[OscType], index: usize) -> Result<i32, &'static str> {
    match args.get(index) {
        Some(OscType::Int(v)) => Ok(*v),
        Some(_) => Err("expected an int argument"),
        None => Err("too few arguments"),
    }
}

/// The `index`th argument as an `s` string.
pub(crate) fn string(args: &[OscType], index: usize) -> Result<&str, &'static str> {
    match args.get(index) {
        Some(OscType::String(v)) => Ok(v),
        Some(_) => Err("expected a string argument"),
        None => Err("too few arguments"),
    }
}

/// `N` consecutive float arguments starting at `first`.
pub(crate) fn floats<const N: usize>(
    args: &[OscType],
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
