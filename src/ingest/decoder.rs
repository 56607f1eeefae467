//! The pure OSC decoder: datagrams in, committed `FaceFrame`s out, with bounded per-sender state.
//!
//! One [`Decoder`] understands VMC and Face Cap on the same socket. It never touches a socket, so
//! tests feed it bytes directly. Plain datagrams (bundles of `f`/`i`/`s` messages, what phones
//! send) are read in place and decoding them allocates nothing; any other datagram is decoded
//! by rosc, which allocates.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use rosc::OscPacket;
use tracing::{debug, trace, warn};

use super::axes::{self, BadRotation};
use super::facecap::{self, FaceCapMessage};
use super::names::NameCache;
use super::osc::{self, Message, Parsed};
use super::stats::{RateLimiter, Stats};
use super::vmc::{self, Bone, VmcMessage};
use crate::arkit::{ChannelMask, FaceFrame, Protocol, TrackingFlag};

/// Largest datagram decoded (64 KiB); larger ones are counted as oversized and dropped. A UDP
/// payload cannot exceed this, so only direct callers of [`Decoder::decode`] can hit it.
pub const MAX_DATAGRAM: usize = 64 * 1024;

/// Most senders whose state is kept at once; the least recently used one is evicted.
pub const MAX_SENDERS: usize = 8;

/// Most `/VMC/Ext/Key` messages one datagram delivers; further ones are counted and dropped.
pub const MAX_KEYS: usize = 16;

/// A key a VMC sender pressed or released (`/VMC/Ext/Key`), its name copied inline so that
/// keeping it allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyEvent {
    /// The name's bytes; the first `len` are valid UTF-8.
    bytes: [u8; vmc::MAX_KEY_NAME],
    /// How many bytes of `bytes` the name has.
    len: u8,
    /// Whether the key went down.
    pub pressed: bool,
}

impl KeyEvent {
    /// The key `name` (at most [`vmc::MAX_KEY_NAME`] bytes, else `None`) went down or up.
    fn new(name: &str, pressed: bool) -> Option<KeyEvent> {
        let mut bytes = [0; vmc::MAX_KEY_NAME];
        bytes
            .get_mut(..name.len())?
            .copy_from_slice(name.as_bytes());
        Some(KeyEvent {
            bytes,
            len: u8::try_from(name.len()).ok()?,
            pressed,
        })
    }

    /// The key's name, in facewire's spelling where the sender's .NET name differs (`D1` is
    /// `1`), else as sent.
    pub fn name(&self) -> &str {
        // Copied whole from a `str`, so always valid.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// How a datagram was classified; every datagram gets exactly one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatagramClass {
    /// It decoded as OSC (whatever its messages were).
    Ok,
    /// It is not valid OSC.
    Malformed,
    /// It is larger than [`MAX_DATAGRAM`].
    Oversized,
}

/// What [`Decoder::decode`] made of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The datagram's class (also counted in [`Stats`]).
    pub class: DatagramClass,
    /// The protocol of the first VMC or Face Cap message in it, if any.
    pub protocol: Option<Protocol>,
    /// How many frames it committed.
    pub frames: u32,
    /// Whether this sender just started sending `protocol`: its first such datagram, the first
    /// after [`Decoder::sweep_silent`] reported it silent, or a change of protocol.
    pub newly_active: bool,
}

/// Accumulation state for one sender host.
#[derive(Debug, Clone)]
struct Sender {
    /// The sender's IP address (the key; see [`Decoder`] for why not the port).
    ip: IpAddr,
    /// The full address of its latest datagram.
    last_from: SocketAddr,
    /// Decoder clock at the last use, for least-recently-used eviction.
    last_use: u64,
    /// When it last sent a VMC or Face Cap message.
    last_active: Instant,
    /// The protocol last announced as active; `None` once reported silent.
    announced: Option<Protocol>,
    /// The VMC frame being accumulated until the next `Apply`.
    pending: FaceFrame,
    /// The tracking flag from the latest `/VMC/Ext/OK`; it persists across frames.
    tracking: TrackingFlag,
    /// The channels of its blendshape names, by position in its frame.
    names: NameCache,
}

/// One rate limiter per kind of problem, so one noisy kind cannot hide another.
#[derive(Debug, Clone, Default)]
struct Logs {
    /// Malformed datagrams.
    malformed: RateLimiter,
    /// Oversized datagrams.
    oversized: RateLimiter,
    /// Unknown addresses.
    unknown_address: RateLimiter,
    /// Bad arguments.
    bad_arguments: RateLimiter,
    /// Non-finite or degenerate values.
    bad_values: RateLimiter,
    /// Unknown blendshape names or indices.
    unknown_blendshape: RateLimiter,
}

/// Where one datagram's walk stands.
struct Walk<'f> {
    /// The datagram's sender.
    from: SocketAddr,
    /// When it was received.
    received: Instant,
    /// The sender's slot, looked up at the first VMC or Face Cap message.
    slot: Option<usize>,
    /// The Face Cap frame being built from this datagram, if it carries Face Cap messages.
    facecap: Option<FaceFrame>,
    /// The first protocol seen in the datagram.
    protocol: Option<Protocol>,
    /// Frames committed so far.
    frames: u32,
    /// Where committed frames go.
    on_frame: &'f mut dyn FnMut(&FaceFrame),
}

/// Decodes VMC and Face Cap datagrams into [`FaceFrame`]s.
///
/// State is kept per sender *host* (IP address, not port), for at most [`MAX_SENDERS`] hosts:
/// one-shot tools such as liblo's `oscsend`, and apps that reopen their socket, send each message
/// from a fresh ephemeral port, and a VMC frame's `Blend/Val`s must still meet its `Apply`. Two
/// senders on one host therefore share one accumulation state; they would fight over one avatar
/// anyway. Committed frames carry the full address of the datagram that completed them.
///
/// VMC: `Blend/Val`s accumulate and `Blend/Apply` commits exactly the channels set since the
/// previous `Apply` (a partial `Apply` gives a frame whose `present` mask has only those), with
/// the latest head and eye rotations and `/VMC/Ext/T` time received since then, and the sticky
/// tracking flag from `/VMC/Ext/OK`. Face Cap: every datagram carrying Face Cap messages commits
/// one frame at its end.
#[derive(Debug)]
pub struct Decoder {
    /// Sender slots; never more than [`MAX_SENDERS`], allocated once.
    senders: Vec<Sender>,
    /// Logical clock for least-recently-used eviction.
    clock: u64,
    /// Counters.
    stats: Stats,
    /// Log rate limiters.
    logs: Logs,
    /// The keys the latest datagram carried; never more than [`MAX_KEYS`], allocated once.
    keys: Vec<KeyEvent>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder with no sender state and zero counters.
    pub fn new() -> Decoder {
        Decoder {
            senders: Vec::with_capacity(MAX_SENDERS),
            clock: 0,
            stats: Stats::default(),
            logs: Logs::default(),
            keys: Vec::with_capacity(MAX_KEYS),
        }
    }

    /// The keys pressed and released in the latest datagram decoded (`/VMC/Ext/Key`), in order.
    pub fn keys(&self) -> &[KeyEvent] {
        &self.keys
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// How many senders have state now (at most [`MAX_SENDERS`]).
    pub fn sender_count(&self) -> usize {
        self.senders.len()
    }

    /// Decodes one datagram from `from`, received at `received`, and calls `on_frame` for every
    /// frame it commits. Never panics; every problem is counted in [`Stats`].
    pub fn decode(
        &mut self,
        datagram: &[u8],
        from: SocketAddr,
        received: Instant,
        mut on_frame: impl FnMut(&FaceFrame),
    ) -> Outcome {
        self.stats.datagrams += 1;
        self.stats.bytes += datagram.len() as u64;
        self.keys.clear();
        trace!(%from, len = datagram.len(), "datagram");
        let mut outcome = Outcome {
            class: DatagramClass::Ok,
            protocol: None,
            frames: 0,
            newly_active: false,
        };
        if datagram.len() > MAX_DATAGRAM {
            self.stats.oversized_datagrams += 1;
            if let Some(suppressed) = self.logs.oversized.allow(received) {
                warn!(%from, len = datagram.len(), suppressed, "dropped an oversized datagram");
            }
            outcome.class = DatagramClass::Oversized;
            return outcome;
        }
        let mut walk = Walk {
            from,
            received,
            slot: None,
            facecap: None,
            protocol: None,
            frames: 0,
            on_frame: &mut on_frame,
        };
        // Plain datagrams are read in place; the rest, and malformed ones, go through rosc.
        if osc::read_plain(datagram, |msg| self.message(&msg, &mut walk)).is_err() {
            match osc::decode_strict(datagram) {
                Ok(packet) => self.walk(&packet, &mut walk),
                Err(reason) => {
                    self.stats.malformed_datagrams += 1;
                    trace!(%from, %reason, "malformed datagram");
                    if let Some(suppressed) = self.logs.malformed.allow(received) {
                        warn!(
                            %from,
                            len = datagram.len(),
                            %reason,
                            suppressed,
                            "dropped a datagram that is not valid OSC"
                        );
                    }
                    outcome.class = DatagramClass::Malformed;
                    return outcome;
                }
            }
        }
        self.stats.ok_datagrams += 1;
        if let Some(frame) = walk.facecap.take() {
            (walk.on_frame)(&frame);
            self.stats.frames += 1;
            self.stats.facecap_frames += 1;
            walk.frames += 1;
            trace!(%from, present = frame.present.len(), "facecap frame");
        }

        outcome.protocol = walk.protocol;
        outcome.frames = walk.frames;
        if let (Some(protocol), Some(slot)) = (walk.protocol, walk.slot) {
            let sender = &mut self.senders[slot];
            sender.last_active = received;
            if sender.announced != Some(protocol) {
                sender.announced = Some(protocol);
                outcome.newly_active = true;
            }
        }
        outcome
    }

    /// Calls `on_silent(address, protocol, idle)` once for every active sender that has sent
    /// nothing for at least `after` by `now`, and marks it inactive: its next datagram reports
    /// [`Outcome::newly_active`] again.
    pub fn sweep_silent(
        &mut self,
        now: Instant,
        after: Duration,
        mut on_silent: impl FnMut(SocketAddr, Protocol, Duration),
    ) {
        for sender in &mut self.senders {
            let Some(protocol) = sender.announced else {
                continue;
            };
            let idle = now.saturating_duration_since(sender.last_active);
            if idle >= after {
                sender.announced = None;
                on_silent(sender.last_from, protocol, idle);
            }
        }
    }

    /// Walks a packet tree (its depth is bounded by [`osc::decode_strict`]).
    fn walk(&mut self, packet: &OscPacket, walk: &mut Walk<'_>) {
        match packet {
            OscPacket::Message(msg) => self.message(&Message::from(msg), walk),
            OscPacket::Bundle(bundle) => {
                for inner in &bundle.content {
                    self.walk(inner, walk);
                }
            }
        }
    }

    /// Classifies one message and applies it.
    fn message(&mut self, msg: &Message<'_>, walk: &mut Walk<'_>) {
        self.stats.messages += 1;
        match vmc::parse(msg) {
            Parsed::Message(message) => {
                if message == VmcMessage::Ignored {
                    self.stats.ignored_messages += 1;
                } else {
                    self.stats.vmc_messages += 1;
                }
                walk.protocol.get_or_insert(Protocol::Vmc);
                let slot = self.slot(walk);
                self.apply_vmc(slot, message, walk);
                return;
            }
            Parsed::BadArguments(reason) => return self.bad_arguments(msg, reason, walk),
            Parsed::Unknown => {}
        }
        match facecap::parse(msg) {
            Parsed::Message(message) => {
                self.stats.facecap_messages += 1;
                walk.protocol.get_or_insert(Protocol::FaceCap);
                self.slot(walk);
                self.apply_facecap(message, walk);
            }
            Parsed::BadArguments(reason) => self.bad_arguments(msg, reason, walk),
            Parsed::Unknown => {
                self.stats.unknown_address += 1;
                trace!(from = %walk.from, address = %msg.addr, "unknown OSC address");
                if let Some(suppressed) = self.logs.unknown_address.allow(walk.received) {
                    debug!(
                        from = %walk.from,
                        address = %msg.addr,
                        suppressed,
                        "ignored an OSC message with an unknown address"
                    );
                }
            }
        }
    }

    /// Counts and logs a message with a known address and bad arguments.
    fn bad_arguments(&mut self, msg: &Message<'_>, reason: &'static str, walk: &Walk<'_>) {
        self.stats.bad_arguments += 1;
        trace!(from = %walk.from, address = %msg.addr, reason, "bad OSC arguments");
        if let Some(suppressed) = self.logs.bad_arguments.allow(walk.received) {
            debug!(
                from = %walk.from,
                address = %msg.addr,
                reason,
                suppressed,
                "dropped an OSC message with bad arguments"
            );
        }
    }

    /// Counts and logs a NaN, infinite or degenerate value.
    fn bad_value(&mut self, what: &'static str, problem: BadRotation, walk: &Walk<'_>) {
        match problem {
            BadRotation::NonFinite => self.stats.non_finite_values += 1,
            BadRotation::Degenerate => self.stats.degenerate_rotations += 1,
        }
        trace!(from = %walk.from, what, ?problem, "dropped a value");
        if let Some(suppressed) = self.logs.bad_values.allow(walk.received) {
            debug!(from = %walk.from, what, ?problem, suppressed, "dropped a non-finite or degenerate value");
        }
    }

    /// Counts and logs a blendshape that is not one of the 52 ARKit channels.
    fn unknown_blendshape(&mut self, name: &str, index: Option<i32>, walk: &Walk<'_>) {
        self.stats.unknown_blendshapes += 1;
        trace!(from = %walk.from, name, index, "unknown blendshape");
        if let Some(suppressed) = self.logs.unknown_blendshape.allow(walk.received) {
            debug!(
                from = %walk.from,
                name,
                index,
                suppressed,
                "ignored a blendshape that is not an ARKit channel"
            );
        }
    }

    /// The slot of the walk's sender, created (evicting the least recently used sender when
    /// full) on first use in this datagram.
    fn slot(&mut self, walk: &mut Walk<'_>) -> usize {
        if let Some(slot) = walk.slot {
            return slot;
        }
        self.clock += 1;
        let ip = walk.from.ip().to_canonical();
        let slot = if let Some(slot) = self.senders.iter().position(|s| s.ip == ip) {
            slot
        } else {
            let fresh = Sender {
                ip,
                last_from: walk.from,
                last_use: self.clock,
                last_active: walk.received,
                announced: None,
                pending: FaceFrame::empty(Protocol::Vmc, walk.from, walk.received),
                tracking: TrackingFlag::Unknown,
                names: NameCache::default(),
            };
            if self.senders.len() < MAX_SENDERS {
                self.senders.push(fresh);
                self.senders.len() - 1
            } else {
                // The vector is never empty here, so there is a least recently used slot.
                let lru = (0..self.senders.len())
                    .min_by_key(|&i| self.senders[i].last_use)
                    .unwrap_or(0);
                let evicted = std::mem::replace(&mut self.senders[lru], fresh);
                self.stats.senders_evicted += 1;
                debug!(evicted = %evicted.last_from, by = %walk.from, "too many senders; dropped the least recent one's state");
                lru
            }
        };
        let sender = &mut self.senders[slot];
        sender.last_use = self.clock;
        sender.last_from = walk.from;
        walk.slot = Some(slot);
        slot
    }

    /// Applies one VMC message to the sender's accumulation state.
    fn apply_vmc(&mut self, slot: usize, message: VmcMessage<'_>, walk: &mut Walk<'_>) {
        match message {
            VmcMessage::BlendVal { name, value } => match self.senders[slot].names.channel(name) {
                Some(channel) if value.is_finite() => {
                    self.senders[slot].pending.set(channel, value);
                }
                Some(_) => self.bad_value("blendshape value", BadRotation::NonFinite, walk),
                None => self.unknown_blendshape(name, None, walk),
            },
            VmcMessage::BlendApply => {
                let sender = &mut self.senders[slot];
                sender.names.next_frame();
                let frame = &mut sender.pending;
                frame.received = walk.received;
                frame.from = walk.from;
                frame.protocol = Protocol::Vmc;
                frame.tracking = sender.tracking;
                (walk.on_frame)(frame);
                trace!(from = %walk.from, present = frame.present.len(), "vmc frame");
                frame.present = ChannelMask::EMPTY;
                frame.head = None;
                frame.left_eye = None;
                frame.right_eye = None;
                frame.sender_time = None;
                self.stats.frames += 1;
                self.stats.vmc_frames += 1;
                walk.frames += 1;
            }
            VmcMessage::BonePos { bone, rotation } => {
                if bone == Bone::Other {
                    return;
                }
                match axes::VMC.quat(rotation) {
                    Ok(q) => {
                        let pending = &mut self.senders[slot].pending;
                        match bone {
                            Bone::Head => pending.head = Some(q),
                            Bone::LeftEye => pending.left_eye = Some(q),
                            Bone::RightEye => pending.right_eye = Some(q),
                            Bone::Other => {}
                        }
                    }
                    Err(problem) => self.bad_value("bone rotation", problem, walk),
                }
            }
            VmcMessage::Ok { tracking } => {
                if let Some(tracking) = tracking {
                    self.senders[slot].tracking = tracking;
                }
            }
            VmcMessage::Time(t) => {
                if t.is_finite() {
                    self.senders[slot].pending.sender_time = Some(f64::from(t));
                } else {
                    self.bad_value("sender time", BadRotation::NonFinite, walk);
                }
            }
            VmcMessage::Key { pressed, name } => {
                match KeyEvent::new(name, pressed).filter(|_| self.keys.len() < MAX_KEYS) {
                    Some(key) => self.keys.push(key),
                    None => {
                        trace!(from = %walk.from, name, "dropped a key beyond the datagram's limit")
                    }
                }
            }
            VmcMessage::Ignored => {}
        }
    }

    /// Applies one Face Cap message to the datagram's frame.
    fn apply_facecap(&mut self, message: FaceCapMessage, walk: &mut Walk<'_>) {
        let rotation = match message {
            FaceCapMessage::Weight { index, value } => {
                match facecap::channel(index) {
                    Some(channel) if value.is_finite() => {
                        frame_of(walk).set(channel, value);
                    }
                    Some(_) => self.bad_value("blendshape value", BadRotation::NonFinite, walk),
                    None => self.unknown_blendshape("/W", Some(index), walk),
                }
                // Make sure the datagram commits a frame even when every value was dropped.
                frame_of(walk);
                return;
            }
            FaceCapMessage::HeadPosition => {
                frame_of(walk);
                return;
            }
            FaceCapMessage::HeadEuler([pitch, yaw, roll]) => {
                (Bone::Head, axes::FACECAP.euler_degrees(pitch, yaw, roll))
            }
            FaceCapMessage::HeadQuat(q) => (Bone::Head, axes::FACECAP.quat(q)),
            FaceCapMessage::LeftEye([pitch, yaw]) => {
                (Bone::LeftEye, axes::FACECAP.euler_degrees(pitch, yaw, 0.0))
            }
            FaceCapMessage::RightEye([pitch, yaw]) => {
                (Bone::RightEye, axes::FACECAP.euler_degrees(pitch, yaw, 0.0))
            }
        };
        let frame = frame_of(walk);
        match rotation {
            (Bone::Head, Ok(q)) => frame.head = Some(q),
            (Bone::LeftEye, Ok(q)) => frame.left_eye = Some(q),
            (Bone::RightEye, Ok(q)) => frame.right_eye = Some(q),
            (Bone::Other, Ok(_)) => {}
            (_, Err(problem)) => self.bad_value("face cap rotation", problem, walk),
        }
    }
}

/// The datagram's Face Cap frame, created on first use.
fn frame_of<'a>(walk: &'a mut Walk<'_>) -> &'a mut FaceFrame {
    let (from, received) = (walk.from, walk.received);
    walk.facecap
        .get_or_insert_with(|| FaceFrame::empty(Protocol::FaceCap, from, received))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Channel;
    use glam::{Quat, Vec3};
    use rosc::{OscBundle, OscMessage, OscTime, OscType};

    fn msg(addr: &str, args: Vec<OscType>) -> OscPacket {
        OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args,
        })
    }

    fn val(name: &str, value: f32) -> OscPacket {
        msg(
            "/VMC/Ext/Blend/Val",
            vec![OscType::String(name.to_string()), OscType::Float(value)],
        )
    }

    fn apply() -> OscPacket {
        msg("/VMC/Ext/Blend/Apply", vec![])
    }

    fn bone(name: &str, q: Quat) -> OscPacket {
        let mut args = vec![OscType::String(name.to_string())];
        args.extend([0.0, 1.5, 0.0].map(OscType::Float));
        args.extend(q.to_array().map(OscType::Float));
        msg("/VMC/Ext/Bone/Pos", args)
    }

    fn w(index: i32, value: f32) -> OscPacket {
        msg("/W", vec![OscType::Int(index), OscType::Float(value)])
    }

    fn floats(addr: &str, values: &[f32]) -> OscPacket {
        msg(addr, values.iter().map(|&v| OscType::Float(v)).collect())
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

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const PHONE: &str = "192.168.1.20:50123";

    /// Feeds one packet and returns the frames it committed.
    fn feed(decoder: &mut Decoder, packet: &OscPacket) -> Vec<FaceFrame> {
        feed_from(decoder, packet, PHONE)
    }

    fn feed_from(decoder: &mut Decoder, packet: &OscPacket, from: &str) -> Vec<FaceFrame> {
        let mut frames = Vec::new();
        let outcome = decoder.decode(&encode(packet), addr(from), Instant::now(), |f| {
            frames.push(*f)
        });
        assert_eq!(outcome.class, DatagramClass::Ok);
        assert_eq!(outcome.frames as usize, frames.len());
        assert!(decoder.stats().is_consistent(), "{:?}", decoder.stats());
        frames
    }

    fn close(a: Quat, b: Quat) -> bool {
        a.dot(b).abs() > 1.0 - 1e-5
    }

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    /// `#bundle` (time tag 1) holding `/VMC/Ext/Blend/Val ,sf "JawOpen" 0.25` and
    /// `/VMC/Ext/Blend/Apply ,`, encoded by hand from the OSC 1.0 spec.
    const GOLDEN_VMC_BUNDLE: &str = "
        23 62 75 6e 64 6c 65 00  00 00 00 00 00 00 00 01
        00 00 00 24
        2f 56 4d 43 2f 45 78 74  2f 42 6c 65 6e 64 2f 56  61 6c 00 00
        2c 73 66 00  4a 61 77 4f 70 65 6e 00  3e 80 00 00
        00 00 00 1c
        2f 56 4d 43 2f 45 78 74  2f 42 6c 65 6e 64 2f 41  70 70 6c 79 00 00 00 00
        2c 00 00 00";

    #[test]
    fn golden_vmc_bundle_decodes_to_one_frame() {
        let bytes = hex(GOLDEN_VMC_BUNDLE);
        // The hand encoding agrees with rosc's encoder.
        assert_eq!(bytes, encode(&bundle(vec![val("JawOpen", 0.25), apply()])));
        let mut decoder = Decoder::new();
        let mut frames = Vec::new();
        let received = Instant::now();
        let outcome = decoder.decode(&bytes, addr(PHONE), received, |f| frames.push(*f));
        assert_eq!(
            outcome,
            Outcome {
                class: DatagramClass::Ok,
                protocol: Some(Protocol::Vmc),
                frames: 1,
                newly_active: true,
            }
        );
        let [frame] = frames[..] else {
            panic!("{frames:?}")
        };
        assert_eq!(frame.get(Channel::JawOpen), Some(0.25));
        assert_eq!(frame.present.len(), 1);
        assert_eq!(frame.protocol, Protocol::Vmc);
        assert_eq!(frame.from, addr(PHONE));
        assert_eq!(frame.received, received);
        assert_eq!(frame.tracking, TrackingFlag::Unknown);
        assert_eq!(frame.head, None);
        let stats = decoder.stats();
        assert_eq!(
            (stats.datagrams, stats.ok_datagrams, stats.messages),
            (1, 1, 2)
        );
        assert_eq!(
            (stats.vmc_messages, stats.frames, stats.vmc_frames),
            (2, 1, 1)
        );
    }

    #[test]
    fn every_name_dialect_is_accepted() {
        type Dialect = fn(Channel) -> String;
        let dialects: [(&str, Dialect); 5] = [
            ("camelCase", |c| c.name().to_string()),
            ("PascalCase", |c| c.pascal_name()),
            ("UPPERCASE", |c| c.name().to_uppercase()),
            ("lowercase", |c| c.name().to_lowercase()),
            ("ARKit raw", |c| {
                let name = c.name();
                if let Some(stem) = name.strip_suffix("Left") {
                    format!("{stem}_L")
                } else if let Some(stem) = name.strip_suffix("Right") {
                    format!("{stem}_R")
                } else {
                    name.to_string()
                }
            }),
        ];
        for (dialect, spell) in dialects {
            let mut decoder = Decoder::new();
            let mut content: Vec<_> = Channel::ALL
                .iter()
                .map(|&c| val(&spell(c), c.index() as f32 / 100.0))
                .collect();
            content.push(apply());
            let frames = feed(&mut decoder, &bundle(content));
            assert_eq!(frames.len(), 1, "{dialect}");
            assert_eq!(frames[0].present, ChannelMask::ALL, "{dialect}");
            for c in Channel::ALL {
                assert_eq!(
                    frames[0].get(c),
                    Some(c.index() as f32 / 100.0),
                    "{dialect} {c}"
                );
            }
            assert_eq!(decoder.stats().unknown_blendshapes, 0, "{dialect}");
        }
    }

    #[test]
    fn vrm_presets_are_ignored_and_counted() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                val("A", 1.0),
                val("Blink", 1.0),
                val("Blink_L", 1.0),
                val("EyeBlinkLeft", 0.5),
                apply(),
            ]),
        );
        assert_eq!(frames[0].present.len(), 1);
        assert_eq!(frames[0].get(Channel::EyeBlinkLeft), Some(0.5));
        assert_eq!(decoder.stats().unknown_blendshapes, 3);
    }

    #[test]
    fn values_are_not_clamped() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![val("jawOpen", 1.25), val("mouthClose", -0.5), apply()]),
        );
        assert_eq!(frames[0].get(Channel::JawOpen), Some(1.25));
        assert_eq!(frames[0].get(Channel::MouthClose), Some(-0.5));
    }

    #[test]
    fn a_partial_apply_carries_only_its_names() {
        let mut decoder = Decoder::new();
        let all: Vec<_> = Channel::ALL
            .iter()
            .map(|c| val(c.name(), 0.5))
            .chain([apply()])
            .collect();
        assert_eq!(
            feed(&mut decoder, &bundle(all))[0].present,
            ChannelMask::ALL
        );
        let frames = feed(
            &mut decoder,
            &bundle(vec![val("jawOpen", 0.9), val("eyeBlink_R", 0.1), apply()]),
        );
        let frame = frames[0];
        assert_eq!(frame.present.len(), 2);
        assert_eq!(frame.get(Channel::JawOpen), Some(0.9));
        assert_eq!(frame.get(Channel::EyeBlinkRight), Some(0.1));
        assert_eq!(frame.get(Channel::EyeBlinkLeft), None);
        // An Apply with nothing accumulated commits an empty frame.
        let frames = feed(&mut decoder, &apply());
        assert!(frames[0].present.is_empty());
    }

    #[test]
    fn val_without_apply_commits_nothing_until_apply() {
        let mut decoder = Decoder::new();
        assert!(feed(&mut decoder, &bundle(vec![val("jawOpen", 0.3)])).is_empty());
        assert!(feed(&mut decoder, &val("mouthClose", 0.2)).is_empty());
        assert_eq!(decoder.stats().frames, 0);
        // The values wait for the Apply, across datagrams.
        let frames = feed(&mut decoder, &apply());
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].get(Channel::JawOpen), Some(0.3));
        assert_eq!(frames[0].get(Channel::MouthClose), Some(0.2));
    }

    #[test]
    fn nested_bundles_are_walked_in_order() {
        let mut decoder = Decoder::new();
        let packet = bundle(vec![
            bundle(vec![
                val("jawOpen", 0.1),
                bundle(vec![val("tongueOut", 0.2)]),
            ]),
            apply(),
            bundle(vec![val("jawOpen", 0.7), apply()]),
        ]);
        let frames = feed(&mut decoder, &packet);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].get(Channel::JawOpen), Some(0.1));
        assert_eq!(frames[0].get(Channel::TongueOut), Some(0.2));
        assert_eq!(frames[1].get(Channel::JawOpen), Some(0.7));
        assert_eq!(frames[1].present.len(), 1);
    }

    #[test]
    fn head_and_eye_bones_are_mirrored_out_of_unity() {
        let mut decoder = Decoder::new();
        // Unity: the head turned 30° towards +X, the avatar's right.
        let unity_head = Quat::from_rotation_y(30f32.to_radians());
        let unity_eye = Quat::from_rotation_x(-10f32.to_radians());
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                bone("Hips", Quat::from_rotation_z(1.0)),
                bone("Head", unity_head),
                bone("LeftEye", unity_eye),
                bone("RightEye", unity_eye * 2.0),
                apply(),
            ]),
        );
        let frame = frames[0];
        let head = frame.head.unwrap();
        // Ours: the avatar's right is -X.
        assert!((head * Vec3::Z).x < -0.4);
        assert!(close(head, Quat::from_rotation_y(-30f32.to_radians())));
        assert!(close(frame.left_eye.unwrap(), unity_eye));
        assert!(close(frame.right_eye.unwrap(), unity_eye), "normalised");
        // Poses go into the next frame only.
        assert_eq!(feed(&mut decoder, &apply())[0].head, None);
        // The latest pose before the Apply wins.
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                bone("Head", unity_head),
                bone("Head", Quat::IDENTITY),
                apply(),
            ]),
        );
        assert!(close(frames[0].head.unwrap(), Quat::IDENTITY));
    }

    #[test]
    fn ok_tracking_flag_is_sticky() {
        let mut decoder = Decoder::new();
        let ok = |args: &[i32]| {
            msg(
                "/VMC/Ext/OK",
                args.iter().map(|&i| OscType::Int(i)).collect(),
            )
        };
        let frames = feed(&mut decoder, &bundle(vec![ok(&[1, 3, 0, 0]), apply()]));
        assert_eq!(frames[0].tracking, TrackingFlag::Lost);
        // Older senders without the 4th argument leave the flag alone.
        let frames = feed(&mut decoder, &bundle(vec![ok(&[1]), apply()]));
        assert_eq!(frames[0].tracking, TrackingFlag::Lost);
        let frames = feed(&mut decoder, &bundle(vec![ok(&[1, 3, 0, 1]), apply()]));
        assert_eq!(frames[0].tracking, TrackingFlag::Tracked);
        let frames = feed(&mut decoder, &apply());
        assert_eq!(frames[0].tracking, TrackingFlag::Tracked);
    }

    #[test]
    fn time_gives_sender_time_for_the_next_frame() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![floats("/VMC/Ext/T", &[12.5]), apply()]),
        );
        assert_eq!(frames[0].sender_time, Some(12.5));
        assert_eq!(feed(&mut decoder, &apply())[0].sender_time, None);
    }

    #[test]
    fn facecap_weights_use_face_caps_index_order() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                w(13, 0.7),
                w(24, 0.4),
                w(0, 0.1),
                w(52, 1.0),
                w(-3, 1.0),
            ]),
        );
        let [frame] = frames[..] else {
            panic!("{frames:?}")
        };
        assert_eq!(frame.protocol, Protocol::FaceCap);
        assert_eq!(frame.get(Channel::EyeBlinkLeft), Some(0.7));
        assert_eq!(frame.get(Channel::JawOpen), Some(0.4));
        assert_eq!(frame.get(Channel::BrowInnerUp), Some(0.1));
        assert_eq!(frame.present.len(), 3);
        let stats = decoder.stats();
        assert_eq!(stats.unknown_blendshapes, 2);
        assert_eq!((stats.facecap_messages, stats.facecap_frames), (5, 1));
        // One frame per datagram: a second datagram is a second frame with only its own values.
        let frames = feed(&mut decoder, &w(24, 0.5));
        assert_eq!(frames[0].present.len(), 1);
    }

    #[test]
    fn facecap_rotations() {
        let mut decoder = Decoder::new();
        let q = Quat::from_rotation_x(0.3) * Quat::from_rotation_y(0.2);
        let mut q_args = q.to_array();
        q_args.iter_mut().for_each(|v| *v *= 3.0);
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                floats("/HRQ", &q_args),
                floats("/HT", &[0.0, 0.1, 0.4]),
                floats("/ELR", &[10.0, 20.0]),
                floats("/ERR", &[-10.0, 5.0]),
            ]),
        );
        let frame = frames[0];
        assert!(close(frame.head.unwrap(), q), "kept as sent, normalised");
        let deg = f32::to_radians;
        assert!(close(
            frame.left_eye.unwrap(),
            Quat::from_rotation_y(deg(20.0)) * Quat::from_rotation_x(deg(10.0))
        ));
        assert!(close(
            frame.right_eye.unwrap(),
            Quat::from_rotation_y(deg(5.0)) * Quat::from_rotation_x(deg(-10.0))
        ));
        assert!(frame.present.is_empty());

        let frames = feed(&mut decoder, &floats("/HR", &[10.0, 20.0, 30.0]));
        let expected = Quat::from_rotation_y(deg(20.0))
            * Quat::from_rotation_x(deg(10.0))
            * Quat::from_rotation_z(deg(30.0));
        assert!(close(frames[0].head.unwrap(), expected));
        assert_eq!(frames[0].left_eye, None);
    }

    #[test]
    fn non_finite_values_are_dropped_and_counted() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                val("jawOpen", f32::NAN),
                val("mouthClose", f32::INFINITY),
                val("tongueOut", 0.5),
                floats("/VMC/Ext/T", &[f32::NEG_INFINITY]),
                bone("Head", Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)),
                bone("LeftEye", Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
                apply(),
            ]),
        );
        let frame = frames[0];
        assert_eq!(frame.present.len(), 1);
        assert_eq!(frame.get(Channel::TongueOut), Some(0.5));
        assert_eq!(
            (frame.sender_time, frame.head, frame.left_eye),
            (None, None, None)
        );
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                w(24, f32::NAN),
                floats("/HRQ", &[0.0, f32::INFINITY, 0.0, 1.0]),
                floats("/ELR", &[f32::NAN, 0.0]),
            ]),
        );
        assert!(frames[0].present.is_empty());
        assert_eq!((frames[0].head, frames[0].left_eye), (None, None));
        let stats = decoder.stats();
        assert_eq!(stats.non_finite_values, 7);
        assert_eq!(stats.degenerate_rotations, 1);
        assert_eq!(stats.bad_arguments, 0);
    }

    fn key(active: i32, name: &str) -> OscPacket {
        msg(
            "/VMC/Ext/Key",
            vec![
                OscType::Int(active),
                OscType::String(name.to_string()),
                OscType::Int(0),
            ],
        )
    }

    #[test]
    fn keys_are_kept_per_datagram_and_bounded() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                key(1, "F1"),
                val("JawOpen", 0.5),
                apply(),
                key(0, "D3"),
            ]),
        );
        assert_eq!(frames.len(), 1);
        let keys: Vec<_> = decoder
            .keys()
            .iter()
            .map(|k| (k.name(), k.pressed))
            .collect();
        assert_eq!(keys, [("F1", true), ("3", false)]);
        assert_eq!(decoder.stats().vmc_messages, 4);
        assert_eq!(decoder.stats().bad_arguments, 0);
        // The next datagram starts afresh, and a flood keeps at most MAX_KEYS.
        let flood = bundle((0..100).map(|_| key(1, "Numpad1")).collect());
        feed(&mut decoder, &flood);
        assert_eq!(decoder.keys().len(), MAX_KEYS);
        assert_eq!(decoder.keys()[0].name(), "Numpad1");
        feed(&mut decoder, &apply());
        assert!(decoder.keys().is_empty());
        // A key with bad arguments is a bad message, not a malformed datagram.
        feed(&mut decoder, &msg("/VMC/Ext/Key", vec![OscType::Int(1)]));
        assert_eq!(decoder.stats().bad_arguments, 1);
        assert_eq!(decoder.stats().malformed_datagrams, 0);
        assert!(decoder.keys().is_empty());
    }

    #[test]
    fn unknown_and_ignored_addresses_are_counted() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                floats("/foo/bar", &[1.0]),
                floats("/avatar/parameters/JawOpen", &[1.0]),
                floats("/VMC/Ext/Root/Pos", &[1.0]),
                msg("/VMC/Ext/Cam", vec![]),
            ]),
        );
        assert!(frames.is_empty());
        let stats = decoder.stats();
        assert_eq!(stats.unknown_address, 2);
        assert_eq!(stats.ignored_messages, 2);
        assert_eq!(stats.messages, 4);
    }

    #[test]
    fn wrong_argument_types_are_counted_and_dropped() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                msg(
                    "/VMC/Ext/Blend/Val",
                    vec![OscType::String("jawOpen".into()), OscType::Double(0.5)],
                ),
                msg("/VMC/Ext/Blend/Val", vec![OscType::Float(0.5)]),
                msg("/VMC/Ext/Bone/Pos", vec![OscType::String("Head".into())]),
                msg("/VMC/Ext/OK", vec![OscType::Float(1.0)]),
                msg("/VMC/Ext/T", vec![OscType::Int(3)]),
                apply(),
            ]),
        );
        assert!(frames[0].present.is_empty());
        assert_eq!(frames[0].head, None);
        let frames = feed(
            &mut decoder,
            &bundle(vec![
                msg("/W", vec![OscType::Float(24.0), OscType::Float(0.5)]),
                floats("/HRQ", &[0.0, 0.0, 1.0]),
            ]),
        );
        // No Face Cap message was understood, so no Face Cap frame either.
        assert!(frames.is_empty());
        let stats = decoder.stats();
        assert_eq!(stats.bad_arguments, 7);
        assert_eq!(stats.vmc_messages, 1, "only the Apply");
    }

    #[test]
    fn bad_datagrams_are_classified() {
        let mut decoder = Decoder::new();
        let from = addr(PHONE);
        let now = Instant::now();
        let mut never = |_: &FaceFrame| panic!("no frame expected");
        let class = |d: &mut Decoder, bytes: &[u8], f: &mut dyn FnMut(&FaceFrame)| {
            d.decode(bytes, from, now, f).class
        };
        assert_eq!(
            class(&mut decoder, b"", &mut never),
            DatagramClass::Malformed
        );
        assert_eq!(
            class(&mut decoder, b"eyeBlink_L-12|jawOpen-3|", &mut never),
            DatagramClass::Malformed
        );
        let good = encode(&bundle(vec![val("jawOpen", 0.5), apply()]));
        assert_eq!(
            class(&mut decoder, &good[..good.len() - 4], &mut never),
            DatagramClass::Malformed
        );
        let huge = vec![0u8; MAX_DATAGRAM + 1];
        assert_eq!(
            class(&mut decoder, &huge, &mut never),
            DatagramClass::Oversized
        );
        let stats = decoder.stats();
        assert_eq!(
            (
                stats.datagrams,
                stats.malformed_datagrams,
                stats.oversized_datagrams
            ),
            (4, 3, 1)
        );
        assert!(stats.is_consistent());
        assert_eq!(decoder.sender_count(), 0, "bad datagrams create no state");
    }

    #[test]
    fn accumulation_follows_the_host_across_ports() {
        let mut decoder = Decoder::new();
        assert!(feed_from(&mut decoder, &val("jawOpen", 0.5), "127.0.0.1:40001").is_empty());
        assert!(feed_from(&mut decoder, &val("tongueOut", 0.2), "127.0.0.1:40002").is_empty());
        let frames = feed_from(&mut decoder, &apply(), "127.0.0.1:40003");
        assert_eq!(frames[0].present.len(), 2);
        assert_eq!(frames[0].from, addr("127.0.0.1:40003"));
        // A different host has its own state.
        assert!(feed_from(&mut decoder, &val("jawOpen", 0.5), "127.0.0.2:40001").is_empty());
        let frames = feed_from(&mut decoder, &apply(), "127.0.0.1:40003");
        assert!(frames[0].present.is_empty());
        // An IPv4-mapped IPv6 address (a dual-stack socket) is the same host.
        let frames = feed_from(&mut decoder, &apply(), "[::ffff:127.0.0.2]:40001");
        assert_eq!(frames[0].present.len(), 1);
    }

    #[test]
    fn sender_state_is_bounded_with_lru_eviction() {
        let mut decoder = Decoder::new();
        for host in 1..=MAX_SENDERS {
            feed_from(
                &mut decoder,
                &val("jawOpen", 0.5),
                &format!("10.0.0.{host}:9000"),
            );
        }
        // Host 1 is used again, so host 2 is now the least recently used.
        feed_from(&mut decoder, &val("tongueOut", 0.5), "10.0.0.1:9000");
        feed_from(&mut decoder, &val("jawOpen", 0.5), "10.0.0.99:9000");
        assert_eq!(decoder.sender_count(), MAX_SENDERS);
        assert_eq!(decoder.stats().senders_evicted, 1);
        let frames = feed_from(&mut decoder, &apply(), "10.0.0.1:9000");
        assert_eq!(frames[0].present.len(), 2, "host 1 kept its state");
        let frames = feed_from(&mut decoder, &apply(), "10.0.0.2:9000");
        assert!(frames[0].present.is_empty(), "host 2 lost its state");
        for host in 100..200 {
            feed_from(&mut decoder, &apply(), &format!("10.0.1.{host}:9000"));
        }
        assert_eq!(decoder.sender_count(), MAX_SENDERS);
    }

    #[test]
    fn activity_and_silence_are_reported_once() {
        let mut decoder = Decoder::new();
        let t0 = Instant::now();
        let from = addr(PHONE);
        let bytes = encode(&bundle(vec![val("jawOpen", 0.5), apply()]));
        let first = decoder.decode(&bytes, from, t0, |_| {});
        assert!(first.newly_active);
        let second = decoder.decode(&bytes, from, t0 + Duration::from_millis(10), |_| {});
        assert!(!second.newly_active);
        let mut silent = Vec::new();
        let after = Duration::from_secs(2);
        decoder.sweep_silent(t0 + Duration::from_secs(1), after, |a, p, _| {
            silent.push((a, p))
        });
        assert!(silent.is_empty());
        decoder.sweep_silent(t0 + Duration::from_secs(3), after, |a, p, _| {
            silent.push((a, p))
        });
        decoder.sweep_silent(t0 + Duration::from_secs(4), after, |a, p, _| {
            silent.push((a, p))
        });
        assert_eq!(silent, vec![(from, Protocol::Vmc)]);
        let resumed = decoder.decode(&bytes, from, t0 + Duration::from_secs(5), |_| {});
        assert!(resumed.newly_active);
        // A change of protocol is announced too.
        let facecap = decoder.decode(
            &encode(&w(1, 0.5)),
            from,
            t0 + Duration::from_secs(5),
            |_| {},
        );
        assert_eq!(facecap.protocol, Some(Protocol::FaceCap));
        assert!(facecap.newly_active);
        // Unknown-only datagrams are not activity.
        let unknown = decoder.decode(
            &encode(&floats("/foo", &[1.0])),
            addr("10.9.9.9:1"),
            t0,
            |_| {},
        );
        assert_eq!((unknown.protocol, unknown.newly_active), (None, false));
    }

    #[test]
    fn one_datagram_can_carry_both_protocols() {
        let mut decoder = Decoder::new();
        let frames = feed(
            &mut decoder,
            &bundle(vec![w(24, 0.3), val("jawOpen", 0.6), apply()]),
        );
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].protocol, Protocol::Vmc);
        assert_eq!(frames[0].get(Channel::JawOpen), Some(0.6));
        assert_eq!(frames[1].protocol, Protocol::FaceCap);
        assert_eq!(frames[1].get(Channel::JawOpen), Some(0.3));
    }
}
