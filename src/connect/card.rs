//! The connect card's contents: this PC's addresses and, per listening app, what to enter in
//! it. The terminal prints [`ConnectCard::terminal_text`]; the stage draws the same rows.

use std::net::{IpAddr, SocketAddr};

use super::hints::Hint;
use super::lan::{AddressKind, LanAddress};
use crate::arkit::Protocol;
use crate::ingest::BoundListener;
use crate::text::wrap_chars;

/// The card's title.
pub const TITLE: &str = "Connect your phone";

/// What the card says in place of this PC's address when it knows none.
pub const PC_IP_PLACEHOLDER: &str = "THIS-PC-IP";

/// The widest terminal line the card aims for (commands in hints are never broken).
const TERMINAL_COLUMNS: usize = 100;

/// One listening app: its name, what to enter in it and the port facewire hears it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRow {
    /// The protocol the row is about (VMC and Face Cap each get a row for the OSC socket).
    pub protocol: Protocol,
    /// The app's name as its users know it (`Live Link Face`).
    pub app: &'static str,
    /// What to enter or do in the app (`Settings > Live Link > Add Target: 192.168.1.20, port
    /// 11111`).
    pub enter: String,
    /// The UDP port facewire listens on for it.
    pub port: u16,
    /// This PC's address the row names; `None` when none is known (the row says
    /// [`PC_IP_PLACEHOLDER`]).
    pub pc_ip: Option<IpAddr>,
}

/// The line under the phone apps for people without a phone.
pub const NO_PHONE: &str =
    "No phone? Start facewire with --webcam to track a webcam (facewire webcam --list).";

/// [`NO_PHONE`] as short as the stage's card has room for, beside its title.
pub const NO_PHONE_SHORT: &str = "No phone? Try --webcam";

/// The webcam card's title.
pub const WEBCAM_TITLE: &str = "Webcam";

/// What a run that follows a webcam shows until the first face: the camera and its frame rate
/// and the tracker's, or what keeps the camera away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebcamCard {
    /// The camera open now, on one line (name, device, size, frame rate, format).
    pub camera: Option<String>,
    /// The camera's frames a second and the tracker's, on one line.
    pub rates: Option<String>,
    /// Why there is no camera, or what to do while no face is in view.
    pub problem: Option<String>,
}

/// What the phone app needs from this PC: the addresses to type, one row per listening app,
/// notes about listeners the phone cannot reach, and the hints once data is overdue. A run on
/// a webcam has a card of its own ([`ConnectCard::webcam`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectCard {
    addresses: Vec<LanAddress>,
    notes: Vec<String>,
    apps: Vec<AppRow>,
    ports: Vec<u16>,
    phone: Option<IpAddr>,
    hints: Vec<Hint>,
    webcam: Option<WebcamCard>,
}

/// The address a listener bound to `addr` hears on, in the form the card shows.
fn bound_address(addr: SocketAddr, lan: &[LanAddress]) -> LanAddress {
    let ip = addr.ip();
    lan.iter()
        .find(|a| a.ip == ip)
        .cloned()
        .unwrap_or_else(|| LanAddress {
            ip,
            interface: String::new(),
            kind: match ip {
                _ if ip.is_loopback() => AddressKind::Loopback,
                IpAddr::V4(v4) if v4.is_link_local() => AddressKind::LinkLocal,
                _ => AddressKind::Lan,
            },
        })
}

/// The addresses a listener on `addr` can be reached at from the phone's side: for all
/// interfaces, every address but loopback (IPv4 only for `0.0.0.0`); else the bound one.
fn reachable(addr: SocketAddr, lan: &[LanAddress]) -> Vec<LanAddress> {
    let ip = addr.ip();
    if ip.is_unspecified() {
        lan.iter()
            .filter(|a| a.kind != AddressKind::Loopback && (ip.is_ipv6() || a.ip.is_ipv4()))
            .cloned()
            .collect()
    } else {
        vec![bound_address(addr, lan)]
    }
}

/// What a card with a control panel says to do with the phone's address, for the apps that
/// need facewire to ask for data.
const ASK_IN_PANEL: &str = "type the address the app shows in the panel (or --phone IP)";

/// The same, for a run without a panel (the relay, calibration, a daemon).
const ASK_WITHOUT_PANEL: &str =
    "start facewire with --phone IP, the address the app shows (or set phone under [ingest])";

/// What to enter in the app for `protocol`, with this PC's address `pc` and the `port`.
fn what_to_enter(protocol: Protocol, pc: &str, port: u16, phone: Option<IpAddr>) -> String {
    let ask = |extra: &str| match phone {
        Some(phone) => format!("{extra}facewire asks {phone} for data; keep the app open"),
        None => format!(
            "{}{ASK_IN_PANEL}",
            if extra.is_empty() {
                String::new()
            } else {
                extra.replace("; ", ", then ")
            }
        ),
    };
    match protocol {
        Protocol::Vmc => {
            format!("Waidayo, VSeeFace, iFacialMocap PC: send to {pc} port {port}")
        }
        Protocol::FaceCap => format!("OSC host {pc}, port {port}"),
        Protocol::LiveLinkFace => {
            format!("Settings > Live Link > Add Target: {pc}, port {port}")
        }
        Protocol::IFacialMocap | Protocol::Facemotion3d => ask(""),
        Protocol::VTubeStudio => ask("turn on 3rd Party PC Clients; "),
        Protocol::OpenSeeFace => {
            format!("python facetracker.py -c 0 --ip {pc} --port {port}")
        }
        // The webcam has no listener, so no row; its settings are under [webcam].
        Protocol::Webcam => "set [webcam] device, or run with --webcam".to_string(),
    }
}

/// The name of `protocol`'s app on the card.
fn app_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Vmc => "VMC senders",
        Protocol::FaceCap => "Face Cap",
        Protocol::LiveLinkFace => "Live Link Face",
        Protocol::IFacialMocap => "iFacialMocap",
        Protocol::Facemotion3d => "Facemotion3d",
        Protocol::VTubeStudio => "VTube Studio/MeowFace",
        Protocol::OpenSeeFace => "OpenSeeFace",
        Protocol::Webcam => "Webcam",
    }
}

impl ConnectCard {
    /// The card for facewire listening on `listeners`, with this PC's addresses `lan` (as
    /// [`super::lan_addresses`] orders them) and the configured phone (`ingest.phone`,
    /// `--phone`). A listener on all interfaces is reached at the LAN addresses (IPv4 ones for
    /// `0.0.0.0`); one bound to an address at that address; one bound to loopback gets a note
    /// that it hears this PC only.
    pub fn new(listeners: &[BoundListener], lan: &[LanAddress], phone: Option<IpAddr>) -> Self {
        let mut chosen: Vec<LanAddress> = Vec::new();
        for listener in listeners {
            for address in reachable(listener.addr, lan) {
                if !chosen.iter().any(|c| c.ip == address.ip) {
                    chosen.push(address);
                }
            }
        }
        // LAN order first; addresses the list lacks go after those of their kind.
        let place = |a: &LanAddress| {
            let index = lan.iter().position(|l| l.ip == a.ip).unwrap_or(lan.len());
            (a.kind, index)
        };
        chosen.sort_by_key(place);

        let mut notes = Vec::new();
        let mut apps: Vec<AppRow> = Vec::new();
        let mut ports = Vec::new();
        for listener in listeners {
            let port = listener.addr.port();
            if !ports.contains(&port) {
                ports.push(port);
            }
            let ip = listener.addr.ip();
            if ip.is_loopback() {
                notes.push(format!(
                    "port {port} listens on {ip} only: it hears apps on this PC, not the phone"
                ));
            }
            let pc_ip = reachable(listener.addr, &chosen).first().map(|a| a.ip);
            let pc = pc_ip.map_or_else(|| PC_IP_PLACEHOLDER.to_string(), |ip| ip.to_string());
            let protocols: &[Protocol] = match listener.kind.family() {
                Protocol::Vmc | Protocol::FaceCap => &[Protocol::Vmc, Protocol::FaceCap],
                Protocol::IFacialMocap => &[Protocol::IFacialMocap],
                Protocol::Facemotion3d => &[Protocol::Facemotion3d],
                Protocol::LiveLinkFace => &[Protocol::LiveLinkFace],
                Protocol::VTubeStudio => &[Protocol::VTubeStudio],
                Protocol::OpenSeeFace => &[Protocol::OpenSeeFace],
                Protocol::Webcam => &[],
            };
            for &protocol in protocols {
                let row = AppRow {
                    protocol,
                    app: app_name(protocol),
                    enter: what_to_enter(protocol, &pc, port, phone),
                    port,
                    pc_ip,
                };
                if !apps.contains(&row) {
                    apps.push(row);
                }
            }
        }
        if listeners.is_empty() {
            notes.push("facewire listens on no port: see [ingest] in facewire.toml".to_string());
        } else if !chosen.iter().any(|a| a.kind != AddressKind::Loopback) {
            notes
                .push("no network address found: connect this PC to the phone's Wi-Fi".to_string());
        }
        ConnectCard {
            addresses: chosen,
            notes,
            apps,
            ports,
            phone,
            hints: Vec::new(),
            webcam: None,
        }
    }

    /// The card of a run that follows a webcam: no addresses or apps, the camera's state.
    pub fn webcam(card: WebcamCard) -> Self {
        ConnectCard {
            addresses: Vec::new(),
            notes: Vec::new(),
            apps: Vec::new(),
            ports: Vec::new(),
            phone: None,
            hints: Vec::new(),
            webcam: Some(card),
        }
    }

    /// The webcam's state, on a webcam run's card.
    pub fn webcam_state(&self) -> Option<&WebcamCard> {
        self.webcam.as_ref()
    }

    /// The card's title, [`TITLE`] ([`WEBCAM_TITLE`] on a webcam run).
    pub fn title(&self) -> &'static str {
        if self.webcam.is_some() {
            WEBCAM_TITLE
        } else {
            TITLE
        }
    }

    /// One line under the title: where the phone must be (or, on a webcam run, what happens).
    pub fn subtitle(&self) -> &'static str {
        if self.webcam.is_some() {
            "facewire reads 51 face shapes from the camera. Frames stay on this PC."
        } else {
            "Phone and PC on the same Wi-Fi. This PC's address:"
        }
    }

    /// The card of a run without a control panel: the apps that need facewire to ask for data
    /// say to start it with `--phone` or set `[ingest] phone`, not to type the address in a
    /// panel there is none of.
    pub fn without_panel(mut self) -> Self {
        for row in &mut self.apps {
            row.enter = row.enter.replace(ASK_IN_PANEL, ASK_WITHOUT_PANEL);
        }
        self
    }

    /// The addresses the phone can reach facewire at, best first (see [`super::order`]).
    pub fn addresses(&self) -> &[LanAddress] {
        &self.addresses
    }

    /// The address to show large: the first of [`ConnectCard::addresses`].
    pub fn primary_address(&self) -> Option<&LanAddress> {
        self.addresses.first()
    }

    /// Every address as one line each ([`LanAddress::describe`]), best first.
    pub fn address_lines(&self) -> Vec<String> {
        self.addresses.iter().map(LanAddress::describe).collect()
    }

    /// Notes about the listeners: bound to loopback, no address found, nothing to listen on.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// One row per listening app, in listener order.
    pub fn apps(&self) -> &[AppRow] {
        &self.apps
    }

    /// Every port facewire listens on, once each, in listener order.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The phone facewire asks for data, when configured.
    pub fn phone(&self) -> Option<IpAddr> {
        self.phone
    }

    /// What to check, when data is overdue (empty until then).
    pub fn hints(&self) -> &[Hint] {
        &self.hints
    }

    /// Replaces the hints.
    pub fn set_hints(&mut self, hints: Vec<Hint>) {
        self.hints = hints;
    }

    /// The card with `hints`.
    pub fn with_hints(mut self, hints: Vec<Hint>) -> Self {
        self.hints = hints;
        self
    }

    /// The hints as terminal lines: a heading, each hint wrapped, each command on a line of its
    /// own (never broken, so it can be copied). Empty without hints.
    pub fn hint_lines(&self) -> Vec<String> {
        hint_lines(&self.hints)
    }

    /// The card as a compact block for the terminal: no colours, lines of at most about 100
    /// columns (the hints' commands excepted), no trailing newline.
    pub fn terminal_text(&self) -> String {
        let mut out = vec![format!("{TITLE} (phone and PC on the same Wi-Fi)")];
        let label = "  This PC  ";
        let indent = " ".repeat(label.len());
        match self.address_lines().split_first() {
            Some((first, rest)) => {
                out.push(format!("{label}{first}"));
                out.extend(rest.iter().map(|line| format!("{indent}{line}")));
            }
            None => out.push(format!("{label}{PC_IP_PLACEHOLDER} (no address found)")),
        }
        for note in &self.notes {
            for (i, line) in wrap_chars(note, TERMINAL_COLUMNS - 4)
                .into_iter()
                .enumerate()
            {
                out.push(format!("{}{line}", if i == 0 { "  ! " } else { "    " }));
            }
        }
        let name_width = self.apps.iter().map(|r| r.app.len()).max().unwrap_or(0);
        // "  NAME  UDP 39539  " before the wrapped instruction.
        let lead = 2 + name_width + 2 + 9 + 2;
        for row in &self.apps {
            let lines = wrap_chars(&row.enter, TERMINAL_COLUMNS.saturating_sub(lead).max(20));
            for (i, line) in lines.into_iter().enumerate() {
                if i == 0 {
                    let port = format!("UDP {}", row.port);
                    out.push(format!("  {:name_width$}  {port:9}  {line}", row.app));
                } else {
                    out.push(format!("{}{line}", " ".repeat(lead)));
                }
            }
        }
        if !self.apps.is_empty() {
            out.push(format!("  {NO_PHONE}"));
        }
        out.extend(self.hint_lines());
        out.join("\n")
    }
}

/// `hints` as terminal lines (see [`ConnectCard::hint_lines`]).
pub(crate) fn hint_lines(hints: &[Hint]) -> Vec<String> {
    if hints.is_empty() {
        return Vec::new();
    }
    let mut out = vec!["  No face data yet. Check:".to_string()];
    for hint in hints {
        for (i, line) in wrap_chars(&hint.text, TERMINAL_COLUMNS - 6)
            .into_iter()
            .enumerate()
        {
            out.push(format!("{}{line}", if i == 0 { "  - " } else { "    " }));
        }
        out.extend(hint.commands.iter().map(|c| format!("      {c}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::hints::HintKind;
    use crate::ingest::default_port;

    fn lan() -> Vec<LanAddress> {
        let entry = |ip: &str, name: &str, kind| LanAddress {
            ip: ip.parse().unwrap(),
            interface: name.into(),
            kind,
        };
        vec![
            entry("192.168.1.20", "wlan0", AddressKind::Lan),
            entry("2a02:810d:1:2::20", "wlan0", AddressKind::Lan),
            entry("172.17.0.1", "docker0", AddressKind::Virtual),
            entry("127.0.0.1", "lo", AddressKind::Loopback),
        ]
    }

    fn listener(kind: Protocol, addr: &str) -> BoundListener {
        BoundListener {
            kind,
            addr: addr.parse().unwrap(),
        }
    }

    fn all_listeners() -> Vec<BoundListener> {
        Protocol::FAMILIES
            .into_iter()
            .map(|p| listener(p, &format!("0.0.0.0:{}", default_port(p))))
            .collect()
    }

    fn row(card: &ConnectCard, protocol: Protocol) -> &AppRow {
        card.apps()
            .iter()
            .find(|r| r.protocol == protocol)
            .unwrap_or_else(|| panic!("no row for {protocol}"))
    }

    #[test]
    fn every_app_gets_its_own_instruction_with_this_pcs_address() {
        let card = ConnectCard::new(&all_listeners(), &lan(), None);
        let apps: Vec<&str> = card.apps().iter().map(|r| r.app).collect();
        assert_eq!(
            apps,
            [
                "VMC senders",
                "Face Cap",
                "iFacialMocap",
                "Facemotion3d",
                "Live Link Face",
                "VTube Studio/MeowFace",
                "OpenSeeFace"
            ]
        );
        assert_eq!(
            row(&card, Protocol::Vmc).enter,
            "Waidayo, VSeeFace, iFacialMocap PC: send to 192.168.1.20 port 39539"
        );
        assert_eq!(
            row(&card, Protocol::FaceCap).enter,
            "OSC host 192.168.1.20, port 39539"
        );
        assert_eq!(
            row(&card, Protocol::LiveLinkFace).enter,
            "Settings > Live Link > Add Target: 192.168.1.20, port 11111"
        );
        assert_eq!(row(&card, Protocol::LiveLinkFace).port, 11111);
        assert_eq!(
            row(&card, Protocol::IFacialMocap).enter,
            "type the address the app shows in the panel (or --phone IP)"
        );
        assert_eq!(
            row(&card, Protocol::VTubeStudio).enter,
            "turn on 3rd Party PC Clients, then type the address the app shows in the panel (or \
             --phone IP)"
        );
        assert_eq!(
            row(&card, Protocol::OpenSeeFace).enter,
            "python facetracker.py -c 0 --ip 192.168.1.20 --port 11573"
        );
        assert_eq!(row(&card, Protocol::OpenSeeFace).port, 11573);
        assert_eq!(card.ports(), [39539, 49983, 49993, 11111, 11125, 11573]);
        // Without a panel (the relay, calibration): --phone or [ingest] phone, never the panel.
        let daemon = card.clone().without_panel();
        for protocol in [Protocol::IFacialMocap, Protocol::VTubeStudio] {
            let enter = &row(&daemon, protocol).enter;
            assert!(
                enter.contains("--phone IP") && enter.contains("[ingest]"),
                "{enter}"
            );
            assert!(!enter.contains("panel"), "{enter}");
        }
        assert_eq!(
            row(&daemon, Protocol::LiveLinkFace).enter,
            row(&card, Protocol::LiveLinkFace).enter
        );
        // 0.0.0.0 hears IPv4 only; loopback is never offered to the phone.
        let ips: Vec<String> = card.addresses().iter().map(|a| a.ip.to_string()).collect();
        assert_eq!(ips, ["192.168.1.20", "172.17.0.1"]);
        assert_eq!(
            card.address_lines(),
            ["192.168.1.20 (wlan0)", "172.17.0.1 (docker0, virtual)"]
        );
        assert!(card.notes().is_empty());
        assert_eq!(card.title(), "Connect your phone");
    }

    #[test]
    fn a_known_phone_is_asked_for_data() {
        let phone: IpAddr = "192.168.1.31".parse().unwrap();
        let card = ConnectCard::new(&all_listeners(), &lan(), Some(phone));
        assert_eq!(
            row(&card, Protocol::Facemotion3d).enter,
            "facewire asks 192.168.1.31 for data; keep the app open"
        );
        assert_eq!(
            row(&card, Protocol::VTubeStudio).enter,
            "turn on 3rd Party PC Clients; facewire asks 192.168.1.31 for data; keep the app open"
        );
        assert_eq!(card.phone(), Some(phone));
    }

    #[test]
    fn a_listener_bound_to_one_address_shows_that_address() {
        let listeners = [
            listener(Protocol::Vmc, "10.0.0.7:39539"),
            listener(Protocol::LiveLinkFace, "[::]:11111"),
        ];
        let card = ConnectCard::new(&listeners, &lan(), None);
        assert_eq!(
            row(&card, Protocol::Vmc).pc_ip,
            Some("10.0.0.7".parse().unwrap())
        );
        // `::` hears every address; the IPv4 LAN address is still the one to type.
        assert_eq!(
            row(&card, Protocol::LiveLinkFace).enter,
            "Settings > Live Link > Add Target: 192.168.1.20, port 11111"
        );
        let ips: Vec<String> = card.addresses().iter().map(|a| a.ip.to_string()).collect();
        assert_eq!(
            ips,
            [
                "192.168.1.20",
                "2a02:810d:1:2::20",
                "10.0.0.7",
                "172.17.0.1"
            ]
        );
    }

    #[test]
    fn a_loopback_listener_says_it_hears_this_pc_only() {
        let card = ConnectCard::new(&[listener(Protocol::Vmc, "127.0.0.1:39539")], &lan(), None);
        assert_eq!(card.addresses().len(), 1);
        assert_eq!(card.addresses()[0].kind, AddressKind::Loopback);
        assert_eq!(
            card.notes(),
            [
                "port 39539 listens on 127.0.0.1 only: it hears apps on this PC, not the phone",
                "no network address found: connect this PC to the phone's Wi-Fi",
            ]
        );
        assert!(card
            .terminal_text()
            .contains("! port 39539 listens on 127.0.0.1 only"));
    }

    #[test]
    fn without_any_address_the_card_says_so() {
        let card = ConnectCard::new(&all_listeners(), &[], None);
        assert!(card.addresses().is_empty());
        assert_eq!(row(&card, Protocol::Vmc).pc_ip, None);
        assert!(row(&card, Protocol::FaceCap)
            .enter
            .contains(PC_IP_PLACEHOLDER));
        assert_eq!(
            card.notes(),
            ["no network address found: connect this PC to the phone's Wi-Fi"]
        );
        let none = ConnectCard::new(&[], &lan(), None);
        assert!(none.apps().is_empty());
        assert_eq!(
            none.notes(),
            ["facewire listens on no port: see [ingest] in facewire.toml"]
        );
    }

    #[test]
    fn terminal_text_is_an_aligned_block_within_100_columns() {
        let card = ConnectCard::new(&all_listeners(), &lan(), None);
        let text = card.terminal_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Connect your phone (phone and PC on the same Wi-Fi)"
        );
        assert_eq!(lines[1], "  This PC  192.168.1.20 (wlan0)");
        assert_eq!(lines[2], "           172.17.0.1 (docker0, virtual)");
        for line in &lines {
            assert!(line.chars().count() <= 100, "too wide: {line}");
            assert!(!line.contains('\u{1b}'), "no escape codes");
            assert_eq!(line.trim_end(), *line, "no trailing spaces");
        }
        // Every app row starts its instruction in the same column.
        let columns: Vec<usize> = card
            .apps()
            .iter()
            .map(|r| {
                let line = lines
                    .iter()
                    .find(|l| l.trim_start().starts_with(r.app))
                    .expect("row printed");
                line.find("UDP ").expect("port column")
            })
            .collect();
        assert!(columns.windows(2).all(|w| w[0] == w[1]), "{columns:?}");
        assert!(text.contains("VTube Studio/MeowFace  UDP 11125"));
        // A wrapped instruction continues under its first line.
        let vts = lines
            .iter()
            .position(|l| l.contains("VTube Studio/MeowFace"))
            .unwrap();
        let lead = lines[vts].find("turn on").unwrap();
        assert!(lines[vts + 1].starts_with(&" ".repeat(lead)));
        assert!(!lines[vts + 1].trim().is_empty());
    }

    #[test]
    fn hints_are_appended_to_the_block() {
        let hint = Hint {
            kind: HintKind::Firewall,
            text: "Let UDP in on port 39539 through the firewall:".into(),
            commands: vec!["sudo ufw allow 39539/udp".into()],
        };
        let card = ConnectCard::new(&all_listeners(), &lan(), None).with_hints(vec![hint]);
        let text = card.terminal_text();
        assert!(text.ends_with(
            "  No face data yet. Check:\n  - Let UDP in on port 39539 through the firewall:\n      \
             sudo ufw allow 39539/udp"
        ));
        assert_eq!(card.hint_lines().len(), 3);
        let mut plain = card.clone();
        plain.set_hints(Vec::new());
        assert!(plain.hint_lines().is_empty());
        assert!(!plain.terminal_text().contains("No face data"));
    }
}
