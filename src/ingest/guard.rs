//! Who may feed the avatar: the allow-list of addresses and subnets, and the lock onto one source at a time.
//!
//! - [`Subnet`] is one entry of `ingest.allow` (`"192.168.1.0/24"`, `"10.0.0.7"`, `"fd00::/8"`);
//!   an empty list allows every address.
//! - The lock is global: facewire follows one *source* at a time, a source being a protocol family
//!   ([`Protocol::family`]: OSC, which carries VMC and Face Cap and is named [`Protocol::Vmc`], or
//!   one of the phone protocols) and a sender's IP address
//!   (not its port: `oscsend` and some apps send every message from a fresh port). The first source
//!   whose datagram decodes into something takes the lock; datagrams from any other source are
//!   ignored without being decoded, counted and reported (rate-limited), unless `ingest.prefer`
//!   names the newcomer's protocol and the locked source speaks another one, in which case
//!   facewire switches. The lock is released once its source has sent nothing for
//!   `ingest.lock_release` seconds, and the next source to send takes it.
//! - Within the followed host, the port of its latest decoded datagram is *established* once it
//!   has sent [`ESTABLISHED_AFTER`] datagrams in a row. From then on the followed sender is that host and port:
//!   datagrams from the same host's other ports are ignored like another source's, so a flood
//!   from a second program on the phone or the PC cannot push its garbage through the decoders.
//!   A one-shot port (`oscsend`) never becomes established, so such senders are followed from
//!   port to port (two one-shot senders in a row may draw the same ephemeral port by chance;
//!   three may not); a sender that restarts on a new port is followed once the lock is released.
//! - [`Guard::screen`] makes that decision from the address alone, right after the receive,
//!   before anything looks at the datagram's bytes.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tracing::{info, warn};

pub use super::net::{Subnet, SubnetError};
use super::stats::RateLimiter;
use crate::arkit::Protocol;

/// Whether `ip` passes `allow` (an empty list allows everything).
pub fn is_allowed(allow: &[Subnet], ip: IpAddr) -> bool {
    allow.is_empty() || allow.iter().any(|s| s.contains(ip))
}

/// Datagrams in a row from one port of the followed host that make it the established port.
pub const ESTABLISHED_AFTER: u32 = 3;

/// The source being followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Locked {
    /// Its protocol family ([`Protocol::family`]).
    family: Protocol,
    /// Its IP address.
    ip: IpAddr,
    /// The address of its latest datagram (for logs).
    from: SocketAddr,
    /// When it last sent anything.
    last_seen: Instant,
    /// The port of its latest decoded datagram.
    port: u16,
    /// Datagrams received in a row from that port (saturating); [`ESTABLISHED_AFTER`] make it
    /// established.
    port_datagrams: u32,
}

impl Locked {
    /// A lock on `from` for `family`, taken at `now`.
    fn new(family: Protocol, from: SocketAddr, now: Instant) -> Locked {
        Locked {
            family,
            ip: from.ip(),
            from,
            last_seen: now,
            port: from.port(),
            port_datagrams: 1,
        }
    }

    /// Whether a datagram of `family` from `from` belongs to the followed sender: the same
    /// family and host, and the followed port unless that port is not established yet.
    fn follows(&self, family: Protocol, from: SocketAddr) -> bool {
        self.family == family
            && self.ip == from.ip()
            && (from.port() == self.port || self.port_datagrams < ESTABLISHED_AFTER)
    }
}

/// Counters of the guard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuardStats {
    /// Datagrams dropped because their sender is not in `ingest.allow`.
    pub not_allowed: u64,
    /// Datagrams ignored because another source holds the lock (another host, another protocol,
    /// or another port of the followed host while its established port keeps sending).
    pub other_source: u64,
    /// How many of `other_source` came from another port of the followed host and protocol.
    pub other_port: u64,
    /// How many times a source took the lock (the first one, after a release, or a switch).
    pub locks: u64,
    /// How many of those were switches to the preferred protocol while another source held it.
    pub switches: u64,
    /// How many times the lock was released after its source went silent.
    pub releases: u64,
}

/// What the guard says about a datagram before it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Decode it; whether its frames are used is decided by [`Guard::commit`].
    Decode,
    /// Drop it: the sender is not allowed.
    NotAllowed,
    /// Drop it: another source holds the lock.
    OtherSource,
}

/// The allow-list and the source lock, with their counters and rate-limited logs.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Allowed subnets; empty allows all.
    allow: Vec<Subnet>,
    /// The family the user prefers, if any ([`Protocol::family`]).
    prefer: Option<Protocol>,
    /// How long the locked source may be silent before the lock is released.
    release: Duration,
    /// The source being followed.
    locked: Option<Locked>,
    /// Counters.
    stats: GuardStats,
    /// Limits the "not allowed" lines.
    not_allowed_log: RateLimiter,
    /// Limits the "other source" lines.
    other_log: RateLimiter,
}

impl Guard {
    /// A guard with no lock held.
    pub(crate) fn new(allow: Vec<Subnet>, prefer: Option<Protocol>, release: Duration) -> Guard {
        Guard {
            allow,
            prefer: prefer.map(Protocol::family),
            release,
            locked: None,
            stats: GuardStats::default(),
            not_allowed_log: RateLimiter::new(Duration::from_secs(2)),
            other_log: RateLimiter::new(Duration::from_secs(2)),
        }
    }

    /// The counters.
    pub(crate) fn stats(&self) -> GuardStats {
        self.stats
    }

    /// The IP address of the locked source when it is of `protocol`'s family.
    pub(crate) fn locked_ip(&self, protocol: Protocol) -> Option<IpAddr> {
        let family = protocol.family();
        self.locked.filter(|l| l.family == family).map(|l| l.ip)
    }

    /// Releases the lock if its source has been silent for the release time; logs it.
    pub(crate) fn expire(&mut self, now: Instant) {
        if let Some(locked) = self.locked {
            let idle = now.saturating_duration_since(locked.last_seen);
            if idle >= self.release {
                self.locked = None;
                self.stats.releases += 1;
                info!(
                    from = %locked.from,
                    protocol = locked.family.family_label(),
                    idle_s = idle.as_secs_f32(),
                    "{} from {} went silent; the next source to send will be followed",
                    locked.family.family_label(),
                    locked.from
                );
            }
        }
    }

    /// Turns a datagram received on a `listener` socket away from the sender's address alone,
    /// before its bytes are looked at: `Some` when it cannot be decoded whichever protocol the
    /// socket takes it as (an iFacialMocap socket takes both text dialects). Counts and logs
    /// (rate-limited) what it turns away; `None` leaves the decision to [`Guard::admit`].
    pub(crate) fn screen(
        &mut self,
        listener: Protocol,
        from: SocketAddr,
        now: Instant,
    ) -> Option<Admit> {
        if !is_allowed(&self.allow, from.ip()) {
            self.refuse_not_allowed(listener.family(), from, now);
            return Some(Admit::NotAllowed);
        }
        self.expire(now);
        let locked = self.locked?;
        let family = listener.family();
        let text = matches!(family, Protocol::IFacialMocap | Protocol::Facemotion3d);
        let passes = |f: Protocol| locked.follows(f, from) || self.takes_over(f, &locked);
        if passes(family)
            || (text && (passes(Protocol::IFacialMocap) || passes(Protocol::Facemotion3d)))
        {
            return None;
        }
        self.refuse_other(family, from, &locked, now);
        Some(Admit::OtherSource)
    }

    /// Decides whether a datagram of `protocol`'s family from `from` is decoded at all.
    pub(crate) fn admit(&mut self, protocol: Protocol, from: SocketAddr, now: Instant) -> Admit {
        let family = protocol.family();
        if !is_allowed(&self.allow, from.ip()) {
            self.refuse_not_allowed(family, from, now);
            return Admit::NotAllowed;
        }
        self.expire(now);
        let Some(locked) = &mut self.locked else {
            return Admit::Decode;
        };
        if locked.follows(family, from) {
            locked.last_seen = now;
            locked.from = from;
            if from.port() == locked.port {
                locked.port_datagrams = locked.port_datagrams.saturating_add(1);
            }
            return Admit::Decode;
        }
        let locked = *locked;
        if self.takes_over(family, &locked) {
            return Admit::Decode;
        }
        self.refuse_other(family, from, &locked, now);
        Admit::OtherSource
    }

    /// Whether a `family` datagram switches away from `locked` (`ingest.prefer`).
    fn takes_over(&self, family: Protocol, locked: &Locked) -> bool {
        self.prefer == Some(family) && locked.family != family
    }

    /// Counts and logs (rate-limited) a datagram from outside `ingest.allow`.
    fn refuse_not_allowed(&mut self, family: Protocol, from: SocketAddr, now: Instant) {
        self.stats.not_allowed += 1;
        if let Some(suppressed) = self.not_allowed_log.allow(now) {
            warn!(
                %from,
                protocol = family.family_label(),
                suppressed,
                "ignoring {} from {from}: not in ingest.allow",
                family.family_label()
            );
        }
    }

    /// Counts and logs (rate-limited) a datagram from a source other than `locked`.
    fn refuse_other(&mut self, family: Protocol, from: SocketAddr, locked: &Locked, now: Instant) {
        self.stats.other_source += 1;
        let same_host = locked.family == family && locked.ip == from.ip();
        if same_host {
            self.stats.other_port += 1;
        }
        if let Some(suppressed) = self.other_log.allow(now) {
            if same_host {
                warn!(
                    %from,
                    protocol = family.family_label(),
                    following = %locked.from,
                    suppressed,
                    "ignoring {} from {from}: following the same host's port {}",
                    family.family_label(),
                    locked.port
                );
            } else {
                warn!(
                    %from,
                    protocol = family.family_label(),
                    following = %locked.from,
                    following_protocol = locked.family.family_label(),
                    suppressed,
                    "ignoring {} from {from}: following {} from {} (set ingest.prefer to choose)",
                    family.family_label(),
                    locked.family.family_label(),
                    locked.from
                );
            }
        }
    }

    /// After an admitted datagram of `protocol`'s family was decoded: `recognised` says whether it carried data of its
    /// protocol (a frame, or VMC/Face Cap messages). Returns whether its frames are to be used.
    pub(crate) fn commit(
        &mut self,
        protocol: Protocol,
        from: SocketAddr,
        now: Instant,
        recognised: bool,
    ) -> bool {
        let family = protocol.family();
        if let Some(locked) = &mut self.locked {
            if locked.family == family && locked.ip == from.ip() {
                // A new port of the followed host is followed once it sends something that
                // decodes (`admit` let it through only if the old port was not established).
                if recognised && from.port() != locked.port {
                    locked.port = from.port();
                    locked.port_datagrams = 1;
                }
                return true;
            }
        }
        if !recognised {
            return false;
        }
        if let Some(previous) = self.locked {
            self.stats.switches += 1;
            info!(
                %from,
                protocol = family.family_label(),
                previous = %previous.from,
                previous_protocol = previous.family.family_label(),
                "switching to the preferred {} from {from} (was following {} from {})",
                family.family_label(),
                previous.family.family_label(),
                previous.from
            );
        } else {
            info!(
                %from,
                protocol = family.family_label(),
                "following {} from {from}",
                family.family_label()
            );
        }
        self.stats.locks += 1;
        self.locked = Some(Locked::new(family, from, now));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_empty_allow_list_allows_everyone() {
        let host: Subnet = "10.0.0.7".parse().unwrap();
        assert!(is_allowed(&[], "1.2.3.4".parse().unwrap()));
        assert!(!is_allowed(&[host], "1.2.3.4".parse().unwrap()));
        assert!(is_allowed(&[host], "10.0.0.7".parse().unwrap()));
    }

    #[test]
    fn the_first_source_is_followed_until_it_goes_silent() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), None, Duration::from_secs(3));
        let a = sock("10.0.0.1:5000");
        let b = sock("10.0.0.2:5000");
        // Nothing recognised yet: no lock.
        assert_eq!(guard.admit(Protocol::VTubeStudio, b, t0), Admit::Decode);
        assert!(!guard.commit(Protocol::VTubeStudio, b, t0, false));
        assert_eq!(guard.admit(Protocol::IFacialMocap, a, t0), Admit::Decode);
        assert!(guard.commit(Protocol::IFacialMocap, a, t0, true));
        // The same host from another port is the same source.
        let a2 = sock("10.0.0.1:6000");
        assert_eq!(guard.admit(Protocol::IFacialMocap, a2, t0), Admit::Decode);
        assert!(guard.commit(Protocol::IFacialMocap, a2, t0, true));
        // Another host, or another protocol from the same host, is ignored.
        assert_eq!(
            guard.admit(Protocol::IFacialMocap, b, t0),
            Admit::OtherSource
        );
        assert_eq!(guard.admit(Protocol::Vmc, a, t0), Admit::OtherSource);
        assert_eq!(guard.stats().other_source, 2);
        // Silence releases the lock; the next source takes it.
        let later = t0 + Duration::from_secs(4);
        assert_eq!(guard.admit(Protocol::Vmc, b, later), Admit::Decode);
        assert!(guard.commit(Protocol::Vmc, b, later, true));
        assert_eq!(guard.locked_ip(Protocol::Vmc), Some(b.ip()));
        let stats = guard.stats();
        assert_eq!((stats.locks, stats.releases, stats.switches), (2, 1, 0));
    }

    #[test]
    fn an_established_port_keeps_the_hosts_other_ports_out_until_the_lock_is_released() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), None, Duration::from_secs(3));
        let sender = sock("10.0.0.1:5000");
        let flood = sock("10.0.0.1:7000");
        assert!(guard.commit(Protocol::Vmc, sender, t0, true));
        // Until the port has sent three datagrams, another port of the host is let through
        // (oscsend), but garbage from it does not move the followed port.
        for _ in 1..ESTABLISHED_AFTER {
            assert_eq!(guard.screen(Protocol::Vmc, flood, t0), None);
            assert_eq!(guard.admit(Protocol::Vmc, flood, t0), Admit::Decode);
            assert!(guard.commit(Protocol::Vmc, flood, t0, false));
            assert_eq!(guard.admit(Protocol::Vmc, sender, t0), Admit::Decode);
            assert!(guard.commit(Protocol::Vmc, sender, t0, true));
        }
        // Established: the other port is turned away on its address alone, and counted once.
        assert_eq!(
            guard.screen(Protocol::Vmc, flood, t0),
            Some(Admit::OtherSource)
        );
        assert_eq!(guard.admit(Protocol::Vmc, flood, t0), Admit::OtherSource);
        let stats = guard.stats();
        assert_eq!((stats.other_source, stats.other_port), (2, 2));
        assert_eq!(guard.screen(Protocol::Vmc, sender, t0), None);
        // Rejected datagrams do not keep the lock: once the sender is silent it is released, and
        // a sender restarted on a new port takes it.
        let later = t0 + Duration::from_secs(3);
        let restarted = sock("10.0.0.1:5001");
        assert_eq!(guard.screen(Protocol::Vmc, restarted, later), None);
        assert_eq!(guard.admit(Protocol::Vmc, restarted, later), Admit::Decode);
        assert!(guard.commit(Protocol::Vmc, restarted, later, true));
        for _ in 1..ESTABLISHED_AFTER {
            assert_eq!(guard.admit(Protocol::Vmc, restarted, later), Admit::Decode);
        }
        assert_eq!(
            guard.screen(Protocol::Vmc, sender, later),
            Some(Admit::OtherSource)
        );
        let stats = guard.stats();
        assert_eq!((stats.locks, stats.releases), (2, 1));
    }

    #[test]
    fn one_shot_ports_are_followed_from_port_to_port() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), None, Duration::from_secs(3));
        // Two senders in a row drew the same ephemeral port: still one-shot senders.
        for port in [40000, 40001, 40002, 40002, 40003, 40004, 40004, 40005] {
            let from = SocketAddr::new([10, 0, 0, 1].into(), port);
            assert_eq!(guard.screen(Protocol::Vmc, from, t0), None);
            assert_eq!(guard.admit(Protocol::Vmc, from, t0), Admit::Decode);
            assert!(guard.commit(Protocol::Vmc, from, t0, true));
        }
        assert_eq!((guard.stats().locks, guard.stats().other_source), (1, 0));
    }

    #[test]
    fn screening_a_text_socket_passes_either_dialect_of_the_followed_sender() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), None, Duration::from_secs(3));
        let phone = sock("10.0.0.1:49983");
        assert!(guard.commit(Protocol::Facemotion3d, phone, t0, true));
        assert_eq!(guard.screen(Protocol::IFacialMocap, phone, t0), None);
        assert_eq!(
            guard.screen(Protocol::LiveLinkFace, phone, t0),
            Some(Admit::OtherSource)
        );
        assert_eq!(
            guard.screen(Protocol::IFacialMocap, sock("10.0.0.2:49983"), t0),
            Some(Admit::OtherSource)
        );
        assert_eq!(guard.stats().other_port, 0);
    }

    #[test]
    fn the_preferred_protocol_takes_over() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), Some(Protocol::Vmc), Duration::from_secs(3));
        let phone = sock("10.0.0.1:5000");
        let pc = sock("10.0.0.2:39540");
        assert!(guard.commit(Protocol::VTubeStudio, phone, t0, true));
        assert_eq!(guard.admit(Protocol::Vmc, pc, t0), Admit::Decode);
        assert!(guard.commit(Protocol::Vmc, pc, t0, true));
        assert_eq!(guard.stats().switches, 1);
        // Now the phone is the other source, and it is not preferred.
        assert_eq!(
            guard.admit(Protocol::VTubeStudio, phone, t0),
            Admit::OtherSource
        );
    }

    #[test]
    fn vmc_and_face_cap_are_one_source() {
        let t0 = Instant::now();
        let mut guard = Guard::new(Vec::new(), Some(Protocol::FaceCap), Duration::from_secs(3));
        let pc = sock("10.0.0.2:39540");
        let phone = sock("10.0.0.1:5000");
        assert!(guard.commit(Protocol::Vmc, pc, t0, true));
        assert_eq!(guard.admit(Protocol::FaceCap, pc, t0), Admit::Decode);
        assert!(guard.commit(Protocol::FaceCap, pc, t0, true));
        assert_eq!(guard.locked_ip(Protocol::FaceCap), Some(pc.ip()));
        assert_eq!(guard.locked_ip(Protocol::LiveLinkFace), None);
        // Preferring Face Cap prefers the OSC family: the phone cannot take over from VMC.
        assert_eq!(
            guard.admit(Protocol::LiveLinkFace, phone, t0),
            Admit::OtherSource
        );
        assert_eq!(guard.stats().locks, 1);
    }

    #[test]
    fn senders_outside_the_allow_list_are_dropped() {
        let t0 = Instant::now();
        let allow = vec!["192.168.1.0/24".parse().unwrap()];
        let mut guard = Guard::new(allow, None, Duration::from_secs(3));
        assert_eq!(
            guard.admit(Protocol::Vmc, sock("192.168.2.1:1"), t0),
            Admit::NotAllowed
        );
        assert_eq!(
            guard.admit(Protocol::Vmc, sock("192.168.1.9:1"), t0),
            Admit::Decode
        );
        assert_eq!(guard.stats().not_allowed, 1);
    }
}
