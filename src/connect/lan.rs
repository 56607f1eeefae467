//! This PC's addresses, in the order a phone app should try them: the address of the Wi-Fi or
//! Ethernet adapter first, virtual adapters (Docker, VPNs, VMs) after it, loopback last.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of network an address belongs to, best for a phone first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressKind {
    /// A physical adapter (Wi-Fi, Ethernet): the one a phone on the same network reaches.
    Lan,
    /// A virtual adapter: containers, virtual machines, VPNs and tunnels.
    Virtual,
    /// An IPv4 link-local address (169.254.x.x): a network without a DHCP server.
    LinkLocal,
    /// This PC only (127.0.0.1, ::1).
    Loopback,
}

/// One address of this PC, with the interface that has it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LanAddress {
    /// The address.
    pub ip: IpAddr,
    /// The interface's name (`wlan0`, `en0`, `Wi-Fi`); empty when not known.
    pub interface: String,
    /// What kind of network it belongs to.
    pub kind: AddressKind,
}

impl LanAddress {
    /// What the card says about the address besides the address itself: the interface, and
    /// `virtual`, `link-local` or `this PC only` for those kinds (`docker0, virtual`); empty
    /// for a LAN address of an unknown interface.
    pub fn notes(&self) -> String {
        let mut notes = Vec::new();
        if !self.interface.is_empty() {
            notes.push(self.interface.as_str());
        }
        match self.kind {
            AddressKind::Lan => {}
            AddressKind::Virtual => notes.push("virtual"),
            AddressKind::LinkLocal => notes.push("link-local"),
            AddressKind::Loopback => notes.push("this PC only"),
        }
        notes.join(", ")
    }

    /// The address as a person types it, with its [`LanAddress::notes`] in brackets:
    /// `192.168.1.20 (wlan0)`, `172.17.0.1 (docker0, virtual)`.
    pub fn describe(&self) -> String {
        let notes = self.notes();
        if notes.is_empty() {
            self.ip.to_string()
        } else {
            format!("{} ({notes})", self.ip)
        }
    }
}

/// One address of one interface, as the operating system lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The interface's name.
    pub name: String,
    /// One of its addresses.
    pub ip: IpAddr,
    /// Whether the system marks it as a loopback interface.
    pub loopback: bool,
}

impl Interface {
    /// An interface entry.
    pub fn new(name: impl Into<String>, ip: IpAddr, loopback: bool) -> Interface {
        Interface {
            name: name.into(),
            ip,
            loopback,
        }
    }
}

/// Name prefixes of virtual interfaces on Linux and macOS (compared in lower case): Docker and
/// container bridges, libvirt, VMware, VirtualBox, tunnels, WireGuard, ZeroTier, Tailscale, and
/// macOS's Apple Wireless Direct Link and bridges.
const VIRTUAL_PREFIXES: [&str; 22] = [
    "docker",
    "br-",
    "veth",
    "virbr",
    "vmnet",
    "vboxnet",
    "tun",
    "tap",
    "wg",
    "zt",
    "tailscale",
    "utun",
    "awdl",
    "llw",
    "bridge",
    "lxcbr",
    "lxdbr",
    "cni",
    "flannel",
    "cali",
    "podman",
    "anpi",
];

/// Parts of Windows adapter names that mark a virtual adapter (compared in lower case).
const VIRTUAL_PARTS: [&str; 10] = [
    "vethernet",
    "virtualbox",
    "vmware",
    "hyper-v",
    "wsl",
    "loopback pseudo",
    "tailscale",
    "zerotier",
    "wireguard",
    "openvpn",
];

/// Whether an interface called `name` is a virtual adapter (containers, virtual machines, VPNs),
/// judged by the names their software gives them on Linux, macOS and Windows.
pub fn is_virtual_interface(name: &str) -> bool {
    let name = name.trim().to_lowercase();
    VIRTUAL_PREFIXES.iter().any(|p| name.starts_with(p))
        || VIRTUAL_PARTS.iter().any(|p| name.contains(p))
}

/// Whether `ip` is in a private IPv4 range: 10/8, 172.16/12, 192.168/16.
fn is_private_v4(ip: Ipv4Addr) -> bool {
    ip.is_private()
}

/// Whether `ip` is an IPv6 link-local address (fe80::/10).
fn is_link_local_v6(ip: Ipv6Addr) -> bool {
    ip.segments()[0] & 0xffc0 == 0xfe80
}

/// The place of an address in the list, lowest first, and its kind; `None` drops it.
fn rank(interface: &Interface) -> Option<(u8, AddressKind)> {
    let ip = interface.ip;
    if ip.is_unspecified() || ip.is_multicast() {
        return None;
    }
    if interface.loopback || ip.is_loopback() {
        return Some((6, AddressKind::Loopback));
    }
    match ip {
        IpAddr::V4(v4) if v4.is_link_local() => Some((5, AddressKind::LinkLocal)),
        IpAddr::V4(v4) if v4.is_broadcast() => None,
        // A phone app cannot use an address that needs a zone (`fe80::1%wlan0`).
        IpAddr::V6(v6) if is_link_local_v6(v6) => None,
        _ if is_virtual_interface(&interface.name) => {
            Some((if ip.is_ipv4() { 3 } else { 4 }, AddressKind::Virtual))
        }
        IpAddr::V4(v4) if is_private_v4(v4) => Some((0, AddressKind::Lan)),
        IpAddr::V4(_) => Some((1, AddressKind::Lan)),
        IpAddr::V6(_) => Some((2, AddressKind::Lan)),
    }
}

/// Classifies and sorts `interfaces` for the connect card: IPv4 addresses of physical adapters
/// first (private ranges before others), then their global and unique-local IPv6 addresses,
/// then virtual adapters (IPv4 first), IPv4 link-local, and loopback last. IPv6 link-local
/// addresses, unspecified and multicast addresses are dropped, and each address is listed once.
/// Addresses of equal rank keep the system's order.
pub fn order(interfaces: Vec<Interface>) -> Vec<LanAddress> {
    let mut ranked: Vec<(u8, LanAddress)> = interfaces
        .into_iter()
        .filter_map(|interface| {
            let (place, kind) = rank(&interface)?;
            Some((
                place,
                LanAddress {
                    ip: interface.ip,
                    interface: interface.name,
                    kind,
                },
            ))
        })
        .collect();
    ranked.sort_by_key(|(place, _)| *place);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for (_, address) in ranked {
        if !seen.contains(&address.ip) {
            seen.push(address.ip);
            out.push(address);
        }
    }
    out
}

/// This PC's addresses ([`order`]ed), from the operating system's interface list. Interfaces
/// that are down are left out. When the list cannot be read, a warning is logged and the list
/// is empty.
pub fn lan_addresses() -> Vec<LanAddress> {
    match if_addrs::get_if_addrs() {
        Ok(interfaces) => order(
            interfaces
                .into_iter()
                .filter(|i| {
                    !matches!(
                        i.oper_status,
                        if_addrs::IfOperStatus::Down
                            | if_addrs::IfOperStatus::NotPresent
                            | if_addrs::IfOperStatus::LowerLayerDown
                    )
                })
                .map(|i| Interface::new(i.name.clone(), i.ip(), i.is_loopback()))
                .collect(),
        ),
        Err(error) => {
            tracing::warn!(%error, "cannot list this PC's network addresses");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, ip: &str) -> Interface {
        let ip: IpAddr = ip.parse().unwrap();
        Interface::new(name, ip, ip.is_loopback())
    }

    fn ips(list: &[LanAddress]) -> Vec<String> {
        list.iter().map(|a| a.ip.to_string()).collect()
    }

    #[test]
    fn a_linux_laptop_lists_wifi_first_and_loopback_last() {
        let list = order(vec![
            iface("lo", "127.0.0.1"),
            iface("docker0", "172.17.0.1"),
            iface("br-5a1b", "172.18.0.1"),
            iface("wlp3s0", "192.168.1.20"),
            iface("tailscale0", "100.101.102.103"),
            iface("lo", "::1"),
            iface("wlp3s0", "fe80::1c2d:3e4f:5a6b:7c8d"),
            iface("wlp3s0", "2a02:810d:1:2::20"),
            iface("veth12ab", "fe80::1"),
        ]);
        assert_eq!(
            ips(&list),
            [
                "192.168.1.20",
                "2a02:810d:1:2::20",
                "172.17.0.1",
                "172.18.0.1",
                "100.101.102.103",
                "127.0.0.1",
                "::1",
            ]
        );
        let kinds: Vec<AddressKind> = list.iter().map(|a| a.kind).collect();
        assert_eq!(
            kinds,
            [
                AddressKind::Lan,
                AddressKind::Lan,
                AddressKind::Virtual,
                AddressKind::Virtual,
                AddressKind::Virtual,
                AddressKind::Loopback,
                AddressKind::Loopback,
            ]
        );
        assert_eq!(list[0].interface, "wlp3s0");
    }

    #[test]
    fn private_ranges_come_before_other_ipv4_addresses() {
        let list = order(vec![
            iface("eth0", "203.0.113.5"),
            iface("eth1", "172.31.4.4"),
            iface("eth2", "172.32.0.1"),
            iface("eth3", "10.0.0.7"),
            iface("wlan0", "192.168.0.9"),
        ]);
        // 172.32/16 is outside 172.16/12: it sorts with the public address, in system order.
        assert_eq!(
            ips(&list),
            [
                "172.31.4.4",
                "10.0.0.7",
                "192.168.0.9",
                "203.0.113.5",
                "172.32.0.1"
            ]
        );
        assert!(list.iter().all(|a| a.kind == AddressKind::Lan));
    }

    #[test]
    fn windows_and_macos_virtual_adapters_are_recognised() {
        for name in [
            "vEthernet (WSL)",
            "vEthernet (Default Switch)",
            "VirtualBox Host-Only Network",
            "VMware Network Adapter VMnet8",
            "Loopback Pseudo-Interface 1",
            "Tailscale",
            "ZeroTier One [8056c2e21c000001]",
            "utun3",
            "awdl0",
            "llw0",
            "bridge100",
            "vmnet1",
            "vboxnet0",
            "virbr0",
            "tun0",
            "tap0",
            "wg0",
            "ztabcdef",
        ] {
            assert!(is_virtual_interface(name), "{name} is virtual");
        }
        for name in [
            "Wi-Fi",
            "Ethernet",
            "en0",
            "en1",
            "eth0",
            "wlan0",
            "wlp3s0",
            "enp0s31f6",
        ] {
            assert!(!is_virtual_interface(name), "{name} is a physical adapter");
        }
        let list = order(vec![
            iface("vEthernet (WSL)", "172.20.96.1"),
            iface("Wi-Fi", "192.168.178.30"),
            iface("Loopback Pseudo-Interface 1", "127.0.0.1"),
        ]);
        assert_eq!(ips(&list), ["192.168.178.30", "172.20.96.1", "127.0.0.1"]);
        assert_eq!(list[2].kind, AddressKind::Loopback);
    }

    #[test]
    fn duplicates_link_local_and_unusable_addresses() {
        let list = order(vec![
            iface("en0", "fe80::aede:48ff:fe00:1122"),
            iface("en0", "169.254.10.20"),
            iface("en0", "192.168.1.5"),
            iface("en1", "192.168.1.5"),
            iface("utun0", "192.168.1.5"),
            iface("en0", "0.0.0.0"),
            iface("en0", "255.255.255.255"),
            iface("en0", "ff02::1"),
            iface("en0", "fd12:3456:789a::5"),
        ]);
        assert_eq!(
            ips(&list),
            ["192.168.1.5", "fd12:3456:789a::5", "169.254.10.20"]
        );
        assert_eq!(list[0].interface, "en0", "the first listing is kept");
        assert_eq!(list[2].kind, AddressKind::LinkLocal);
        assert!(order(Vec::new()).is_empty());
    }

    #[test]
    fn the_loopback_flag_is_honoured_for_any_address() {
        let list = order(vec![
            Interface::new("lo0", "10.9.9.9".parse().unwrap(), true),
            iface("en0", "10.0.0.2"),
        ]);
        assert_eq!(ips(&list), ["10.0.0.2", "10.9.9.9"]);
        assert_eq!(list[1].kind, AddressKind::Loopback);
    }

    #[test]
    fn addresses_describe_themselves() {
        let lan = LanAddress {
            ip: "192.168.1.20".parse().unwrap(),
            interface: "wlan0".into(),
            kind: AddressKind::Lan,
        };
        assert_eq!(lan.describe(), "192.168.1.20 (wlan0)");
        let docker = LanAddress {
            interface: "docker0".into(),
            kind: AddressKind::Virtual,
            ..lan.clone()
        };
        assert_eq!(docker.describe(), "192.168.1.20 (docker0, virtual)");
        assert_eq!(docker.notes(), "docker0, virtual");
        let bare = LanAddress {
            interface: String::new(),
            ..lan
        };
        assert_eq!(bare.describe(), "192.168.1.20");
    }
}
