//! How many of a followed sender's frames get through while another port floods the listener.
//!
//! Starts ingest on a free loopback port, has one sender stream VMC frames at a steady rate and,
//! once facewire follows it, a second socket of the same host send garbage datagrams at a set
//! rate; then reports the frames delivered and what became of the flood.
//!
//! ```text
//! cargo run --release --example flood -- [--frames N] [--hz HZ] [--flood N] [--rate N] [--size BYTES]
//! ```
//!
//! - `--frames`: VMC frames the followed sender sends (default 600, at most 36,000);
//! - `--hz`: their rate (default 60);
//! - `--flood`: garbage datagrams at most (default 1,000,000, at most 10,000,000);
//! - `--rate`: garbage datagrams per second, 0 for as fast as one thread sends (default 100,000);
//! - `--size`: bytes per garbage datagram (default 64, at most 1,400).
//!
//! Everything stays on 127.0.0.1, and the run ends when the followed sender is done (at most ten
//! minutes at the lowest rate the limits allow). Figures are in BENCHMARKS.md.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use facewire::arkit::FaceFrame;
use facewire::ingest::{spawn, IngestConfig, ESTABLISHED_AFTER};
use rosc::{encoder, OscBundle, OscMessage, OscPacket, OscTime, OscType};

/// The run's settings.
struct Args {
    frames: u64,
    hz: f64,
    flood: u64,
    rate: u64,
    size: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        frames: 600,
        hz: 60.0,
        flood: 1_000_000,
        rate: 100_000,
        size: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = || format!("{flag}: not a number: {value}");
        match flag.as_str() {
            "--frames" => args.frames = value.parse().map_err(|_| bad())?,
            "--hz" => args.hz = value.parse().map_err(|_| bad())?,
            "--flood" => args.flood = value.parse().map_err(|_| bad())?,
            "--rate" => args.rate = value.parse().map_err(|_| bad())?,
            "--size" => args.size = value.parse().map_err(|_| bad())?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(1..=36_000).contains(&args.frames) {
        return Err("--frames: 1 to 36000".into());
    }
    if !(60.0..=1000.0).contains(&args.hz) {
        return Err("--hz: 60 to 1000".into());
    }
    if args.flood > 10_000_000 || !(1..=1400).contains(&args.size) {
        return Err("--flood: at most 10000000; --size: 1 to 1400".into());
    }
    Ok(args)
}

/// One VMC frame: a jawOpen value and an Apply, in one bundle.
fn vmc_frame(jaw: f32) -> Vec<u8> {
    let message = |addr: &str, args| {
        OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args,
        })
    };
    let bundle = OscPacket::Bundle(OscBundle {
        timetag: OscTime::from((0, 1)),
        content: vec![
            message(
                "/VMC/Ext/Blend/Val",
                vec![OscType::String("jawOpen".into()), OscType::Float(jaw)],
            ),
            message("/VMC/Ext/Blend/Apply", Vec::new()),
        ],
    });
    encoder::encode(&bundle).expect("a small bundle encodes")
}

/// Linux's count of UDP datagrams dropped because a receive buffer was full, if readable.
fn kernel_drops() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let names: Vec<&str> = udp.next()?.split_whitespace().collect();
    let values: Vec<&str> = udp.next()?.split_whitespace().collect();
    let i = names.iter().position(|&n| n == "RcvbufErrors")?;
    values.get(i)?.parse().ok()
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("flood: {err}");
            std::process::exit(2);
        }
    };
    let delivered = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&delivered);
    let config = IngestConfig {
        listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
        ..IngestConfig::default()
    };
    let handle = spawn(
        config,
        Box::new(move |_: FaceFrame| {
            counter.fetch_add(1, Ordering::Relaxed);
        }),
    )
    .expect("ingest starts on 127.0.0.1");
    let addr = handle.local_addrs()[0];
    let followed = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");

    // Frames from one port until it is established: facewire follows this sender, port and
    // all, before the flood starts.
    let warmup_frames = u64::from(ESTABLISHED_AFTER);
    for _ in 0..warmup_frames {
        followed.send_to(&vmc_frame(0.0), addr).expect("send");
        std::thread::sleep(Duration::from_millis(20));
    }
    let warmup = delivered.load(Ordering::Relaxed);
    if warmup < warmup_frames {
        eprintln!("flood: the warm-up frames did not arrive ({warmup} of {warmup_frames})");
        std::process::exit(1);
    }
    let drops_before = kernel_drops();

    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let (flood, rate, size) = (args.flood, args.rate, args.size);
    let flooder = std::thread::spawn(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let garbage = vec![0xA5u8; size];
        let start = Instant::now();
        let mut sent = 0u64;
        while sent < flood && !stop.load(Ordering::Relaxed) {
            let due = if rate == 0 {
                flood
            } else {
                (start.elapsed().as_secs_f64() * rate as f64) as u64
            };
            let burst = due.min(flood).saturating_sub(sent).min(1024);
            if burst == 0 {
                std::thread::sleep(Duration::from_micros(500));
                continue;
            }
            for _ in 0..burst {
                // A full loopback queue refuses a send now and then; count what left.
                if socket.send_to(&garbage, addr).is_ok() {
                    sent += 1;
                }
            }
        }
        (sent, start.elapsed())
    });

    let start = Instant::now();
    for i in 1..=args.frames {
        let due = start + Duration::from_secs_f64(i as f64 / args.hz);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        followed
            .send_to(&vmc_frame((i % 100) as f32 / 100.0), addr)
            .expect("send");
    }
    let sending = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let (flood_sent, flooding) = flooder.join().expect("the flood thread");
    std::thread::sleep(Duration::from_millis(300));

    let frames = delivered.load(Ordering::Relaxed) - warmup;
    let stats = handle.stats();
    let guard = handle.net_stats().guard;
    let drops = kernel_drops()
        .zip(drops_before)
        .map(|(after, before)| after.saturating_sub(before));
    handle.shutdown();

    let lost = args.frames.saturating_sub(frames);
    println!(
        "followed sender: {frames} of {} frames delivered ({lost} lost, {:.2}%) at {} Hz over {:.2} s",
        args.frames,
        lost as f64 * 100.0 / args.frames as f64,
        args.hz,
        sending.as_secs_f64()
    );
    println!(
        "flood: {flood_sent} datagrams of {size} bytes in {:.2} s ({:.0}/s)",
        flooding.as_secs_f64(),
        flood_sent as f64 / flooding.as_secs_f64().max(1e-9)
    );
    println!(
        "ingest: {} rejected undecoded, {} decoded as malformed, {} OSC datagrams decoded",
        guard.other_source + guard.not_allowed,
        stats.malformed_datagrams,
        stats.datagrams
    );
    match drops {
        Some(drops) => println!("kernel: {drops} UDP datagrams dropped on full receive buffers"),
        None => println!("kernel: receive-buffer drops not available on this system"),
    }
}
