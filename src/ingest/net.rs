//! Network values of `[ingest]`: [`Subnet`] (one entry of `ingest.allow`) and the optional
//! address and protocol fields written as strings.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::Deserialize;
use thiserror::Error;

use crate::arkit::Protocol;

/// One address or subnet in CIDR notation: `10.0.0.7`, `192.168.1.0/24`, `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subnet {
    /// The network address, with the host bits cleared.
    network: IpAddr,
    /// The prefix length (32 or 128 for a single address).
    prefix: u8,
}

/// Why a [`Subnet`] did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SubnetError {
    /// The part before `/` is not an IPv4 or IPv6 address.
    #[error("`{0}` is not an IP address")]
    Address(String),
    /// The prefix length is not a number within the address family's width.
    #[error("`{0}` is not a prefix length (0-32 for IPv4, 0-128 for IPv6)")]
    Prefix(String),
}

impl Subnet {
    /// The subnet `network/prefix`; host bits in `network` are cleared. `None` when the prefix is
    /// wider than the address family.
    pub fn new(network: IpAddr, prefix: u8) -> Option<Subnet> {
        let network = match network {
            IpAddr::V4(v4) if prefix <= 32 => {
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask32(prefix)))
            }
            IpAddr::V6(v6) if prefix <= 128 => {
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask128(prefix)))
            }
            _ => return None,
        };
        Some(Subnet { network, prefix })
    }

    /// Whether `ip` is in this subnet. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is compared
    /// as the IPv4 address it carries.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                u32::from(ip) & mask32(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                u128::from(ip) & mask128(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

/// The IPv4 netmask of `prefix` bits (at most 32).
fn mask32(prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0)
}

/// The IPv6 netmask of `prefix` bits (at most 128).
fn mask128(prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix.min(128)))
        .unwrap_or(0)
}

impl FromStr for Subnet {
    type Err = SubnetError;

    fn from_str(s: &str) -> Result<Subnet, SubnetError> {
        let s = s.trim();
        let (address, prefix) = match s.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (s, None),
        };
        let ip: IpAddr = address
            .parse()
            .map_err(|_| SubnetError::Address(address.to_string()))?;
        let width = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| SubnetError::Prefix(p.to_string()))?,
        };
        Subnet::new(ip, prefix).ok_or_else(|| SubnetError::Prefix(prefix.to_string()))
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl<'de> Deserialize<'de> for Subnet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Subnet, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(|e: SubnetError| {
            serde::de::Error::custom(format!(
                "{e}; write an address or a subnet, for example \"192.168.1.0/24\" or \"10.0.0.7\""
            ))
        })
    }
}

/// Deserialises an optional IP address written as a string, `""` meaning none (TOML has no null).
pub(crate) fn deserialize_optional_ip<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<IpAddr>, D::Error> {
    let s = String::deserialize(d)?;
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse().map(Some).map_err(|_| {
        serde::de::Error::custom(format!(
            "`{s}` is not an IP address; write the phone's address, for example \"192.168.1.23\", or \"\" for none"
        ))
    })
}

/// Deserialises an optional protocol name written as a string, `""` meaning none.
pub(crate) fn deserialize_optional_protocol<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Protocol>, D::Error> {
    let s = String::deserialize(d)?;
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    Protocol::parse(s).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "`{s}` is not a protocol; use one of \"vmc\", \"facecap\", \"ifacialmocap\", \
             \"facemotion3d\", \"livelinkface\", \"vtubestudio\", \"openseeface\", or \"\" \
             for none"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_parse_and_match() {
        let lan: Subnet = "192.168.1.0/24".parse().unwrap();
        assert!(lan.contains("192.168.1.77".parse().unwrap()));
        assert!(!lan.contains("192.168.2.1".parse().unwrap()));
        assert!(lan.contains("::ffff:192.168.1.5".parse().unwrap()));
        let host: Subnet = " 10.0.0.7 ".parse().unwrap();
        assert!(host.contains("10.0.0.7".parse().unwrap()));
        assert!(!host.contains("10.0.0.8".parse().unwrap()));
        let odd: Subnet = "10.1.2.3/8".parse().unwrap();
        assert_eq!(odd.to_string(), "10.0.0.0/8");
        let all: Subnet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        assert!(!all.contains("::1".parse().unwrap()));
        let v6: Subnet = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        for bad in [
            "",
            "10.0.0",
            "10.0.0.1/33",
            "::1/129",
            "1.2.3.4/x",
            "1.2.3.4/-1",
        ] {
            assert!(bad.parse::<Subnet>().is_err(), "{bad}");
        }
    }
}
