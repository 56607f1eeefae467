//! The memory a GL context alone takes: an offscreen context made exactly as `facewire run
//! --headless` makes its own (EGL on Mesa where there is no GPU), one frame cleared and read
//! back, and nothing else. With `--draw`, the frame also draws one small textured quad (the
//! stage's overlay), so the driver compiles a shader: what any program that draws pays for the
//! driver's compiler. Prints the process's resident memory, to set beside a headless run's
//! (`benches/memory.py` does both and the difference is facewire's own share).
//!
//!     cargo run --release --example gl_context -- [--size 1280x720] [--seconds 3] [--draw]

use std::time::Duration;

/// The resident set of this process, in kB: (total, anonymous, file-backed), from
/// `/proc/self/status` (Linux).
fn resident() -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmRSS:")?, field("RssAnon:")?, field("RssFile:")?))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut width, mut height, mut seconds) = (1280u32, 720u32, 3.0f64);
    let mut draw = false;
    while let Some(arg) = args.next() {
        if arg == "--draw" {
            draw = true;
            continue;
        }
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--size" => {
                let (w, h) = value.split_once('x').unwrap_or(("", ""));
                match (w.parse(), h.parse()) {
                    (Ok(w), Ok(h)) => (width, height) = (w, h),
                    _ => {
                        eprintln!("gl_context: --size WIDTHxHEIGHT, e.g. --size 1280x720");
                        std::process::exit(2);
                    }
                }
            }
            "--seconds" => match value.parse::<f64>() {
                Ok(s) if s.is_finite() && (0.0..=600.0).contains(&s) => seconds = s,
                _ => {
                    eprintln!("gl_context: --seconds takes 0 to 600");
                    std::process::exit(2);
                }
            },
            other => {
                eprintln!("gl_context: unknown argument `{other}` (--size, --seconds, --draw)");
                std::process::exit(2);
            }
        }
    }
    let ctx = match facewire::render::headless::HeadlessContext::new(width, height) {
        Ok(ctx) => ctx,
        Err(error) => {
            eprintln!("gl_context: no offscreen GL context: {error}");
            std::process::exit(1);
        }
    };
    ctx.bind();
    if draw {
        let mut overlay = match facewire::render::overlay::Overlay::new(ctx.gl()) {
            Ok(overlay) => overlay,
            Err(error) => {
                eprintln!("gl_context: the overlay failed: {error}");
                std::process::exit(1);
            }
        };
        overlay.set_image(&facewire::image::RgbaImage::filled(
            16,
            16,
            [255, 0, 0, 255],
        ));
        overlay.draw((width, height), 8, 8);
    }
    let image = ctx.read_rgba();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    match resident() {
        Some((total, anon, file)) => println!(
            "{{\"device\":{:?},\"width\":{},\"height\":{},\"rss_kb\":{total},\"rss_anon_kb\":{anon},\"rss_file_kb\":{file},\"pixels\":{}}}",
            ctx.device(),
            width,
            height,
            image.width * image.height
        ),
        None => {
            eprintln!("gl_context: /proc/self/status is not readable here (Linux only)");
            std::process::exit(1);
        }
    }
}
