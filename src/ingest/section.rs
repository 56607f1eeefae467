//! `[ingest]` (where each protocol listens, who may send, which sender wins) and `[forward]`
//! (the calibrated stream sent on as VMC).

use std::net::{IpAddr, SocketAddr};

use serde::Deserialize;

use super::net::{self, Subnet};
use crate::arkit::Protocol;

/// The most addresses a VTube Studio request can name (`ingest.vtubestudio`).
pub const MAX_VTS_REQUEST_PORTS: usize = 16;

/// The phone's ports that receive the start messages (`[ingest.phone_ports]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhonePorts {
    /// iFacialMocap's port on the phone (49983).
    pub ifacialmocap: u16,
    /// Facemotion3d's port on the phone (49993).
    pub facemotion3d: u16,
    /// VTube Studio's or MeowFace's port on the phone (21412).
    pub vtubestudio: u16,
}

impl Default for PhonePorts {
    fn default() -> PhonePorts {
        PhonePorts {
            ifacialmocap: 49983,
            facemotion3d: 49993,
            vtubestudio: 21412,
        }
    }
}

/// `[ingest]`: where facewire listens, which senders it accepts and which phone it asks to stream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestSection {
    /// UDP addresses to listen on for OSC (VMC and Face Cap); empty turns OSC off.
    pub listen: Vec<SocketAddr>,
    /// UDP addresses for iFacialMocap (and Facemotion3d) text frames; empty turns them off.
    pub ifacialmocap: Vec<SocketAddr>,
    /// UDP addresses for Facemotion3d (and iFacialMocap) text frames; empty turns them off.
    pub facemotion3d: Vec<SocketAddr>,
    /// UDP addresses for Live Link Face packets; empty turns them off.
    pub livelinkface: Vec<SocketAddr>,
    /// UDP addresses for VTube Studio and MeowFace JSON (the ports named in the requests); empty
    /// turns them off.
    pub vtubestudio: Vec<SocketAddr>,
    /// UDP addresses for OpenSeeFace's tracking packets (`facetracker.py --port`); empty turns
    /// them off.
    pub openseeface: Vec<SocketAddr>,
    /// The phone's IP address, for the protocols that need the PC to ask for the stream;
    /// `""` (none) in the file.
    #[serde(deserialize_with = "net::deserialize_optional_ip")]
    pub phone: Option<IpAddr>,
    /// `[ingest.phone_ports]`: the phone's ports for the start messages.
    pub phone_ports: PhonePorts,
    /// The protocol that takes over from any other source; `""` (none) in the file: the first
    /// source is followed.
    #[serde(deserialize_with = "net::deserialize_optional_protocol")]
    pub prefer: Option<Protocol>,
    /// Addresses and subnets accepted; empty accepts every sender.
    pub allow: Vec<Subnet>,
    /// Seconds of silence after which the followed source is released.
    pub lock_release: f32,
    /// Whether a listener on its protocol's usual address may be skipped (one warning) when it
    /// cannot bind, so the others run; `false` (the default): every listener must bind, or the
    /// run stops with an error naming the port's holder.
    pub partial: bool,
}

impl Default for IngestSection {
    fn default() -> Self {
        let any = |port| vec![SocketAddr::from(([0, 0, 0, 0], port))];
        IngestSection {
            listen: any(39539),
            ifacialmocap: any(49983),
            facemotion3d: any(49993),
            livelinkface: any(11111),
            vtubestudio: any(11125),
            openseeface: any(11573),
            phone: None,
            phone_ports: PhonePorts::default(),
            prefer: None,
            allow: Vec::new(),
            lock_release: 3.0,
            partial: false,
        }
    }
}

impl IngestSection {
    /// Applies the command line's `--listen` addresses (when any) and `--phone`.
    pub fn apply_flags(&mut self, listen: &[SocketAddr], phone: Option<IpAddr>) {
        if !listen.is_empty() {
            self.listen = listen.to_vec();
        }
        if phone.is_some() {
            self.phone = phone;
        }
    }

    /// Every listener address with its key, in file order.
    fn addresses(&self) -> impl Iterator<Item = (&'static str, SocketAddr)> + '_ {
        [
            ("listen", &self.listen),
            ("ifacialmocap", &self.ifacialmocap),
            ("facemotion3d", &self.facemotion3d),
            ("livelinkface", &self.livelinkface),
            ("vtubestudio", &self.vtubestudio),
            ("openseeface", &self.openseeface),
        ]
        .into_iter()
        .flat_map(|(key, addrs)| addrs.iter().map(move |&a| (key, a)))
    }

    /// Checks what serde cannot: `Err((key, message, hint))`.
    pub(crate) fn check(&self) -> Result<(), (&'static str, String, String)> {
        if self.addresses().next().is_none() {
            return Err((
                "listen",
                "every ingest listener is off: facewire would hear nothing".into(),
                "keep at least one, e.g. listen = [\"0.0.0.0:39539\"]".into(),
            ));
        }
        let all: Vec<_> = self.addresses().collect();
        for (i, &(key, addr)) in all.iter().enumerate() {
            if addr.port() == 0 {
                continue;
            }
            if let Some((other, _)) = all[..i].iter().find(|(_, a)| *a == addr) {
                return Err((
                    key,
                    format!("{addr} is listed twice (in `{other}` and `{key}`)"),
                    "give every protocol its own port; one socket cannot serve two lists".into(),
                ));
            }
        }
        if self.vtubestudio.len() > MAX_VTS_REQUEST_PORTS {
            return Err((
                "vtubestudio",
                format!(
                    "{} VTube Studio addresses; a request names at most {}",
                    self.vtubestudio.len(),
                    MAX_VTS_REQUEST_PORTS
                ),
                "one address is enough: vtubestudio = [\"0.0.0.0:11125\"]".into(),
            ));
        }
        let ports = self.phone_ports;
        if ports.ifacialmocap == 0 || ports.facemotion3d == 0 || ports.vtubestudio == 0 {
            return Err((
                "phone_ports",
                "a phone port is 0".into(),
                "the apps' ports are ifacialmocap = 49983, facemotion3d = 49993, vtubestudio = 21412"
                    .into(),
            ));
        }
        if !(0.5..=60.0).contains(&self.lock_release) {
            return Err((
                "lock_release",
                format!("lock_release = {} is out of range", self.lock_release),
                "use 0.5 to 60 seconds, e.g. lock_release = 3.0".into(),
            ));
        }
        Ok(())
    }
}

/// How channel names are spelled in forwarded `/VMC/Ext/Blend/Val` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForwardNames {
    /// `EyeBlinkLeft`: the "perfect sync" clip names of VRM models (VSeeFace, Warudo, VNyan).
    #[default]
    Pascal,
    /// `eyeBlinkLeft`: ARKit's Swift constants.
    Camel,
}

/// `[forward]`: sending the calibrated stream on as VMC to other tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForwardSection {
    /// VMC receivers to send to (`"127.0.0.1:39540"`); empty turns forwarding off.
    pub to: Vec<SocketAddr>,
    /// How channel names are spelled: "pascal" or "camel".
    pub names: ForwardNames,
}

impl Default for ForwardSection {
    fn default() -> Self {
        ForwardSection {
            to: Vec::new(),
            names: ForwardNames::Pascal,
        }
    }
}
