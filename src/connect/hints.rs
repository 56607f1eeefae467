//! What to check when no face data arrives: a pure function of the time since listening
//! started, the frames so far, what each listener has heard, this PC's addresses and the OS.

use std::net::IpAddr;
use std::time::Duration;

use super::lan::{AddressKind, LanAddress};
use crate::arkit::Protocol;
use crate::ingest::{default_port, ListenerReport};

/// How long facewire waits for the first frame before it says what to check.
pub const NO_DATA_HINT: Duration = Duration::from_secs(5);

/// ufw takes at most 15 ports in one rule.
const UFW_MAX_PORTS: usize = 15;

/// The operating system, for the firewall's instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Os {
    /// Linux and other Unix systems: ufw and firewalld.
    Linux,
    /// macOS: the application firewall in System Settings.
    MacOs,
    /// Windows: Windows Defender Firewall.
    Windows,
}

impl Os {
    /// The system facewire was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "windows") {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Linux
        }
    }
}

/// What a hint is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintKind {
    /// Nothing arrives: is the phone on the same network?
    SameNetwork,
    /// Nothing arrives: the firewall may drop it (with the commands for this OS).
    Firewall,
    /// Nothing arrives: the app's target address and port.
    Target,
    /// Nothing arrives from the apps facewire asks for data: is the configured phone address
    /// the one the app shows? (Without one, the card's rows already say to start with
    /// `--phone`.)
    AskPhone,
    /// Every listener is bound to loopback: the phone cannot reach any.
    LoopbackOnly,
    /// Datagrams of an app facewire listens for arrive on another app's port.
    WrongPort,
    /// Datagrams of an app facewire does not listen for arrive.
    NotListening,
    /// Datagrams arrive that do not decode as anything facewire knows.
    Undecoded,
    /// Datagrams were turned away because the sender is not in `ingest.allow`.
    NotAllowed,
}

/// One thing to check, with the commands that fix it (when there are any).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hint {
    /// What it is about.
    pub kind: HintKind,
    /// What to check, one sentence.
    pub text: String,
    /// Commands to run, one per line, each complete (never to be broken when shown).
    pub commands: Vec<String>,
}

impl Hint {
    fn new(kind: HintKind, text: String) -> Hint {
        Hint {
            kind,
            text,
            commands: Vec::new(),
        }
    }
}

/// What the hints are made from.
#[derive(Debug, Clone, Copy)]
pub struct HintInput<'a> {
    /// Time since facewire started listening.
    pub elapsed: Duration,
    /// Frames decoded so far, from any listener.
    pub frames: u64,
    /// What each listener has heard.
    pub reports: &'a [ListenerReport],
    /// This PC's addresses, as the connect card shows them.
    pub addresses: &'a [LanAddress],
    /// The configured phone (`ingest.phone`, `--phone`).
    pub phone: Option<IpAddr>,
    /// The operating system, for the firewall's instructions.
    pub os: Os,
}

/// `ports` as words: `port 39539`, `ports 39539 and 11111`, `ports 39539, 49983 and 11111`.
fn port_words(ports: &[u16]) -> String {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    match list.as_slice() {
        [] => "no port".to_string(),
        [one] => format!("port {one}"),
        [init @ .., last] => format!("ports {} and {last}", init.join(", ")),
    }
}

/// The `[ingest]` key whose addresses turn on `protocol`'s listener.
fn ingest_key(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Vmc | Protocol::FaceCap => "listen",
        Protocol::IFacialMocap => "ifacialmocap",
        Protocol::Facemotion3d => "facemotion3d",
        Protocol::LiveLinkFace => "livelinkface",
        Protocol::VTubeStudio => "vtubestudio",
        Protocol::OpenSeeFace => "openseeface",
        Protocol::Webcam => "webcam",
    }
}

/// The name of the app that sends `protocol`.
fn app_label(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Vmc => "VMC",
        Protocol::FaceCap => "Face Cap",
        other => other.listener_label(),
    }
}

/// Whether facewire must ask the phone for `protocol`'s data.
fn asked(protocol: Protocol) -> bool {
    matches!(
        protocol,
        Protocol::IFacialMocap | Protocol::Facemotion3d | Protocol::VTubeStudio
    )
}

/// The firewall hint for `ports` on `os`.
fn firewall(os: Os, ports: &[u16]) -> Hint {
    let words = port_words(ports);
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    match os {
        Os::Linux => {
            let mut commands: Vec<String> = list
                .chunks(UFW_MAX_PORTS)
                .map(|chunk| format!("sudo ufw allow {}/udp", chunk.join(",")))
                .collect();
            // One --add-port per port; bash, zsh and fish expand `{a,b}` into one each.
            let ports = match list.as_slice() {
                [one] => one.clone(),
                many => format!("{{{}}}", many.join(",")),
            };
            commands.push(format!(
                "sudo firewall-cmd --permanent --add-port={ports}/udp"
            ));
            commands.push("sudo firewall-cmd --reload".to_string());
            Hint {
                kind: HintKind::Firewall,
                text: format!("The firewall lets UDP in on {words} (ufw, or firewalld):"),
                commands,
            }
        }
        Os::Windows => Hint {
            kind: HintKind::Firewall,
            text: format!(
                "Windows Firewall lets UDP in on {words}: allow facewire when Windows asks on \
                 first start, with the Wi-Fi a Private network; or, as administrator:"
            ),
            commands: vec![format!(
                "netsh advfirewall firewall add rule name=\"facewire\" dir=in action=allow \
                 protocol=UDP localport={}",
                list.join(",")
            )],
        },
        Os::MacOs => Hint::new(
            HintKind::Firewall,
            format!(
                "The macOS firewall lets facewire in (UDP {words}): System Settings > Network > \
                 Firewall > Options, allow incoming connections for facewire."
            ),
        ),
    }
}

/// What to check, in the order to check it. Empty before [`NO_DATA_HINT`] has passed and once
/// any frame has arrived. With no datagram at all: the same network, the firewall (commands
/// for the listened ports on `os`), the app's target, and for the apps facewire asks, the
/// configured phone's address. When datagrams arrive but give no frame: the port they belong on, the
/// `[ingest]` key that turns their listener on, or the `ingest.allow` entry their sender needs.
pub fn hints(input: &HintInput<'_>) -> Vec<Hint> {
    if input.frames > 0 || input.elapsed < NO_DATA_HINT {
        return Vec::new();
    }
    let reports = input.reports;
    let mut out: Vec<Hint> = Vec::new();
    let mut push = |hint: Hint| {
        if !out.contains(&hint) {
            out.push(hint);
        }
    };
    if reports.iter().all(|r| r.datagrams == 0) {
        if !reports.is_empty() && reports.iter().all(|r| r.addr.ip().is_loopback()) {
            push(Hint::new(
                HintKind::LoopbackOnly,
                format!(
                    "facewire listens on this PC only ({}): listen on 0.0.0.0 instead, in \
                     [ingest] of facewire.toml",
                    reports[0].addr.ip()
                ),
            ));
            return out;
        }
        let primary = input
            .addresses
            .iter()
            .find(|a| a.kind == AddressKind::Lan)
            .or_else(|| {
                input
                    .addresses
                    .iter()
                    .find(|a| a.kind != AddressKind::Loopback)
            });
        push(Hint::new(
            HintKind::SameNetwork,
            match primary {
                Some(a) => format!(
                    "Same Wi-Fi as this PC ({})? Not a guest network, no VPN.",
                    a.ip
                ),
                None => "This PC has no address a phone can reach: connect it to the phone's \
                         Wi-Fi."
                    .to_string(),
            },
        ));
        let mut ports: Vec<u16> = Vec::new();
        for r in reports.iter().filter(|r| !r.addr.ip().is_loopback()) {
            if !ports.contains(&r.addr.port()) {
                ports.push(r.addr.port());
            }
        }
        if !ports.is_empty() {
            push(firewall(input.os, &ports));
        }
        let mut pushed: Vec<u16> = Vec::new();
        for r in reports.iter().filter(|r| !asked(r.kind)) {
            if !pushed.contains(&r.addr.port()) {
                pushed.push(r.addr.port());
            }
        }
        if !pushed.is_empty() {
            let ip = primary.map_or_else(|| "this PC's address".to_string(), |a| a.ip.to_string());
            push(Hint::new(
                HintKind::Target,
                format!("App target: {ip}, {} (not an old IP).", port_words(&pushed)),
            ));
        }
        let asked_apps: Vec<&str> = reports
            .iter()
            .filter(|r| asked(r.kind))
            .map(|r| app_label(r.kind))
            .fold(Vec::new(), |mut names, name| {
                if !names.contains(&name) {
                    names.push(name);
                }
                names
            });
        // Without a phone address the card's rows already say to start with --phone.
        if let (Some(phone), false) = (input.phone, asked_apps.is_empty()) {
            push(Hint::new(
                HintKind::AskPhone,
                format!(
                    "{}: facewire asks {phone} for data; that must be the address the app \
                     shows, with the app open on the phone.",
                    asked_apps.join(", ")
                ),
            ));
        }
        return out;
    }
    for r in reports {
        let port = r.addr.port();
        let label = app_label(r.kind);
        if r.not_allowed > 0 {
            let sender = r
                .last_not_allowed
                .map_or_else(|| "a sender".to_string(), |s| s.ip().to_string());
            push(Hint::new(
                HintKind::NotAllowed,
                format!(
                    "Port {port} turned away {sender}: it is not in ingest.allow. Add it to \
                     allow in [ingest] of facewire.toml, or empty the list."
                ),
            ));
        }
        if r.undecoded == 0 {
            continue;
        }
        match r.looks_like {
            Some(p) if !p.same_family(r.kind) => {
                let app = app_label(p);
                let home = reports.iter().find(|o| o.kind.same_family(p));
                push(match home {
                    Some(home) => {
                        let to = home.addr.port();
                        let text = match p {
                            Protocol::LiveLinkFace => format!(
                                "Port {port} hears Live Link Face packets: set Live Link Face's \
                                 target port to {to}."
                            ),
                            Protocol::Vmc | Protocol::FaceCap => format!(
                                "Port {port} hears {app} packets: set the app's port to {to}."
                            ),
                            Protocol::OpenSeeFace => format!(
                                "Port {port} hears OpenSeeFace packets: start facetracker.py \
                                 with --port {to}."
                            ),
                            _ => format!(
                                "Port {port} hears {app} packets: facewire hears {app} on port \
                                 {to}; send there."
                            ),
                        };
                        Hint::new(HintKind::WrongPort, text)
                    }
                    None => Hint::new(
                        HintKind::NotListening,
                        format!(
                            "Port {port} hears {app} packets, but facewire does not listen for \
                             {app}: add {} = [\"0.0.0.0:{}\"] to [ingest] in facewire.toml.",
                            ingest_key(p),
                            default_port(p)
                        ),
                    ),
                });
            }
            Some(_) => push(Hint::new(
                HintKind::Undecoded,
                format!(
                    "Port {port} hears {label} packets that do not decode: check the app's \
                     version and its data format setting."
                ),
            )),
            None => push(Hint::new(
                HintKind::Undecoded,
                format!(
                    "Port {port} hears packets that are not {label}: check which app sends to \
                     this PC, and on which port."
                ),
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::path::Path;

    use super::*;

    fn report(kind: Protocol, port: u16) -> ListenerReport {
        ListenerReport::new(kind, SocketAddr::from(([0, 0, 0, 0], port)))
    }

    fn all_reports() -> Vec<ListenerReport> {
        Protocol::FAMILIES
            .into_iter()
            .map(|p| report(p, default_port(p)))
            .collect()
    }

    #[test]
    fn the_readmes_firewall_commands_are_the_programs() {
        let readme =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                .unwrap();
        let mut ports: Vec<u16> = Vec::new();
        for r in all_reports() {
            if !ports.contains(&r.addr.port()) {
                ports.push(r.addr.port());
            }
        }
        for os in [Os::Linux, Os::Windows] {
            for command in firewall(os, &ports).commands {
                assert!(
                    readme.contains(&format!("`{command}")) || readme.contains(&command),
                    "the README does not give `{command}`"
                );
            }
        }
    }

    fn addresses() -> Vec<LanAddress> {
        vec![
            LanAddress {
                ip: "172.17.0.1".parse().unwrap(),
                interface: "docker0".into(),
                kind: AddressKind::Virtual,
            },
            LanAddress {
                ip: "192.168.1.20".parse().unwrap(),
                interface: "wlan0".into(),
                kind: AddressKind::Lan,
            },
        ]
    }

    fn at(secs: u64, frames: u64, reports: &[ListenerReport], os: Os) -> Vec<Hint> {
        let addresses = addresses();
        hints(&HintInput {
            elapsed: Duration::from_secs(secs),
            frames,
            reports,
            addresses: &addresses,
            phone: None,
            os,
        })
    }

    fn kinds(hints: &[Hint]) -> Vec<HintKind> {
        hints.iter().map(|h| h.kind).collect()
    }

    fn find(hints: &[Hint], kind: HintKind) -> &Hint {
        hints
            .iter()
            .find(|h| h.kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} hint in {hints:?}"))
    }

    #[test]
    fn nothing_before_the_wait_or_once_frames_flow() {
        let reports = all_reports();
        assert!(at(0, 0, &reports, Os::Linux).is_empty());
        assert!(at(4, 0, &reports, Os::Linux).is_empty());
        assert!(!at(5, 0, &reports, Os::Linux).is_empty());
        assert!(at(60, 1, &reports, Os::Linux).is_empty());
    }

    #[test]
    fn silence_asks_for_network_firewall_and_target() {
        let list = at(6, 0, &all_reports(), Os::Linux);
        assert_eq!(
            kinds(&list),
            [HintKind::SameNetwork, HintKind::Firewall, HintKind::Target],
            "no phone hint: without --phone the card's rows say it"
        );
        assert!(
            find(&list, HintKind::SameNetwork)
                .text
                .contains("(192.168.1.20)"),
            "the LAN address, not the virtual one"
        );
        let target = &find(&list, HintKind::Target).text;
        assert!(target.contains("192.168.1.20"), "{target}");
        assert_eq!(
            target,
            "App target: 192.168.1.20, ports 39539, 11111 and 11573 (not an old IP)."
        );
    }

    #[test]
    fn linux_firewall_commands_name_only_the_listened_ports() {
        let reports = [
            report(Protocol::Vmc, 39539),
            report(Protocol::LiveLinkFace, 11111),
        ];
        let fw = find(&at(6, 0, &reports, Os::Linux), HintKind::Firewall).clone();
        assert_eq!(
            fw.commands,
            [
                "sudo ufw allow 39539,11111/udp",
                "sudo firewall-cmd --permanent --add-port={39539,11111}/udp",
                "sudo firewall-cmd --reload",
            ]
        );
        assert!(fw.text.contains("ports 39539 and 11111"));
        let one = find(
            &at(6, 0, &[report(Protocol::Vmc, 39539)], Os::Linux),
            HintKind::Firewall,
        )
        .clone();
        assert_eq!(
            one.commands,
            [
                "sudo ufw allow 39539/udp",
                "sudo firewall-cmd --permanent --add-port=39539/udp",
                "sudo firewall-cmd --reload",
            ]
        );
        // Loopback listeners need no rule; ports are listed once.
        let mut mixed = vec![report(Protocol::Vmc, 39539), report(Protocol::Vmc, 39539)];
        mixed.push(ListenerReport::new(
            Protocol::LiveLinkFace,
            "127.0.0.1:11111".parse().unwrap(),
        ));
        let fw = find(&at(6, 0, &mixed, Os::Linux), HintKind::Firewall).clone();
        assert_eq!(fw.commands[0], "sudo ufw allow 39539/udp");
        // ufw takes 15 ports per rule.
        let many: Vec<ListenerReport> = (0..17).map(|i| report(Protocol::Vmc, 40000 + i)).collect();
        let fw = find(&at(6, 0, &many, Os::Linux), HintKind::Firewall).clone();
        assert_eq!(fw.commands.len(), 4);
        assert!(fw.commands[0].ends_with(",40014/udp"));
        assert_eq!(fw.commands[1], "sudo ufw allow 40015,40016/udp");
    }

    #[test]
    fn windows_and_macos_firewalls_get_their_own_instructions() {
        let reports = all_reports();
        let win = find(&at(6, 0, &reports, Os::Windows), HintKind::Firewall).clone();
        assert_eq!(
            win.commands,
            [
                "netsh advfirewall firewall add rule name=\"facewire\" dir=in action=allow \
              protocol=UDP localport=39539,49983,49993,11111,11125,11573"
            ]
        );
        assert!(win
            .text
            .contains("allow facewire when Windows asks on first start"));
        let mac = find(&at(6, 0, &reports, Os::MacOs), HintKind::Firewall).clone();
        assert!(mac.commands.is_empty());
        assert!(mac
            .text
            .contains("System Settings > Network > Firewall > Options"));
        assert!(mac
            .text
            .contains("39539, 49983, 49993, 11111, 11125 and 11573"));
        assert!(matches!(Os::current(), Os::Linux | Os::MacOs | Os::Windows));
    }

    #[test]
    fn a_known_phone_is_named_in_the_ask_hint() {
        let addresses = addresses();
        let list = hints(&HintInput {
            elapsed: Duration::from_secs(9),
            frames: 0,
            reports: &[report(Protocol::VTubeStudio, 11125)],
            addresses: &addresses,
            phone: Some("192.168.1.31".parse().unwrap()),
            os: Os::Linux,
        });
        assert_eq!(
            kinds(&list),
            [
                HintKind::SameNetwork,
                HintKind::Firewall,
                HintKind::AskPhone
            ],
            "no target hint: the phone sends where it is asked to"
        );
        assert!(list[2].text.contains("facewire asks 192.168.1.31"));
    }

    #[test]
    fn packets_on_the_wrong_port_name_the_right_one() {
        let mut reports = all_reports();
        reports[0].datagrams = 40;
        reports[0].undecoded = 40;
        reports[0].looks_like = Some(Protocol::LiveLinkFace);
        let list = at(6, 0, &reports, Os::Linux);
        assert_eq!(
            list,
            [Hint::new(
                HintKind::WrongPort,
                "Port 39539 hears Live Link Face packets: set Live Link Face's target port to \
                 11111."
                    .into()
            )]
        );
        // VMC on the Live Link Face port.
        let mut reports = all_reports();
        reports[3].datagrams = 3;
        reports[3].undecoded = 3;
        reports[3].looks_like = Some(Protocol::Vmc);
        assert_eq!(
            at(6, 0, &reports, Os::Linux)[0].text,
            "Port 11111 hears VMC packets: set the app's port to 39539."
        );
        // OpenSeeFace's tracker sending to the VMC port.
        let mut reports = all_reports();
        reports[0].datagrams = 30;
        reports[0].undecoded = 30;
        reports[0].looks_like = Some(Protocol::OpenSeeFace);
        assert_eq!(
            at(6, 0, &reports, Os::Linux)[0].text,
            "Port 39539 hears OpenSeeFace packets: start facetracker.py with --port 11573."
        );
    }

    #[test]
    fn packets_for_an_app_not_listened_for_name_the_key() {
        let mut reports = vec![report(Protocol::Vmc, 39539)];
        reports[0].datagrams = 10;
        reports[0].undecoded = 10;
        reports[0].looks_like = Some(Protocol::VTubeStudio);
        let list = at(6, 0, &reports, Os::Windows);
        assert_eq!(kinds(&list), [HintKind::NotListening]);
        assert_eq!(
            list[0].text,
            "Port 39539 hears VTube Studio/MeowFace packets, but facewire does not listen for \
             VTube Studio/MeowFace: add vtubestudio = [\"0.0.0.0:11125\"] to [ingest] in \
             facewire.toml."
        );
    }

    #[test]
    fn unknown_packets_and_refused_senders() {
        let mut reports = all_reports();
        reports[1].datagrams = 5;
        reports[1].undecoded = 5;
        reports[2].datagrams = 7;
        reports[2].not_allowed = 7;
        reports[2].last_not_allowed = Some("192.168.1.77:50000".parse().unwrap());
        reports[3].datagrams = 2;
        reports[3].undecoded = 2;
        reports[3].looks_like = Some(Protocol::LiveLinkFace);
        let list = at(30, 0, &reports, Os::MacOs);
        assert_eq!(
            kinds(&list),
            [
                HintKind::Undecoded,
                HintKind::NotAllowed,
                HintKind::Undecoded
            ]
        );
        assert_eq!(
            list[0].text,
            "Port 49983 hears packets that are not iFacialMocap: check which app sends to this \
             PC, and on which port."
        );
        assert_eq!(
            list[1].text,
            "Port 49993 turned away 192.168.1.77: it is not in ingest.allow. Add it to allow in \
             [ingest] of facewire.toml, or empty the list."
        );
        assert!(list[2]
            .text
            .contains("Live Link Face packets that do not decode"));
        // Counts grow, the hints stay the same: nothing volatile in the text.
        reports[1].undecoded = 500;
        reports[2].not_allowed = 900;
        assert_eq!(at(31, 0, &reports, Os::MacOs), list);
    }

    #[test]
    fn listening_on_loopback_only_is_the_one_hint() {
        let reports = [ListenerReport::new(
            Protocol::Vmc,
            "127.0.0.1:39539".parse().unwrap(),
        )];
        let list = at(6, 0, &reports, Os::Linux);
        assert_eq!(kinds(&list), [HintKind::LoopbackOnly]);
        assert!(list[0].text.contains("(127.0.0.1)"));
    }

    #[test]
    fn without_a_reachable_address_the_network_hint_says_so() {
        let list = hints(&HintInput {
            elapsed: NO_DATA_HINT,
            frames: 0,
            reports: &all_reports(),
            addresses: &[],
            phone: None,
            os: Os::Linux,
        });
        assert!(list[0]
            .text
            .starts_with("This PC has no address a phone can reach"));
        assert!(find(&list, HintKind::Target)
            .text
            .starts_with("App target: this PC's address"));
    }
}
