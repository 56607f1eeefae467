//! Where the ingest thread listens: [`IngestConfig`], each protocol's usual port, and which
//! listeners must bind.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::guard::Subnet;
use super::handshake::PhonePorts;
use super::section::IngestSection;
use super::tap::Tap;
use super::{ifacialmocap, livelink, openseeface, vts};
use crate::arkit::Protocol;

/// The VMC receiver ("Marionette") port, 39539.
pub const DEFAULT_PORT: u16 = 39539;

/// How long the followed source may be silent before another one may take over, by default.
pub const DEFAULT_LOCK_RELEASE: Duration = Duration::from_secs(3);

/// One phone-protocol listener to bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhoneListen {
    /// The protocol it receives. An iFacialMocap or Facemotion3d socket takes both text dialects
    /// and tags each frame by its dialect; a VMC or Face Cap entry is one more OSC socket.
    pub protocol: Protocol,
    /// The UDP address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Whether failing to bind it stops [`spawn`] with an error (an address the user chose);
    /// otherwise it is a warning and the other listeners run.
    pub required: bool,
}

/// Where and how the ingest thread listens.
///
/// [`IngestConfig::default`] is the OSC listener alone on 0.0.0.0:39539, required, with no phone
/// listeners; [`IngestConfig::from_section`] gives the configuration file's full set (every
/// protocol on its usual port by default).
#[derive(Debug)]
pub struct IngestConfig {
    /// UDP addresses to bind for OSC; each one understands both VMC and Face Cap. Port 0 picks a
    /// free port ([`IngestHandle::local_addrs`] tells which).
    pub listen: Vec<SocketAddr>,
    /// Whether failing to bind an OSC address is an error (otherwise a warning).
    pub listen_required: bool,
    /// The phone-protocol listeners.
    pub phones: Vec<PhoneListen>,
    /// The phone that start messages (iFacialMocap, Facemotion3d, VTube Studio) are sent to.
    /// `None`: only to the source being followed, once there is one.
    pub phone: Option<IpAddr>,
    /// The phone's ports for the start messages.
    pub phone_ports: PhonePorts,
    /// The protocol that takes over from any other source; `None`: the first source is followed.
    pub prefer: Option<Protocol>,
    /// Addresses and subnets accepted; empty accepts every sender.
    pub allow: Vec<Subnet>,
    /// How long the followed source may be silent before another one may take over.
    pub lock_release: Duration,
    /// How long a sender may stay quiet before it is logged as silent.
    pub silence_after: Duration,
    /// Called for every datagram received on any listener, before the guard and decoding
    /// ([`Tap`]); `None`: no tap.
    pub tap: Option<Tap>,
}

impl Default for IngestConfig {
    fn default() -> IngestConfig {
        IngestConfig {
            listen: vec![SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT))],
            listen_required: true,
            phones: Vec::new(),
            phone: None,
            phone_ports: PhonePorts::default(),
            prefer: None,
            allow: Vec::new(),
            lock_release: DEFAULT_LOCK_RELEASE,
            silence_after: Duration::from_secs(2),
            tap: None,
        }
    }
}

/// The PC port a protocol's sender sends to by default: [`DEFAULT_PORT`] for VMC and Face Cap,
/// the app's own port for iFacialMocap, Facemotion3d, Live Link Face and OpenSeeFace
/// (`facetracker.py`'s `--port`). For VTube Studio this is our choice: the PC names its ports in
/// the request ([`vts::DEFAULT_PC_PORT`]). The webcam, which has no socket, gives 0.
pub fn default_port(protocol: Protocol) -> u16 {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => DEFAULT_PORT,
        Protocol::IFacialMocap => ifacialmocap::IFM_PORT,
        Protocol::Facemotion3d => ifacialmocap::FM3D_PORT,
        Protocol::LiveLinkFace => livelink::DEFAULT_PORT,
        Protocol::VTubeStudio => vts::DEFAULT_PC_PORT,
        Protocol::OpenSeeFace => openseeface::DEFAULT_PORT,
        // The webcam is no network source.
        Protocol::Webcam => 0,
    }
}

/// The usual address of a protocol's listener: all interfaces on its [`default_port`].
pub fn default_addr(protocol: Protocol) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::UNSPECIFIED, default_port(protocol)))
}

impl IngestConfig {
    /// The ingest settings of `[ingest]`. Every listener must bind, unless `partial = true`: then
    /// an address equal to its protocol's usual one ([`default_addr`]) is optional (a port in use
    /// is a warning and the others run), while any other address was chosen by the user and must
    /// still bind. OpenSeeFace's usual address is always optional: VSeeFace holds it while its own
    /// tracker runs on the same PC, and that should not stop facewire.
    pub fn from_section(section: &IngestSection) -> IngestConfig {
        let phone_lists = [
            (Protocol::IFacialMocap, &section.ifacialmocap),
            (Protocol::Facemotion3d, &section.facemotion3d),
            (Protocol::LiveLinkFace, &section.livelinkface),
            (Protocol::VTubeStudio, &section.vtubestudio),
            (Protocol::OpenSeeFace, &section.openseeface),
        ];
        let mut phones = Vec::new();
        for (protocol, addrs) in phone_lists {
            let usual = default_addr(protocol);
            phones.extend(addrs.iter().map(|&addr| PhoneListen {
                protocol,
                addr,
                required: (!section.partial && protocol != Protocol::OpenSeeFace) || addr != usual,
            }));
        }
        let usual = default_addr(Protocol::Vmc);
        IngestConfig {
            listen: section.listen.clone(),
            listen_required: !section.partial || section.listen.iter().any(|&a| a != usual),
            phones,
            phone: section.phone,
            phone_ports: section.phone_ports,
            prefer: section.prefer,
            allow: section.allow.clone(),
            lock_release: Duration::from_secs_f32(section.lock_release),
            ..IngestConfig::default()
        }
    }

    /// Keeps only the listeners on `port`, each one required. When none is configured there, it
    /// listens on all interfaces at `port` for the protocol whose usual port it is
    /// ([`default_port`]), or for VMC and Face Cap.
    pub fn restrict_to_port(mut self, port: u16) -> IngestConfig {
        self.listen.retain(|a| a.port() == port);
        self.listen_required = true;
        self.phones.retain(|p| p.addr.port() == port);
        for p in &mut self.phones {
            p.required = true;
        }
        if self.listen.is_empty() && self.phones.is_empty() {
            let addr = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
            match Protocol::FAMILIES
                .into_iter()
                .find(|&p| !p.is_osc() && default_port(p) == port)
            {
                Some(protocol) => self.phones.push(PhoneListen {
                    protocol,
                    addr,
                    required: true,
                }),
                None => self.listen.push(addr),
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_network_protocol_has_a_usual_port() {
        let ports = Protocol::ALL.map(default_port);
        assert_eq!(ports, [39539, 39539, 49983, 49993, 11111, 11125, 11573, 0]);
        assert_eq!(default_port(Protocol::VTubeStudio), vts::DEFAULT_PC_PORT);
        assert_eq!(
            default_addr(Protocol::FaceCap),
            SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT))
        );
    }

    #[test]
    fn restricting_to_a_port_keeps_its_listeners_or_picks_its_protocol() {
        let section = IngestSection::default();
        let only = IngestConfig::from_section(&section).restrict_to_port(11111);
        assert!(only.listen.is_empty());
        assert_eq!(only.phones.len(), 1);
        assert_eq!(only.phones[0].protocol, Protocol::LiveLinkFace);
        assert!(only.phones[0].required);

        let osc = IngestConfig::from_section(&section).restrict_to_port(DEFAULT_PORT);
        assert_eq!(osc.listen, [default_addr(Protocol::Vmc)]);
        assert!(osc.listen_required && osc.phones.is_empty());

        // A port nothing is configured on: its protocol's listener, or OSC.
        let none = IngestSection {
            ifacialmocap: Vec::new(),
            ..IngestSection::default()
        };
        let ifm = IngestConfig::from_section(&none).restrict_to_port(49983);
        assert!(ifm.listen.is_empty());
        assert_eq!(ifm.phones[0].protocol, Protocol::IFacialMocap);
        let osf = IngestConfig::from_section(&section).restrict_to_port(11573);
        assert!(osf.listen.is_empty());
        assert_eq!(osf.phones.len(), 1);
        assert_eq!(osf.phones[0].protocol, Protocol::OpenSeeFace);
        let other = IngestConfig::from_section(&section).restrict_to_port(40000);
        assert_eq!(other.listen, [SocketAddr::from(([0, 0, 0, 0], 40000))]);
        assert!(other.phones.is_empty() && other.listen_required);
    }

    #[test]
    fn openseeface_usual_port_is_optional_and_a_chosen_one_required() {
        let section = IngestSection::default();
        let config = IngestConfig::from_section(&section);
        for p in &config.phones {
            assert_eq!(p.required, p.protocol != Protocol::OpenSeeFace, "{p:?}");
        }
        assert!(config.listen_required);
        let moved = IngestSection {
            openseeface: vec![SocketAddr::from(([0, 0, 0, 0], 11574))],
            ..IngestSection::default()
        };
        let config = IngestConfig::from_section(&moved);
        let osf = config
            .phones
            .iter()
            .find(|p| p.protocol == Protocol::OpenSeeFace)
            .unwrap();
        assert!(osf.required);
    }
}
