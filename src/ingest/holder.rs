//! Who holds a UDP port: the process found through `/proc` on Linux, and the programs that
//! usually listen on the ports facewire uses.
//!
//! The lookup reads `/proc/net/udp` and `/proc/net/udp6` for sockets bound to the port, then the
//! `/proc/<pid>/fd` links for one of their inodes (`socket:[inode]`). Only processes whose file
//! descriptors this user may read are found; unreadable entries are skipped and the work is
//! bounded. The parsing is in pure functions, tested on sample text.

// The `/proc` lookup exists on Linux alone; elsewhere only the usual holders are named.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::fmt;

/// The most bytes read from one `/proc/net/udp*` table.
const MAX_TABLE_BYTES: u64 = 4 << 20;

/// The most processes looked at.
const MAX_PROCESSES: usize = 65_536;

/// The most file-descriptor links read over all processes.
const MAX_LINKS: usize = 262_144;

/// The most socket inodes looked for (several sockets may share a port).
const MAX_INODES: usize = 16;

/// The length at which Linux truncates `/proc/<pid>/comm`.
const COMM_LEN: usize = 15;

/// A process that holds a socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHolder {
    /// Its process id.
    pub pid: u32,
    /// Its name: `/proc/<pid>/comm`, or the program file's name when `comm` is truncated.
    pub name: String,
}

impl PortHolder {
    /// Whether this is the current process.
    pub fn is_this_process(&self) -> bool {
        self.pid == std::process::id()
    }
}

impl fmt::Display for PortHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (pid {})", self.name, self.pid)
    }
}

/// The programs that usually listen on `port`, for a message when the holder cannot be named.
pub fn usual_holder(port: u16) -> Option<&'static str> {
    Some(match port {
        39539 => {
            "a VMC receiver: another facewire, VSeeFace, VNyan, Warudo or VirtualMotionCapture"
        }
        39540 => "VirtualMotionCapture (its own VMC port)",
        49983 => "an iFacialMocap receiver: VSeeFace, Warudo or another facewire",
        49993 | 50003 => "a Facemotion3d receiver: another facewire, or Facemotion3d's PC tools",
        11111 => "a Live Link Face receiver: Unreal Engine or another facewire",
        11125 => "a VTube Studio client: VTube Studio on this PC or another facewire",
        11573 => "an OpenSeeFace receiver: VSeeFace (its own webcam tracker) or another facewire",
        _ => return None,
    })
}

/// The inodes of the sockets bound to local `port` in a `/proc/net/udp` or `/proc/net/udp6`
/// table (header line skipped; lines that do not parse are skipped), at most [`MAX_INODES`].
pub fn socket_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(table_entry)
        .filter(|&(p, inode)| p == port && inode != 0)
        .map(|(_, inode)| inode)
        .take(MAX_INODES)
        .collect()
}

/// The local port and inode of one table line: `sl local rem st tx:rx tr:tm retrnsmt uid
/// timeout inode ...`, the local address as hex `ADDR:PORT`.
fn table_entry(line: &str) -> Option<(u16, u64)> {
    let mut fields = line.split_whitespace();
    let local = fields.nth(1)?;
    let (_, port) = local.rsplit_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    // rem, st, tx:rx, tr:tm, retrnsmt, uid, timeout, then the inode.
    let inode = fields.nth(7)?.parse().ok()?;
    Some((port, inode))
}

/// The inode of a `/proc/<pid>/fd/*` link target `socket:[12345]`; `None` for anything else.
pub fn socket_link_inode(target: &str) -> Option<u64> {
    target
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// A process's name from its `comm` and `cmdline`: `comm` without its newline, or, when `comm`
/// is cut at 15 bytes, the file name of the program (`cmdline`'s first argument) it begins.
pub fn process_name(comm: &str, cmdline: &[u8]) -> String {
    let comm = comm.trim_end_matches('\n');
    if comm.len() >= COMM_LEN {
        let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
        let argv0 = String::from_utf8_lossy(argv0);
        let file = argv0.rsplit('/').next().unwrap_or_default();
        if file.len() > comm.len() && file.starts_with(comm) {
            return file.to_string();
        }
    }
    comm.to_string()
}

/// The process holding a UDP socket bound to `port`, when this system tells (Linux `/proc`, a
/// process whose descriptors this user may read). Bounded work; never panics.
#[cfg(target_os = "linux")]
pub fn udp_port_holder(port: u16) -> Option<PortHolder> {
    use std::io::Read;
    use std::path::Path;

    let mut inodes = Vec::new();
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        let mut text = String::new();
        let read = std::fs::File::open(table)
            .and_then(|f| f.take(MAX_TABLE_BYTES).read_to_string(&mut text));
        if read.is_ok() {
            inodes.extend(socket_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let mut links = 0usize;
    for entry in std::fs::read_dir("/proc").ok()?.take(MAX_PROCESSES) {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let Ok(fd) = fd else { continue };
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let found = target
                .to_str()
                .and_then(socket_link_inode)
                .is_some_and(|inode| inodes.contains(&inode));
            if found {
                let dir = Path::new("/proc").join(pid.to_string());
                let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                let mut cmdline = Vec::new();
                let _ = std::fs::File::open(dir.join("cmdline"))
                    .and_then(|f| f.take(4096).read_to_end(&mut cmdline));
                let name = process_name(&comm, &cmdline);
                let name = if name.is_empty() {
                    "a program".to_string()
                } else {
                    name
                };
                return Some(PortHolder { pid, name });
            }
        }
    }
    None
}

/// The process holding a UDP socket bound to `port`: not looked up on this system.
#[cfg(not(target_os = "linux"))]
pub fn udp_port_holder(_port: u16) -> Option<PortHolder> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/net/udp` sample: a VMC receiver on 39539 (0x9A73), a resolver on 127.0.0.53:53.
    const UDP: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  133: 00000000:9A73 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4242 2 0000000000000000 0
  410: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 17 2 0000000000000000 0
  411: garbage
";

    /// A `/proc/net/udp6` sample: `[::]:11111` (0x2B67) twice (SO_REUSEPORT), one with inode 0.
    const UDP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
   12: 00000000000000000000000000000000:2B67 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 99 2 0000000000000000 0
   13: 00000000000000000000000000000000:2B67 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 0 2 0000000000000000 0
";

    #[test]
    fn tables_give_the_inodes_bound_to_a_port() {
        assert_eq!(socket_inodes(UDP, 39539), [4242]);
        assert_eq!(socket_inodes(UDP, 53), [17]);
        assert!(socket_inodes(UDP, 49983).is_empty());
        assert_eq!(socket_inodes(UDP6, 11111), [99], "inode 0 is no socket");
        assert!(socket_inodes("", 1).is_empty());
        assert!(socket_inodes("header\n: : : :\n1: zz:zz", 1).is_empty());
    }

    #[test]
    fn fd_links_name_socket_inodes() {
        assert_eq!(socket_link_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_link_inode("socket:[]"), None);
        assert_eq!(socket_link_inode("pipe:[4242]"), None);
        assert_eq!(socket_link_inode("/dev/null"), None);
        assert_eq!(socket_link_inode("socket:[99999999999999999999999]"), None);
    }

    #[test]
    fn a_truncated_comm_is_completed_from_the_program_name() {
        assert_eq!(process_name("VSeeFace\n", b"VSeeFace.exe\0"), "VSeeFace");
        assert_eq!(
            process_name(
                "tests-0123456789",
                b"/x/deps/tests-0123456789abcdef\0--nocapture\0"
            ),
            "tests-0123456789abcdef"
        );
        // A program name that does not begin with comm (a script) keeps comm.
        assert_eq!(
            process_name("python3.12-long\n", b"/usr/bin/python3\0x.py\0"),
            "python3.12-long"
        );
        assert_eq!(process_name("", b""), "");
    }

    #[test]
    fn usual_ports_name_their_usual_holders() {
        assert!(usual_holder(39539).unwrap().contains("VSeeFace"));
        assert!(usual_holder(39540)
            .unwrap()
            .contains("VirtualMotionCapture"));
        assert!(usual_holder(49983).unwrap().contains("iFacialMocap"));
        assert_eq!(usual_holder(49993), usual_holder(50003));
        assert!(usual_holder(11111).unwrap().contains("Unreal Engine"));
        assert!(usual_holder(11125).unwrap().contains("VTube Studio"));
        assert!(usual_holder(11573).unwrap().contains("OpenSeeFace"));
        assert_eq!(usual_holder(40000), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_holder_of_a_socket_of_this_process_is_this_process() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let Some(holder) = udp_port_holder(port) else {
            eprintln!("note: /proc does not show this process's sockets; lookup not checked");
            return;
        };
        assert!(holder.is_this_process(), "{holder}");
        assert!(!holder.name.is_empty());
        drop(socket);
    }
}
