//! The 52 ARKit blendshape channels (canonical order, every spelling dialect) and `FaceFrame`.
//!
//! Canonical order is Unreal's `EARFaceBlendShape` order, which is also the Live Link Face index
//! order. Names are parsed case-insensitively in every dialect phone apps use: camelCase
//! (`eyeBlinkLeft`), PascalCase (`EyeBlinkLeft`), ARKit raw values (`eyeBlink_L`) and any case
//! of those.

use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use glam::Quat;

/// Number of ARKit blendshape channels.
pub const COUNT: usize = 52;

macro_rules! channels {
    ($($variant:ident = $name:literal,)*) => {
        /// One of ARKit's 52 face blendshape coefficients, in canonical order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Channel {
            $(
                #[doc = concat!("`", $name, "`.")]
                $variant,
            )*
        }

        impl Channel {
            /// Every channel, in canonical order.
            pub const ALL: [Channel; COUNT] = [$(Channel::$variant,)*];

            /// The canonical camelCase name (`eyeBlinkLeft`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Channel::$variant => $name,)*
                }
            }
        }
    };
}

channels! {
    EyeBlinkLeft = "eyeBlinkLeft",
    EyeLookDownLeft = "eyeLookDownLeft",
    EyeLookInLeft = "eyeLookInLeft",
    EyeLookOutLeft = "eyeLookOutLeft",
    EyeLookUpLeft = "eyeLookUpLeft",
    EyeSquintLeft = "eyeSquintLeft",
    EyeWideLeft = "eyeWideLeft",
    EyeBlinkRight = "eyeBlinkRight",
    EyeLookDownRight = "eyeLookDownRight",
    EyeLookInRight = "eyeLookInRight",
    EyeLookOutRight = "eyeLookOutRight",
    EyeLookUpRight = "eyeLookUpRight",
    EyeSquintRight = "eyeSquintRight",
    EyeWideRight = "eyeWideRight",
    JawForward = "jawForward",
    JawLeft = "jawLeft",
    JawRight = "jawRight",
    JawOpen = "jawOpen",
    MouthClose = "mouthClose",
    MouthFunnel = "mouthFunnel",
    MouthPucker = "mouthPucker",
    MouthLeft = "mouthLeft",
    MouthRight = "mouthRight",
    MouthSmileLeft = "mouthSmileLeft",
    MouthSmileRight = "mouthSmileRight",
    MouthFrownLeft = "mouthFrownLeft",
    MouthFrownRight = "mouthFrownRight",
    MouthDimpleLeft = "mouthDimpleLeft",
    MouthDimpleRight = "mouthDimpleRight",
    MouthStretchLeft = "mouthStretchLeft",
    MouthStretchRight = "mouthStretchRight",
    MouthRollLower = "mouthRollLower",
    MouthRollUpper = "mouthRollUpper",
    MouthShrugLower = "mouthShrugLower",
    MouthShrugUpper = "mouthShrugUpper",
    MouthPressLeft = "mouthPressLeft",
    MouthPressRight = "mouthPressRight",
    MouthLowerDownLeft = "mouthLowerDownLeft",
    MouthLowerDownRight = "mouthLowerDownRight",
    MouthUpperUpLeft = "mouthUpperUpLeft",
    MouthUpperUpRight = "mouthUpperUpRight",
    BrowDownLeft = "browDownLeft",
    BrowDownRight = "browDownRight",
    BrowInnerUp = "browInnerUp",
    BrowOuterUpLeft = "browOuterUpLeft",
    BrowOuterUpRight = "browOuterUpRight",
    CheekPuff = "cheekPuff",
    CheekSquintLeft = "cheekSquintLeft",
    CheekSquintRight = "cheekSquintRight",
    NoseSneerLeft = "noseSneerLeft",
    NoseSneerRight = "noseSneerRight",
    TongueOut = "tongueOut",
}

/// The order Face Cap's `/W` messages (and Visage, and the PyLiveLinkFace OSC bridge) use:
/// `FACECAP_ORDER[i]` is the channel that index `i` carries.
pub const FACECAP_ORDER: [Channel; COUNT] = {
    use Channel::*;
    [
        BrowInnerUp,
        BrowDownLeft,
        BrowDownRight,
        BrowOuterUpLeft,
        BrowOuterUpRight,
        EyeLookUpLeft,
        EyeLookUpRight,
        EyeLookDownLeft,
        EyeLookDownRight,
        EyeLookInLeft,
        EyeLookInRight,
        EyeLookOutLeft,
        EyeLookOutRight,
        EyeBlinkLeft,
        EyeBlinkRight,
        EyeSquintLeft,
        EyeSquintRight,
        EyeWideLeft,
        EyeWideRight,
        CheekPuff,
        CheekSquintLeft,
        CheekSquintRight,
        NoseSneerLeft,
        NoseSneerRight,
        JawOpen,
        JawForward,
        JawLeft,
        JawRight,
        MouthFunnel,
        MouthPucker,
        MouthLeft,
        MouthRight,
        MouthRollUpper,
        MouthRollLower,
        MouthShrugUpper,
        MouthShrugLower,
        MouthClose,
        MouthSmileLeft,
        MouthSmileRight,
        MouthFrownLeft,
        MouthFrownRight,
        MouthDimpleLeft,
        MouthDimpleRight,
        MouthUpperUpLeft,
        MouthUpperUpRight,
        MouthLowerDownLeft,
        MouthLowerDownRight,
        MouthPressLeft,
        MouthPressRight,
        MouthStretchLeft,
        MouthStretchRight,
        TongueOut,
    ]
};

/// Longest normalised name we compare (`mouthlowerdownright` is 19 bytes).
const KEY_CAP: usize = 32;

/// Normalises a name into `buf`: ASCII lowercase, `_L`/`_R` (or `.L`/`.R`) suffixes expanded to
/// `left`/`right`, separators dropped. Returns its length and its [`name_hash`] slot, or `None`
/// when the name cannot be one of ours.
fn normalise(name: &str, buf: &mut [u8; KEY_CAP]) -> Option<(usize, usize)> {
    let bytes = name.trim().as_bytes();
    let (stem, side): (&[u8], &[u8]) = match bytes {
        [rest @ .., b'_' | b'.', b'l' | b'L'] => (rest, b"left"),
        [rest @ .., b'_' | b'.', b'r' | b'R'] => (rest, b"right"),
        _ => (bytes, b""),
    };
    let mut len = 0;
    let mut hash = NameHash::new();
    for part in [stem, side] {
        for &b in part {
            if matches!(b, b'_' | b'-' | b' ' | b'.') {
                continue;
            }
            if !b.is_ascii_alphanumeric() {
                return None;
            }
            let b = b.to_ascii_lowercase();
            *buf.get_mut(len)? = b;
            len += 1;
            hash = hash.add(b);
        }
    }
    Some((len, hash.slot()))
}

impl Channel {
    /// Position in canonical order (0..52).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The channel at canonical position `index`, if any.
    pub fn from_index(index: usize) -> Option<Channel> {
        Channel::ALL.get(index).copied()
    }

    /// The PascalCase name (`EyeBlinkLeft`) used by Unreal, VTube Studio on iOS and perfect-sync
    /// VRM clips.
    pub fn pascal_name(self) -> String {
        let name = self.name();
        let mut out = String::with_capacity(name.len());
        let mut chars = name.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
        }
        out.extend(chars);
        out
    }

    /// Parses a channel name in any dialect: camelCase, PascalCase, ARKit raw value (`eyeBlink_L`),
    /// any letter case, with `_`, `-` or `.` separators. Allocation-free; unknown names give `None`.
    pub fn parse(name: &str) -> Option<Channel> {
        let mut buf = [0u8; KEY_CAP];
        let (len, mut slot) = normalise(name, &mut buf)?;
        let key = buf.get(..len)?;
        // The table has empty slots, so the probe ends at one; the bound is only a guard.
        for _ in 0..NAME_SLOTS {
            // An empty slot holds an index past the channels: not a name of ours.
            let channel = *Channel::ALL.get(usize::from(NAME_TABLE[slot]))?;
            if channel.name().as_bytes().eq_ignore_ascii_case(key) {
                return Some(channel);
            }
            slot = (slot + 1) & (NAME_SLOTS - 1);
        }
        None
    }

    /// Whether this channel has a mirror partner (`eyeBlinkLeft` ↔ `eyeBlinkRight`). Directional
    /// channels (`jawLeft`, `mouthRight`) are mirrors of each other too.
    pub fn mirror(self) -> Channel {
        let name = self.name();
        let partner = if let Some(stem) = name.strip_suffix("Left") {
            format!("{stem}Right")
        } else if let Some(stem) = name.strip_suffix("Right") {
            format!("{stem}Left")
        } else {
            return self;
        };
        Channel::parse(&partner).unwrap_or(self)
    }
}

/// Slots of [`NAME_TABLE`]: a power of two well above [`COUNT`], so a probe rarely goes past its
/// first slot.
const NAME_SLOTS: usize = 256;

/// Marks an empty slot of [`NAME_TABLE`].
const NO_NAME: u8 = u8::MAX;

/// FNV-1a over bytes, folded to a slot of [`NAME_TABLE`].
#[derive(Clone, Copy)]
struct NameHash(u32);

impl NameHash {
    const fn new() -> NameHash {
        NameHash(0x811c_9dc5)
    }

    const fn add(self, byte: u8) -> NameHash {
        NameHash((self.0 ^ byte as u32).wrapping_mul(0x0100_0193))
    }

    const fn slot(self) -> usize {
        (self.0 ^ (self.0 >> 16)) as usize & (NAME_SLOTS - 1)
    }
}

/// FNV-1a of `key`'s ASCII-lowercased bytes, folded to a slot of [`NAME_TABLE`].
const fn name_hash(key: &[u8]) -> usize {
    let mut hash = NameHash::new();
    let mut i = 0;
    while i < key.len() {
        hash = hash.add(key[i].to_ascii_lowercase());
        i += 1;
    }
    hash.slot()
}

/// The channels' canonical names in an open-addressing hash table (linear probing), built at
/// compile time: the canonical index of the channel whose lowercased name hashes there, or
/// [`NO_NAME`].
const NAME_TABLE: [u8; NAME_SLOTS] = {
    let mut table = [NO_NAME; NAME_SLOTS];
    let mut i = 0;
    while i < COUNT {
        let mut slot = name_hash(Channel::ALL[i].name().as_bytes());
        while table[slot] != NO_NAME {
            slot = (slot + 1) & (NAME_SLOTS - 1);
        }
        table[slot] = i as u8;
        i += 1;
    }
    table
};

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of channels, one bit per canonical index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ChannelMask(u64);

impl ChannelMask {
    /// No channel.
    pub const EMPTY: ChannelMask = ChannelMask(0);
    /// All 52 channels.
    pub const ALL: ChannelMask = ChannelMask((1u64 << COUNT) - 1);

    /// Adds `channel`.
    pub fn insert(&mut self, channel: Channel) {
        self.0 |= 1 << channel.index();
    }

    /// Whether `channel` is in the set.
    pub fn contains(self, channel: Channel) -> bool {
        self.0 & (1 << channel.index()) != 0
    }

    /// Number of channels in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The union of both sets.
    pub fn union(self, other: ChannelMask) -> ChannelMask {
        ChannelMask(self.0 | other.0)
    }

    /// The channels in the set, in canonical order.
    pub fn iter(self) -> impl Iterator<Item = Channel> {
        Channel::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

/// Which wire protocol a frame came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The VMC protocol (OSC `/VMC/Ext/...`).
    Vmc,
    /// Face Cap's plain OSC (`/W`, `/HR`, ...).
    FaceCap,
    /// Epic's Live Link Face (UDP packets or its CSV export).
    LiveLinkFace,
    /// iFacialMocap's UDP text frames.
    IFacialMocap,
    /// Facemotion3d's UDP text frames.
    Facemotion3d,
    /// VTube Studio's phone protocol (also MeowFace).
    VTubeStudio,
    /// OpenSeeFace's webcam tracking packets (`facetracker.py`).
    OpenSeeFace,
    /// facewire's own webcam tracker (a camera or a video, no network).
    Webcam,
}

impl Protocol {
    /// Every protocol.
    pub const ALL: [Protocol; 8] = [
        Protocol::Vmc,
        Protocol::FaceCap,
        Protocol::IFacialMocap,
        Protocol::Facemotion3d,
        Protocol::LiveLinkFace,
        Protocol::VTubeStudio,
        Protocol::OpenSeeFace,
        Protocol::Webcam,
    ];

    /// The protocol whose [`Protocol::name`] is `name` (any letter case).
    pub fn parse(name: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Short lowercase name, as printed in logs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Vmc => "vmc",
            Protocol::FaceCap => "facecap",
            Protocol::LiveLinkFace => "livelinkface",
            Protocol::IFacialMocap => "ifacialmocap",
            Protocol::Facemotion3d => "facemotion3d",
            Protocol::VTubeStudio => "vtubestudio",
            Protocol::OpenSeeFace => "openseeface",
            Protocol::Webcam => "webcam",
        }
    }

    /// One protocol of each network family, in a fixed order: the kinds of listener socket. The
    /// OSC socket, which receives both VMC and Face Cap, is named [`Protocol::Vmc`]; the webcam
    /// has no socket.
    pub const FAMILIES: [Protocol; 6] = [
        Protocol::Vmc,
        Protocol::IFacialMocap,
        Protocol::Facemotion3d,
        Protocol::LiveLinkFace,
        Protocol::VTubeStudio,
        Protocol::OpenSeeFace,
    ];

    /// The family this protocol belongs to: what a listener socket can tell about a datagram
    /// before decoding it. VMC and Face Cap are both OSC, arrive on one socket and share one
    /// decoder, so both give [`Protocol::Vmc`]; every other protocol is its own family.
    pub fn family(self) -> Protocol {
        match self {
            Protocol::Vmc | Protocol::FaceCap => Protocol::Vmc,
            other => other,
        }
    }

    /// Whether both protocols belong to the same family ([`Protocol::family`]): they arrive on
    /// the same kind of socket and count as the same source.
    pub fn same_family(self, other: Protocol) -> bool {
        self.family() == other.family()
    }

    /// Whether this protocol is OSC (VMC or Face Cap).
    pub fn is_osc(self) -> bool {
        self.family() == Protocol::Vmc
    }

    /// What a listener socket of this protocol's family receives, as logs and messages name it:
    /// `VMC and Face Cap`, `iFacialMocap`, `Facemotion3d`, `Live Link Face`,
    /// `VTube Studio/MeowFace`, `OpenSeeFace`.
    pub fn listener_label(self) -> &'static str {
        match self {
            Protocol::Vmc | Protocol::FaceCap => "VMC and Face Cap",
            Protocol::IFacialMocap => "iFacialMocap",
            Protocol::Facemotion3d => "Facemotion3d",
            Protocol::LiveLinkFace => "Live Link Face",
            Protocol::VTubeStudio => "VTube Studio/MeowFace",
            Protocol::OpenSeeFace => "OpenSeeFace",
            Protocol::Webcam => "webcam",
        }
    }

    /// The short name of this protocol's family in the source-lock logs: `VMC/Face Cap`,
    /// `iFacialMocap`, `Facemotion3d`, `Live Link Face`, `VTube Studio`, `OpenSeeFace`.
    pub fn family_label(self) -> &'static str {
        match self {
            Protocol::Vmc | Protocol::FaceCap => "VMC/Face Cap",
            Protocol::IFacialMocap => "iFacialMocap",
            Protocol::Facemotion3d => "Facemotion3d",
            Protocol::LiveLinkFace => "Live Link Face",
            Protocol::VTubeStudio => "VTube Studio",
            Protocol::OpenSeeFace => "OpenSeeFace",
            Protocol::Webcam => "webcam",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many visemes there are.
pub const VISEMES: usize = 6;

/// A mouth shape of lip sync from audio (VRM's vowel names and silence). Frames carry their
/// weights in [`FaceFrame::visemes`] for mappings that route them (`viseme:aa`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Viseme {
    /// Silence: the mouth at rest.
    Sil,
    /// "a" as in "car".
    Aa,
    /// "i" as in "tip".
    Ih,
    /// "u" as in "book".
    Ou,
    /// "e" as in "bed".
    Ee,
    /// "o" as in "toe".
    Oh,
}

impl Viseme {
    /// Every viseme, `sil` first.
    pub const ALL: [Viseme; VISEMES] = [
        Viseme::Sil,
        Viseme::Aa,
        Viseme::Ih,
        Viseme::Ou,
        Viseme::Ee,
        Viseme::Oh,
    ];

    /// Its name: `sil`, `aa`, `ih`, `ou`, `ee`, `oh` (VRM's names for the vowels).
    pub fn name(self) -> &'static str {
        match self {
            Viseme::Sil => "sil",
            Viseme::Aa => "aa",
            Viseme::Ih => "ih",
            Viseme::Ou => "ou",
            Viseme::Ee => "ee",
            Viseme::Oh => "oh",
        }
    }

    /// The viseme of `name` (as [`Viseme::name`] writes it, any case).
    pub fn parse(name: &str) -> Option<Viseme> {
        Viseme::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Its index in [`Viseme::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What the sender says about its own tracking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackingFlag {
    /// The sender has not said.
    #[default]
    Unknown,
    /// The sender reports a tracked face.
    Tracked,
    /// The sender reports that it lost the face.
    Lost,
}

/// One committed frame of face data in ARKit space.
///
/// Rotations are in the avatar frame facewire renders in (glTF: right-handed, +Y up, the face
/// looking down +Z, +X towards the performer's left); each decoder converts its protocol's axes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaceFrame {
    /// Channel values in canonical order. Values of channels not in `present` are meaningless
    /// (kept at their previous or zero value); a missing channel is not the same as 0.
    pub weights: [f32; COUNT],
    /// Which channels this frame carries.
    pub present: ChannelMask,
    /// Head rotation, where the sender sent one.
    pub head: Option<Quat>,
    /// Left eye rotation (the performer's left), where sent.
    pub left_eye: Option<Quat>,
    /// Right eye rotation (the performer's right), where sent.
    pub right_eye: Option<Quat>,
    /// The sender's own timestamp in seconds, where the protocol carries one.
    pub sender_time: Option<f64>,
    /// The sender's tracking flag.
    pub tracking: TrackingFlag,
    /// When the datagram that completed this frame was received.
    pub received: Instant,
    /// The protocol it came in on.
    pub protocol: Protocol,
    /// The sender's address.
    pub from: SocketAddr,
    /// The weight of each layer of the mixer, by its place in the stack (`[layers].order` first,
    /// then the layers other sources add; the first [`MAX_LAYERS`]), for the avatar-space values
    /// some layers carry; 0 before the mixer.
    pub layer_weights: [f32; MAX_LAYERS],
    /// The lip-sync layer's viseme weights times its weight in the mix, [`Viseme::ALL`] order;
    /// all 0 without lip sync.
    pub visemes: [f32; VISEMES],
    /// The values of parameters plugins created through the stream-tool API, for mappings that
    /// read them (`param:HeartRate`); empty without them.
    pub params: Params,
}

/// The most layers whose weights a frame carries: the `[layers].order` ones (at most
/// [`MAX_ORDER`]) and those lip sync, idle life and expressions add above them.
pub const MAX_LAYERS: usize = 32;

/// The most plugin-created parameters one frame carries ([`Params`]).
pub const PARAMS: usize = 32;

/// The name of a parameter a plugin created (4 to 32 ASCII letters and digits, VTube Studio's
/// rule), held inline so sources that name one stay `Copy`; compared without letter case.
#[derive(Clone, Copy)]
pub struct ParamName {
    bytes: [u8; ParamName::MAX],
    len: u8,
}

impl ParamName {
    /// The shortest name.
    pub const MIN: usize = 4;
    /// The longest name.
    pub const MAX: usize = 32;

    /// `name` when it is 4 to 32 ASCII letters and digits.
    pub fn new(name: &str) -> Option<ParamName> {
        let ok = (Self::MIN..=Self::MAX).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric());
        ok.then(|| {
            let mut bytes = [0; Self::MAX];
            bytes[..name.len()].copy_from_slice(name.as_bytes());
            ParamName {
                bytes,
                len: name.len() as u8,
            }
        })
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters and digits are ever stored.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    /// The key frames carry its value under.
    pub fn key(&self) -> ParamKey {
        ParamKey::of(self.as_str())
    }
}

impl PartialEq for ParamName {
    fn eq(&self, other: &ParamName) -> bool {
        self.as_str().eq_ignore_ascii_case(other.as_str())
    }
}

impl Eq for ParamName {}

impl std::hash::Hash for ParamName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl fmt::Debug for ParamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for ParamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parameter's name as a number (FNV-1a of its lower-case form): what frames carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParamKey(u64);

impl ParamKey {
    /// The key of `name`, in any letter case.
    pub fn of(name: &str) -> ParamKey {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= u64::from(b.to_ascii_lowercase());
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        ParamKey(h)
    }
}

/// Values of plugin-created parameters in a frame, each in [0, 1] (its value placed within the
/// range its plugin gave it), at most [`PARAMS`] of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    keys: [ParamKey; PARAMS],
    values: [f32; PARAMS],
    len: u8,
}

impl Params {
    /// No parameter.
    pub const EMPTY: Params = Params {
        keys: [ParamKey(0); PARAMS],
        values: [0.0; PARAMS],
        len: 0,
    };

    /// Adds `value` (made finite and kept in [0, 1]) under `key`; `false` when full or `key` is
    /// there already.
    pub fn push(&mut self, key: ParamKey, value: f32) -> bool {
        let n = usize::from(self.len);
        if n >= PARAMS || self.get(key).is_some() {
            return false;
        }
        self.keys[n] = key;
        self.values[n] = if value.is_finite() {
            value.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.len += 1;
        true
    }

    /// The value under `key`, when the frame carries it.
    pub fn get(&self, key: ParamKey) -> Option<f32> {
        let n = usize::from(self.len);
        self.keys[..n]
            .iter()
            .position(|k| *k == key)
            .map(|i| self.values[i])
    }

    /// How many it holds.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The most layers `[layers].order` lists.
pub const MAX_ORDER: usize = 8;

impl FaceFrame {
    /// An empty frame (no channel present, no pose) received now from `from`.
    pub fn empty(protocol: Protocol, from: SocketAddr, received: Instant) -> FaceFrame {
        FaceFrame {
            weights: [0.0; COUNT],
            present: ChannelMask::EMPTY,
            head: None,
            left_eye: None,
            right_eye: None,
            sender_time: None,
            tracking: TrackingFlag::Unknown,
            received,
            protocol,
            from,
            layer_weights: [0.0; MAX_LAYERS],
            visemes: [0.0; VISEMES],
            params: Params::EMPTY,
        }
    }

    /// The value of `channel`, or `None` when the frame does not carry it.
    pub fn get(&self, channel: Channel) -> Option<f32> {
        self.present
            .contains(channel)
            .then(|| self.weights[channel.index()])
    }

    /// Sets `channel` to `value` and marks it present.
    pub fn set(&mut self, channel: Channel, value: f32) {
        self.weights[channel.index()] = value;
        self.present.insert(channel);
    }
}

/// Where decoded frames go: the ingest thread and replays deliver to one, the conditioner and
/// the session's chain are ones. Any `FnMut(FaceFrame) + Send` closure is a
/// sink that ignores ticks.
pub trait FrameSink: Send {
    /// A committed frame, in the order frames were committed.
    fn frame(&mut self, frame: FaceFrame);

    /// Called every few milliseconds (the ingest thread's `TICK_PERIOD`) whether or not data arrives, so time-based logic (tracking
    /// loss after silence) can act while the network is quiet.
    fn tick(&mut self, _now: Instant) {}

    /// A key went down (`pressed`) or up on the sender's side (VMC's `/VMC/Ext/Key`), by the
    /// sender's name for it (`F1`, `A`, `D1`, `NumPad1`, ...). Expressions bound to the key
    /// follow it.
    fn key(&mut self, _name: &str, _pressed: bool) {}
}

impl<F: FnMut(FaceFrame) + Send> FrameSink for F {
    fn frame(&mut self, frame: FaceFrame) {
        self(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_parse_by_name() {
        assert_eq!(Protocol::parse("VMC"), Some(Protocol::Vmc));
        assert_eq!(Protocol::parse("vtubestudio"), Some(Protocol::VTubeStudio));
        assert_eq!(Protocol::parse("OpenSeeFace"), Some(Protocol::OpenSeeFace));
        assert_eq!(Protocol::parse("meowface"), None);
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.name()), Some(p));
        }
    }

    #[test]
    fn vmc_and_face_cap_are_one_family_every_phone_its_own() {
        assert_eq!(Protocol::FaceCap.family(), Protocol::Vmc);
        assert!(Protocol::FaceCap.same_family(Protocol::Vmc));
        assert!(Protocol::Vmc.is_osc() && Protocol::FaceCap.is_osc());
        assert!(!Protocol::IFacialMocap.same_family(Protocol::Facemotion3d));
        // Every network protocol has a family of listener sockets; the webcam has no socket.
        for p in Protocol::ALL.into_iter().filter(|&p| p != Protocol::Webcam) {
            assert!(Protocol::FAMILIES.contains(&p.family()), "{p}");
            assert_eq!(p.family().family(), p.family());
            assert_eq!(p.is_osc(), matches!(p, Protocol::Vmc | Protocol::FaceCap));
            assert_eq!(p.listener_label(), p.family().listener_label());
            assert_eq!(p.family_label(), p.family().family_label());
        }
        for f in Protocol::FAMILIES {
            assert_eq!(f.family(), f, "{f} names its own family");
        }
    }

    #[test]
    fn listener_and_family_labels_keep_their_log_text() {
        let labels = Protocol::FAMILIES.map(Protocol::listener_label);
        assert_eq!(
            labels,
            [
                "VMC and Face Cap",
                "iFacialMocap",
                "Facemotion3d",
                "Live Link Face",
                "VTube Studio/MeowFace",
                "OpenSeeFace",
            ]
        );
        assert_eq!(Protocol::FaceCap.family_label(), "VMC/Face Cap");
        assert_eq!(Protocol::VTubeStudio.family_label(), "VTube Studio");
    }

    #[test]
    fn canonical_order_matches_unreal() {
        assert_eq!(Channel::ALL.len(), 52);
        assert_eq!(Channel::EyeBlinkLeft.index(), 0);
        assert_eq!(Channel::JawOpen.index(), 17);
        assert_eq!(Channel::BrowInnerUp.index(), 43);
        assert_eq!(Channel::TongueOut.index(), 51);
        for (i, c) in Channel::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(Channel::from_index(i), Some(*c));
        }
        assert_eq!(Channel::from_index(52), None);
    }

    #[test]
    fn every_dialect_parses() {
        for c in Channel::ALL {
            assert_eq!(Channel::parse(c.name()), Some(c), "{c}");
            assert_eq!(Channel::parse(&c.pascal_name()), Some(c), "{c}");
            assert_eq!(Channel::parse(&c.name().to_uppercase()), Some(c), "{c}");
            assert_eq!(Channel::parse(&c.name().to_lowercase()), Some(c), "{c}");
        }
        // The hash table holds every name once and nothing else.
        assert_eq!(NAME_TABLE.iter().filter(|&&i| i != NO_NAME).count(), COUNT);
        for name in [
            "",
            "jaw",
            "jawopenx",
            "eyeblink",
            "tongue_out_L",
            "mouthRollUpperx",
        ] {
            assert_eq!(Channel::parse(name), None, "{name}");
        }
        assert_eq!(Channel::parse("eyeBlink_L"), Some(Channel::EyeBlinkLeft));
        assert_eq!(Channel::parse("browDown_R"), Some(Channel::BrowDownRight));
        assert_eq!(
            Channel::parse("mouthUpperUp_L"),
            Some(Channel::MouthUpperUpLeft)
        );
        assert_eq!(
            Channel::parse("eyeLookOut_L"),
            Some(Channel::EyeLookOutLeft)
        );
        assert_eq!(Channel::parse("EYEBLINK_R"), Some(Channel::EyeBlinkRight));
        assert_eq!(Channel::parse("jawLeft"), Some(Channel::JawLeft));
        assert_eq!(Channel::parse("mouthRight"), Some(Channel::MouthRight));
        assert_eq!(Channel::parse(" JawOpen "), Some(Channel::JawOpen));
    }

    #[test]
    fn unknown_names_are_rejected() {
        for bad in [
            "",
            "hapihapi",
            "trackingStatus",
            "FM_SAD",
            "eyeBlink",
            "jawOpenX",
            "é",
            "eyeBlinkLeftLeftLeftLeftLeftLeftLeftLeft",
        ] {
            assert_eq!(Channel::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn facecap_order_is_a_permutation() {
        let mut seen = ChannelMask::EMPTY;
        for c in FACECAP_ORDER {
            assert!(!seen.contains(c), "{c} twice");
            seen.insert(c);
        }
        assert_eq!(seen, ChannelMask::ALL);
        assert_eq!(FACECAP_ORDER[13], Channel::EyeBlinkLeft);
        assert_eq!(FACECAP_ORDER[24], Channel::JawOpen);
    }

    #[test]
    fn mirror_pairs() {
        assert_eq!(Channel::EyeBlinkLeft.mirror(), Channel::EyeBlinkRight);
        assert_eq!(Channel::JawRight.mirror(), Channel::JawLeft);
        assert_eq!(Channel::JawOpen.mirror(), Channel::JawOpen);
        for c in Channel::ALL {
            assert_eq!(c.mirror().mirror(), c);
        }
    }

    #[test]
    fn mask_counts_and_iterates() {
        let mut m = ChannelMask::EMPTY;
        assert!(m.is_empty());
        m.insert(Channel::JawOpen);
        m.insert(Channel::TongueOut);
        assert_eq!(m.len(), 2);
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            vec![Channel::JawOpen, Channel::TongueOut]
        );
        assert_eq!(ChannelMask::ALL.len(), 52);
    }
}
