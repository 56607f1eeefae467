//! Prints the connect card for this PC's real addresses and facewire's usual listeners, as the
//! terminal shows it once no data has come for a while, and draws the stage card to a PNG over
//! a stage-sized background.
//!
//! ```sh
//! cargo run --example connect_card -- /tmp/connect.png [STAGE-WIDTH] [STAGE-HEIGHT] [PHONE-IP]
//! ```
//!
//! With `FACEWIRE_NO_ADDRESSES=1` it draws the card a stage shows with `[window] show_addresses
//! = false`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use facewire::app::hud::{connect_placement, fit_connect, fit_connect_private};
use facewire::arkit::Protocol;
use facewire::connect::{lan_addresses, ConnectCard, ConnectWatch, Os, NO_DATA_HINT};
use facewire::image::RgbaImage;
use facewire::ingest::{default_addr, BoundListener, ListenerReport};

/// Blends `card` over `stage` with its top-left corner at (`x`, `y`).
fn compose(stage: &mut RgbaImage, card: &RgbaImage, x: i32, y: i32) {
    for cy in 0..card.height {
        for cx in 0..card.width {
            let (sx, sy) = (x + cx as i32, y + cy as i32);
            if sx < 0 || sy < 0 || sx as u32 >= stage.width || sy as u32 >= stage.height {
                continue;
            }
            let src = card.pixel(cx, cy);
            let i = (sy as usize * stage.width as usize + sx as usize) * 4;
            let a = f32::from(src[3]) / 255.0;
            for (dst, &src) in stage.data[i..i + 3].iter_mut().zip(&src[..3]) {
                *dst = (f32::from(src) * a + f32::from(*dst) * (1.0 - a)).round() as u8;
            }
        }
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| "/tmp/connect.png".into()));
    let stage_w: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1280);
    let stage_h: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(720);
    let phone: Option<IpAddr> = args.next().and_then(|a| a.parse().ok());

    let listeners: Vec<BoundListener> = Protocol::FAMILIES
        .into_iter()
        .map(|kind| BoundListener {
            kind,
            addr: default_addr(kind),
        })
        .collect();
    let reports: Vec<ListenerReport> = listeners
        .iter()
        .map(|l| ListenerReport::new(l.kind, l.addr))
        .collect();
    let card = ConnectCard::new(&listeners, &lan_addresses(), phone);
    let t0 = Instant::now();
    let mut watch = ConnectWatch::new(card, t0, Os::current());
    for seconds in [0, 1, NO_DATA_HINT.as_secs(), NO_DATA_HINT.as_secs() + 1] {
        if let Some(update) = watch.update(t0 + Duration::from_secs(seconds), 0, &reports) {
            for line in update.terminal_lines() {
                println!("{line}");
            }
        }
    }

    let image = if std::env::var_os("FACEWIRE_NO_ADDRESSES").is_some() {
        fit_connect_private(watch.card(), (stage_w, stage_h))
    } else {
        fit_connect(watch.card(), (stage_w, stage_h))
    };
    let mut stage = RgbaImage::filled(stage_w, stage_h, [58, 66, 80, 255]);
    let (x, y) = connect_placement((stage_w, stage_h), (image.width, image.height));
    compose(&mut stage, &image, x, y);
    match stage.save_png(&out) {
        Ok(()) => {
            eprintln!(
                "card {}x{} at ({x}, {y}) on a {stage_w}x{stage_h} stage: {}",
                image.width,
                image.height,
                out.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
