//! On-stage text cards (the calibration routine's prompts and the connect card), laid out and
//! drawn on the CPU into an RGBA image that `render::overlay` puts over the avatar.

use crate::connect::{ConnectCard, WebcamCard};
use crate::control::PromptCard;
use crate::image::RgbaImage;
use crate::text::{draw_text, fill, text_width, wrap_chars, Rect, GLYPH};

/// Scale of the title's 8x8 glyphs.
const TITLE_SCALE: u32 = 4;
/// Scale of the instruction and status text.
const TEXT_SCALE: u32 = 3;
/// Padding inside the card, in pixels.
const PAD: u32 = 24;
/// Height of the progress bar, in pixels.
const BAR: u32 = 18;
/// Card background: a dark, slightly see-through grey.
const CARD: [u8; 4] = [24, 26, 30, 215];
/// Main text colour.
const TEXT: [u8; 4] = [240, 240, 240, 255];
/// Secondary text colour.
const MUTED: [u8; 4] = [170, 176, 186, 255];
/// Progress bar colours: track and fill.
const TRACK: [u8; 4] = [70, 74, 82, 255];
const FILL: [u8; 4] = [90, 200, 120, 255];

/// Splits `text` into lines of at most `max_width` pixels at `scale`, breaking between words
/// (a word longer than a line is split across lines: nothing is cut off).
pub fn wrap_words(text: &str, max_width: u32, scale: u32) -> Vec<String> {
    wrap_chars(text, (max_width / (GLYPH * scale.max(1))).max(1) as usize)
}

/// Where a card goes on a `viewport`-sized stage, and how wide it is: a third of the stage
/// (320 to 520 pixels) at the left edge, vertically centred, so it leaves the face, which the
/// camera frames in the middle, in view.
pub fn prompt_placement(viewport: (u32, u32), card_height: u32) -> (i32, i32) {
    let x = 24;
    let y = (viewport.1 as i32 - card_height as i32) / 2;
    (x, y.max(0))
}

/// The card width for a stage `viewport_width` pixels wide.
pub fn prompt_width(viewport_width: u32) -> u32 {
    (viewport_width / 3).clamp(320, 520)
}

/// Draws `card` `width` pixels wide (at least 320): the step counter, the title, the wrapped
/// instruction, the status and a progress bar; every line is wrapped to fit.
pub fn render_prompt(card: &PromptCard, width: u32) -> RgbaImage {
    let width = width.max(320);
    let inner = width - 2 * PAD;
    let line_h = GLYPH * TEXT_SCALE + 8;
    let lines = wrap_words(&card.instruction, inner, TEXT_SCALE);
    let counter = format!("step {} of {}", card.step, card.steps);
    // The title in large letters when it fits on one line, else smaller and wrapped; the
    // status wrapped too: nothing is cut off at the card's edge.
    let title_scale = if text_width(&card.title, TITLE_SCALE) <= inner {
        TITLE_SCALE
    } else {
        TEXT_SCALE
    };
    let title_lines = wrap_words(&card.title, inner, title_scale);
    let title_h = GLYPH * title_scale + 8;
    let status_lines = wrap_words(&card.status, inner, TEXT_SCALE);
    let height = PAD
        + GLYPH * 2
        + 10
        + title_h * title_lines.len() as u32
        + 8
        + line_h * lines.len() as u32
        + 8
        + line_h * status_lines.len() as u32
        + BAR
        + PAD;
    let mut image = RgbaImage::filled(width, height, CARD);
    let mut y = PAD;
    draw_text(&mut image, PAD, y, &counter, 2, MUTED);
    y += GLYPH * 2 + 10;
    for line in &title_lines {
        draw_text(&mut image, PAD, y, line, title_scale, TEXT);
        y += title_h;
    }
    y += 8;
    for line in &lines {
        draw_text(&mut image, PAD, y, line, TEXT_SCALE, TEXT);
        y += line_h;
    }
    y += 8;
    for line in &status_lines {
        draw_text(&mut image, PAD, y, line, TEXT_SCALE, MUTED);
        y += line_h;
    }
    fill(
        &mut image,
        Rect {
            x: PAD,
            y,
            width: inner,
            height: BAR,
        },
        TRACK,
    );
    let progress = if card.progress.is_finite() {
        card.progress.clamp(0.0, 1.0)
    } else {
        0.0
    };
    fill(
        &mut image,
        Rect {
            x: PAD,
            y,
            width: (inner as f32 * progress).round() as u32,
            height: BAR,
        },
        FILL,
    );
    image
}

/// The connect card's address in large letters: green, like a progress bar's fill.
const ADDRESS: [u8; 4] = [120, 220, 150, 255];
/// The connect card's app names.
const ACCENT: [u8; 4] = [130, 185, 255, 255];
/// The connect card's notes and hints: amber.
const WARN: [u8; 4] = [255, 190, 90, 255];
/// Behind a command in a hint.
const COMMAND_BG: [u8; 4] = [10, 11, 13, 235];
/// Scale of the connect card's small text.
const SMALL: u32 = 2;
/// Height of one line of small text, with its spacing.
const SMALL_LINE: u32 = GLYPH * SMALL + 4;
/// How many addresses besides the first the connect card lists.
const OTHER_ADDRESSES: usize = 3;
/// Indent of an app's instruction and of a hint's continuation lines, in pixels.
const INDENT: u32 = 16;

/// One drawing step of a laid-out card.
enum Draw {
    Text {
        x: u32,
        y: u32,
        text: String,
        scale: u32,
        rgba: [u8; 4],
    },
    Fill(Rect, [u8; 4]),
}

/// A card laid out top to bottom before it is drawn, so that its height is known.
struct Layout {
    inner: u32,
    y: u32,
    steps: Vec<Draw>,
}

impl Layout {
    fn new(width: u32) -> Layout {
        Layout {
            inner: width - 2 * PAD,
            y: PAD,
            steps: Vec::new(),
        }
    }

    /// `text` wrapped at `scale` from `indent` pixels in; each line `gap` pixels below the
    /// previous one's glyphs.
    fn text(&mut self, text: &str, indent: u32, scale: u32, rgba: [u8; 4], gap: u32) {
        for line in wrap_words(text, self.inner - indent, scale) {
            self.steps.push(Draw::Text {
                x: PAD + indent,
                y: self.y,
                text: line,
                scale,
                rgba,
            });
            self.y += GLYPH * scale + gap;
        }
    }

    /// A bulleted paragraph at small scale: `bullet` on the first line, the rest indented.
    fn bulleted(&mut self, bullet: &str, text: &str, rgba: [u8; 4]) {
        let lead = text_width(bullet, SMALL);
        let lines = wrap_words(text, self.inner - lead, SMALL);
        for (i, line) in lines.into_iter().enumerate() {
            if i == 0 {
                self.steps.push(Draw::Text {
                    x: PAD,
                    y: self.y,
                    text: bullet.to_string(),
                    scale: SMALL,
                    rgba,
                });
            }
            self.steps.push(Draw::Text {
                x: PAD + lead,
                y: self.y,
                text: line,
                scale: SMALL,
                rgba,
            });
            self.y += SMALL_LINE;
        }
    }

    /// A thin rule across the card, with space around it.
    fn rule(&mut self) {
        self.y += 4;
        self.steps.push(Draw::Fill(
            Rect {
                x: PAD,
                y: self.y,
                width: self.inner,
                height: 2,
            },
            TRACK,
        ));
        self.y += 10;
    }

    fn draw(self, width: u32) -> RgbaImage {
        let mut image = RgbaImage::filled(width, self.y + PAD, CARD);
        for step in self.steps {
            match step {
                Draw::Text {
                    x,
                    y,
                    text,
                    scale,
                    rgba,
                } => draw_text(&mut image, x, y, &text, scale, rgba),
                Draw::Fill(rect, rgba) => fill(&mut image, rect, rgba),
            }
        }
        image
    }
}

/// The connect card's width for a stage `viewport_width` pixels wide: all of it but a 40-pixel
/// margin each side, 480 to 1200 pixels (before the first frame the face is still, so the card
/// may cover it).
pub fn connect_width(viewport_width: u32) -> u32 {
    viewport_width.saturating_sub(80).clamp(480, 1200)
}

/// Where the connect card (`card_size`: width, height) goes on a `viewport`-sized stage: centred,
/// its top edge never above the stage's.
pub fn connect_placement(viewport: (u32, u32), card_size: (u32, u32)) -> (i32, i32) {
    let x = (viewport.0 as i32 - card_size.0 as i32) / 2;
    let y = (viewport.1 as i32 - card_size.1 as i32) / 2;
    (x.max(0), y.max(0))
}

/// The connect card for a `viewport`-sized stage: [`render_connect`] at [`connect_width`] when
/// it fits the stage's height; else laid out twice as wide (fewer wrapped lines) and shrunk to
/// half size, so the 16-pixel text becomes 8-pixel text and a small stage (800x800, 640x480)
/// still shows the whole card.
pub fn fit_connect(card: &ConnectCard, viewport: (u32, u32)) -> RgbaImage {
    fit(viewport, |width| render_connect(card, width))
}

/// A card drawn by `render` (at a width) that fits a `viewport`-sized stage, as
/// [`fit_connect`] says.
fn fit(viewport: (u32, u32), render: impl Fn(u32) -> RgbaImage) -> RgbaImage {
    let width = connect_width(viewport.0);
    let image = render(width);
    if image.height <= viewport.1 {
        return image;
    }
    let wide = viewport.0.saturating_sub(32).max(width / 2) * 2;
    half(&render(wide))
}

/// `image` at half its size, each 2x2 block of pixels averaged.
fn half(image: &RgbaImage) -> RgbaImage {
    let (width, height) = ((image.width / 2).max(1), (image.height / 2).max(1));
    let mut out = RgbaImage::filled(width, height, [0; 4]);
    for y in 0..height {
        for x in 0..width {
            let mut sum = [0u32; 4];
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let p = image.pixel(
                    (2 * x + dx).min(image.width - 1),
                    (2 * y + dy).min(image.height - 1),
                );
                for (s, v) in sum.iter_mut().zip(p) {
                    *s += u32::from(v);
                }
            }
            let i = (y as usize * width as usize + x as usize) * 4;
            for (dst, s) in out.data[i..i + 4].iter_mut().zip(sum) {
                *dst = ((s + 2) / 4) as u8;
            }
        }
    }
    out
}

/// Draws the connect card `width` pixels wide (at least 320): the title, this PC's first address
/// in large letters with its interface, the other addresses small, notes, a row per listening
/// app (name, port, what to enter), then the hints in amber with their commands. Every line is
/// wrapped to fit; the card is as tall as its contents. With the usual six listeners, a second
/// address and the hints it fits a 1280x720 stage; on a smaller stage it can be taller than the
/// stage ([`connect_placement`] keeps its top in view).
pub fn render_connect(card: &ConnectCard, width: u32) -> RgbaImage {
    let width = width.max(320);
    if let Some(webcam) = card.webcam_state() {
        return webcam_layout(card, webcam, width).draw(width);
    }
    let mut layout = Layout::new(width);
    let inner = layout.inner;
    let title_scale = if text_width(card.title(), TITLE_SCALE) <= inner {
        TITLE_SCALE
    } else {
        TEXT_SCALE
    };
    no_phone_beside_title(&mut layout, card, title_scale);
    layout.text(card.title(), 0, title_scale, TEXT, 8);
    layout.text(card.subtitle(), 0, SMALL, MUTED, 10);

    match card.primary_address() {
        Some(primary) => {
            let ip = primary.ip.to_string();
            // As large as fits on one line; an address too long even for small text wraps.
            let scale = [6, 5, 4, 3]
                .into_iter()
                .find(|&s| text_width(&ip, s) <= inner)
                .unwrap_or(SMALL);
            let about = primary.notes();
            let about = if about.is_empty() {
                about
            } else {
                format!("on {about}")
            };
            let beside = text_width(&ip, scale) + INDENT + text_width(&about, SMALL);
            if scale > SMALL && beside <= inner {
                // The interface beside the address, on its baseline.
                layout.steps.push(Draw::Text {
                    x: PAD + text_width(&ip, scale) + INDENT,
                    y: layout.y + GLYPH * (scale - SMALL),
                    text: about,
                    scale: SMALL,
                    rgba: MUTED,
                });
                layout.text(&ip, 0, scale, ADDRESS, 8);
            } else {
                layout.text(&ip, 0, scale, ADDRESS, 8);
                layout.text(&about, 0, SMALL, MUTED, 6);
            }
        }
        None => layout.text("No network address found", 0, TEXT_SCALE, WARN, 8),
    }
    // The other addresses in one paragraph, at most OTHER_ADDRESSES of them.
    let others: Vec<String> = card
        .addresses()
        .iter()
        .skip(1)
        .map(|a| a.describe())
        .collect();
    if !others.is_empty() {
        let mut line = format!(
            "or {}",
            others[..others.len().min(OTHER_ADDRESSES)].join(", ")
        );
        if others.len() > OTHER_ADDRESSES {
            line.push_str(&format!(
                ", and {} more (see the terminal)",
                others.len() - OTHER_ADDRESSES
            ));
        }
        layout.text(&line, 0, SMALL, MUTED, 4);
    }
    for note in card.notes() {
        layout.bulleted("! ", note, WARN);
    }

    if !card.apps().is_empty() {
        layout.rule();
    }
    // Apps with the same instruction (the ones facewire asks) share a row.
    let mut rows: Vec<(String, Vec<u16>, &str)> = Vec::new();
    for row in card.apps() {
        match rows.iter_mut().find(|(_, _, enter)| *enter == row.enter) {
            Some((names, ports, _)) => {
                names.push_str(" / ");
                names.push_str(row.app);
                if !ports.contains(&row.port) {
                    ports.push(row.port);
                }
            }
            None => rows.push((row.app.to_string(), vec![row.port], &row.enter)),
        }
    }
    for (names, ports, enter) in rows {
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let port = format!("UDP {}", ports.join(", "));
        let name_w = text_width(&names, SMALL);
        let port_w = text_width(&port, SMALL);
        // The name sits close over its instruction, so that six apps and the hints still fit
        // a 720-pixel stage; the accent colour and the indent keep the rows apart.
        if name_w + INDENT + port_w <= inner {
            layout.steps.push(Draw::Text {
                x: PAD + inner - port_w,
                y: layout.y,
                text: port,
                scale: SMALL,
                rgba: MUTED,
            });
            layout.text(&names, 0, SMALL, ACCENT, 2);
        } else {
            layout.text(&names, 0, SMALL, ACCENT, 2);
            layout.text(&port, INDENT, SMALL, MUTED, 2);
        }
        layout.text(enter, INDENT, SMALL, TEXT, 4);
        layout.y += 2;
    }

    if !card.hints().is_empty() {
        layout.rule();
        layout.text("No face data yet. Check:", 0, TEXT_SCALE, WARN, 8);
        for hint in card.hints() {
            layout.bulleted("- ", &hint.text, WARN);
            for command in &hint.commands {
                let lines = wrap_words(command, inner - 2 * INDENT, SMALL);
                let top = layout.y;
                // As much strip above the glyphs as below them (a line's own spacing is below).
                let height = lines.len() as u32 * SMALL_LINE + 2;
                layout.steps.push(Draw::Fill(
                    Rect {
                        x: PAD + INDENT / 2,
                        y: top,
                        width: inner - INDENT / 2,
                        height,
                    },
                    COMMAND_BG,
                ));
                layout.y += 3;
                for line in lines {
                    layout.text(&line, INDENT, SMALL, TEXT, 4);
                }
                layout.y = top + height + 2;
            }
            layout.y += 2;
        }
    }
    layout.draw(width)
}

/// The connect card without this PC's addresses, for a stage that keeps them off the stream
/// (`[window] show_addresses = false`), `width` pixels wide (at least 320): the title, where to
/// find what to enter (the control panel and the terminal), and each listening app with its
/// port. The hints, which may name addresses, stay in the panel and the terminal too.
pub fn render_connect_private(card: &ConnectCard, width: u32) -> RgbaImage {
    let width = width.max(320);
    // A webcam's card names no address.
    if let Some(webcam) = card.webcam_state() {
        return webcam_layout(card, webcam, width).draw(width);
    }
    private_layout(card, width).draw(width)
}

/// [`render_connect_private`]'s layout, `width` pixels wide.
fn private_layout(card: &ConnectCard, width: u32) -> Layout {
    let mut layout = Layout::new(width);
    let inner = layout.inner;
    let title_scale = if text_width(card.title(), TITLE_SCALE) <= inner {
        TITLE_SCALE
    } else {
        TEXT_SCALE
    };
    no_phone_beside_title(&mut layout, card, title_scale);
    layout.text(card.title(), 0, title_scale, TEXT, 8);
    layout.text(
        "This PC's addresses are kept off the stage. The control panel and the terminal show \
         what to enter in the phone app.",
        0,
        SMALL,
        MUTED,
        10,
    );
    if !card.apps().is_empty() {
        layout.rule();
    }
    let mut rows: Vec<(String, u16)> = Vec::new();
    for row in card.apps() {
        match rows.iter_mut().find(|(_, port)| *port == row.port) {
            Some((names, _)) => {
                names.push_str(" / ");
                names.push_str(row.app);
            }
            None => rows.push((row.app.to_string(), row.port)),
        }
    }
    for (names, port) in rows {
        layout.text(&names, 0, SMALL, ACCENT, 2);
        layout.text(&format!("UDP port {port}"), INDENT, SMALL, TEXT, 6);
    }
    if !card.hints().is_empty() {
        layout.rule();
        layout.text(
            "No face data yet: the panel and the terminal say what to check.",
            0,
            SMALL,
            WARN,
            4,
        );
    }
    layout
}

/// For people without a phone: [`NO_PHONE_SHORT`](crate::connect::NO_PHONE_SHORT) at the right
/// of the title line, on its baseline, when the card lists apps and the line has room.
fn no_phone_beside_title(layout: &mut Layout, card: &ConnectCard, title_scale: u32) {
    let text = crate::connect::NO_PHONE_SHORT;
    let (title_w, text_w) = (
        text_width(card.title(), title_scale),
        text_width(text, SMALL),
    );
    if card.apps().is_empty() || title_w + 2 * INDENT + text_w > layout.inner {
        return;
    }
    layout.steps.push(Draw::Text {
        x: PAD + layout.inner - text_w,
        y: layout.y + GLYPH * title_scale.saturating_sub(SMALL),
        text: text.to_string(),
        scale: SMALL,
        rgba: MUTED,
    });
}

/// A webcam run's card, `width` pixels wide: the title, what happens, the camera in the accent
/// colour with its and the tracker's frame rates, and what keeps the camera (or the face) away
/// in amber.
fn webcam_layout(card: &ConnectCard, webcam: &WebcamCard, width: u32) -> Layout {
    let mut layout = Layout::new(width);
    layout.text(card.title(), 0, TITLE_SCALE, TEXT, 8);
    layout.text(card.subtitle(), 0, SMALL, MUTED, 10);
    layout.rule();
    match &webcam.camera {
        Some(camera) => layout.text(camera, 0, SMALL, ACCENT, 4),
        None => layout.text("No camera yet", 0, TEXT_SCALE, WARN, 8),
    }
    if let Some(rates) = &webcam.rates {
        layout.text(rates, INDENT, SMALL, TEXT, 6);
    }
    if let Some(problem) = &webcam.problem {
        layout.bulleted("- ", problem, WARN);
    }
    layout
}

/// [`fit_connect`] for the card without addresses ([`render_connect_private`]).
pub fn fit_connect_private(card: &ConnectCard, viewport: (u32, u32)) -> RgbaImage {
    fit(viewport, |width| render_connect_private(card, width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Protocol;
    use crate::connect::{hints, AddressKind, Hint, HintInput, LanAddress, Os, NO_DATA_HINT};
    use crate::ingest::{BoundListener, ListenerReport};

    fn card(progress: f32) -> PromptCard {
        PromptCard {
            title: "Blink".into(),
            instruction: "Close both eyes fully, then open them again. Repeat a few times.".into(),
            status: "recording".into(),
            step: 2,
            steps: 21,
            progress,
        }
    }

    #[test]
    fn words_wrap_within_the_width() {
        let lines = wrap_words("one two three four five six", 8 * 3 * 9, 3);
        assert_eq!(lines, vec!["one two", "three", "four five", "six"]);
        for l in &lines {
            assert!(text_width(l, 3) <= 8 * 3 * 9);
        }
        assert_eq!(wrap_words("", 100, 1), Vec::<String>::new());
        assert_eq!(
            wrap_words("abcdefghij", 8 * 4, 1),
            vec!["abcd", "efgh", "ij"]
        );
    }

    #[test]
    fn long_titles_and_statuses_wrap_inside_the_card() {
        let long = PromptCard {
            title: "Waiting for the phone".into(),
            status: "done: review the summary in the terminal".into(),
            ..card(0.5)
        };
        let image = render_prompt(&long, 320);
        // Nothing is drawn into the right padding: every line ends inside the card.
        for y in 0..image.height {
            for x in image.width - PAD + 1..image.width {
                assert_eq!(
                    image.pixel(x, y),
                    CARD,
                    "text at ({x}, {y}) spills past the edge"
                );
            }
        }
        assert!(
            image.height > render_prompt(&card(0.5), 320).height,
            "the card grew"
        );
    }

    #[test]
    fn progress_bar_fills_in_proportion() {
        let empty = render_prompt(&card(0.0), 500);
        let half = render_prompt(&card(0.5), 500);
        let full = render_prompt(&card(f32::NAN), 500);
        assert_eq!((empty.width, empty.height), (half.width, half.height));
        let bar_y = half.height - PAD - BAR / 2;
        let inner = half.width - 2 * PAD;
        assert_eq!(half.pixel(PAD + inner / 4, bar_y), FILL);
        assert_eq!(half.pixel(PAD + inner * 3 / 4, bar_y), TRACK);
        assert_eq!(empty.pixel(PAD + 1, bar_y), TRACK);
        assert_eq!(
            full.pixel(PAD + 1, bar_y),
            TRACK,
            "NaN progress shows as empty"
        );
    }

    #[test]
    fn card_fits_narrow_and_wide_stages() {
        assert_eq!(prompt_width(640), 320);
        assert_eq!(prompt_width(1280), 426);
        assert_eq!(prompt_width(3840), 520);
        assert_eq!(render_prompt(&card(0.3), 200).width, 320);
        assert_eq!(prompt_placement((1280, 720), 300), (24, 210));
        assert_eq!(prompt_placement((1280, 200), 300), (24, 0));
        let c = render_prompt(&card(0.3), prompt_width(1280));
        let text_pixels = c.data.chunks_exact(4).filter(|p| *p == TEXT).count();
        assert!(text_pixels > 500, "title and instruction are drawn");
    }

    fn connect_card(listeners: &[(Protocol, &str)], primary: &str) -> ConnectCard {
        let lan = [
            LanAddress {
                ip: primary.parse().unwrap(),
                interface: "wlan0".into(),
                kind: AddressKind::Lan,
            },
            LanAddress {
                ip: "172.17.0.1".parse().unwrap(),
                interface: "docker0".into(),
                kind: AddressKind::Virtual,
            },
        ];
        let listeners: Vec<BoundListener> = listeners
            .iter()
            .map(|&(kind, addr)| BoundListener {
                kind,
                addr: addr.parse().unwrap(),
            })
            .collect();
        ConnectCard::new(&listeners, &lan, None)
    }

    fn all_apps() -> Vec<(Protocol, &'static str)> {
        vec![
            (Protocol::Vmc, "0.0.0.0:39539"),
            (Protocol::IFacialMocap, "0.0.0.0:49983"),
            (Protocol::Facemotion3d, "0.0.0.0:49993"),
            (Protocol::LiveLinkFace, "[::]:11111"),
            (Protocol::VTubeStudio, "127.0.0.1:11125"),
        ]
    }

    fn silent_hints(card: &ConnectCard, listeners: &[(Protocol, &str)], os: Os) -> Vec<Hint> {
        let reports: Vec<ListenerReport> = listeners
            .iter()
            .map(|&(kind, addr)| ListenerReport::new(kind, addr.parse().unwrap()))
            .collect();
        hints(&HintInput {
            elapsed: NO_DATA_HINT,
            frames: 0,
            reports: &reports,
            addresses: card.addresses(),
            phone: None,
            os,
        })
    }

    fn count(image: &RgbaImage, rgba: [u8; 4]) -> usize {
        image.data.chunks_exact(4).filter(|p| *p == rgba).count()
    }

    fn assert_inside(image: &RgbaImage) {
        for y in 0..image.height {
            for x in image.width - PAD..image.width {
                assert_eq!(
                    image.pixel(x, y),
                    CARD,
                    "drawn at ({x}, {y}), past the padding"
                );
            }
        }
    }

    #[test]
    fn a_card_kept_off_the_stream_names_apps_and_ports_but_no_address() {
        let listeners = all_apps();
        let mut card = connect_card(&listeners, "192.168.178.20");
        card.set_hints(silent_hints(&card, &listeners, Os::Linux));
        let texts: Vec<String> = private_layout(&card, 1200)
            .steps
            .into_iter()
            .filter_map(|step| match step {
                Draw::Text { text, .. } => Some(text),
                Draw::Fill(..) => None,
            })
            .collect();
        let all = texts.join("\n");
        for address in ["192.168.178.20", "172.17.0.1"] {
            assert!(!all.contains(address), "{address} is on the stage:\n{all}");
        }
        for expected in [
            "UDP port 39539",
            "iFacialMocap",
            "control panel",
            "No face data",
        ] {
            assert!(all.contains(expected), "no `{expected}`:\n{all}");
        }
        // It fits a small stage too.
        let image = fit_connect_private(&card, (640, 480));
        assert!(image.width <= 640 && image.height <= 480);
    }

    #[test]
    fn connect_card_stays_inside_its_padding_at_any_width() {
        // An IPv6 primary address is too long for large letters on a narrow card.
        for primary in ["192.168.100.200", "2001:db8:1234:5678:9abc:def0:1234:5678"] {
            let plain = connect_card(&all_apps(), primary);
            for os in [Os::Linux, Os::Windows, Os::MacOs] {
                let card = plain
                    .clone()
                    .with_hints(silent_hints(&plain, &all_apps(), os));
                for width in [200, 320, 480, connect_width(1280), 2000] {
                    let image = render_connect(&card, width);
                    assert_eq!(image.width, width.max(320));
                    assert_inside(&image);
                }
            }
        }
    }

    #[test]
    fn connect_card_fits_small_stages_at_half_size() {
        let plain = connect_card(&all_apps(), "192.168.1.20");
        let card = plain
            .clone()
            .with_hints(silent_hints(&plain, &all_apps(), Os::Linux));
        let large = fit_connect(&card, (1280, 720));
        assert_eq!(large, render_connect(&card, connect_width(1280)));
        for viewport in [(800, 800), (640, 480), (1280, 600)] {
            let image = fit_connect(&card, viewport);
            assert!(
                image.width <= viewport.0 && image.height <= viewport.1,
                "{}x{} on {viewport:?}",
                image.width,
                image.height
            );
            let text = image
                .data
                .chunks_exact(4)
                .filter(|p| p[..3] == TEXT[..3])
                .count();
            assert!(text > 500, "the text survives the shrinking: {text}");
        }
    }

    #[test]
    fn a_webcam_card_shows_the_camera_or_what_keeps_it_away() {
        let missing = ConnectCard::webcam(WebcamCard {
            camera: None,
            rates: None,
            problem: Some("no camera found: plug in a webcam".into()),
        });
        let open = ConnectCard::webcam(WebcamCard {
            camera: Some("HD Pro Webcam C920 (/dev/video2), 640x480 at 30 fps MJPEG".into()),
            rates: Some("camera 30 fps, tracker 29 fps (19 ms a frame)".into()),
            problem: None,
        });
        assert_eq!(open.title(), crate::connect::WEBCAM_TITLE);
        let width = connect_width(1280);
        let (missing_image, open_image) = (
            render_connect(&missing, width),
            render_connect(&open, width),
        );
        // A missing camera is amber ("No camera yet" and the fix); an open one is named in
        // the accent colour, with no amber at all.
        assert!(count(&missing_image, WARN) > 1000);
        assert_eq!(count(&missing_image, ACCENT), 0);
        assert!(count(&open_image, ACCENT) > 500);
        assert_eq!(count(&open_image, WARN), 0);
        // No address is drawn, so the private card is the same card.
        assert_eq!(render_connect_private(&open, width), open_image);
        assert!(open_image.height < 300, "{} pixels high", open_image.height);
    }

    #[test]
    fn connect_card_grows_with_hints_drawn_in_the_warning_colour() {
        let plain = connect_card(&all_apps(), "192.168.1.20");
        let hinted = plain
            .clone()
            .with_hints(silent_hints(&plain, &all_apps(), Os::Linux));
        let width = connect_width(1280);
        let before = render_connect(&plain, width);
        let after = render_connect(&hinted, width);
        assert!(after.height > before.height + 100, "the hints take room");
        // The loopback note is amber too; the hints add much more of it.
        assert!(count(&after, WARN) > count(&before, WARN) + 2000);
        assert!(
            count(&after, COMMAND_BG) > 0,
            "commands sit on a dark strip"
        );
        assert_eq!(count(&before, COMMAND_BG), 0);
        // The usual listeners (every app on all interfaces) with their hints fit a 1280x720
        // stage, the extra address included.
        let usual: Vec<(Protocol, String)> = Protocol::FAMILIES
            .into_iter()
            .map(|p| (p, format!("0.0.0.0:{}", crate::ingest::default_port(p))))
            .collect();
        let usual: Vec<(Protocol, &str)> = usual.iter().map(|(p, a)| (*p, a.as_str())).collect();
        let card = connect_card(&usual, "192.168.1.20");
        let card = card
            .clone()
            .with_hints(silent_hints(&card, &usual, Os::Linux));
        let image = render_connect(&card, connect_width(1280));
        assert!(image.height <= 720, "{} pixels high", image.height);
    }

    #[test]
    fn connect_card_shows_the_address_large_and_the_apps() {
        let card = connect_card(&all_apps(), "192.168.1.20");
        let image = render_connect(&card, connect_width(1280));
        // "192.168.1.20" at scale 6: far more green than a line of small text would give.
        let green = count(&image, ADDRESS);
        assert!(green > 12 * 36 * 8, "{green} address pixels");
        assert!(count(&image, ACCENT) > 500, "app names are drawn");
        let narrow = render_connect(&card, 320);
        assert!(
            narrow.height > image.height,
            "a narrow card wraps into more lines"
        );
    }

    #[test]
    fn apps_with_the_same_instruction_share_a_row() {
        let one = connect_card(&[(Protocol::IFacialMocap, "0.0.0.0:49983")], "192.168.1.20");
        let two = connect_card(
            &[
                (Protocol::IFacialMocap, "0.0.0.0:49983"),
                (Protocol::Facemotion3d, "0.0.0.0:49993"),
            ],
            "192.168.1.20",
        );
        assert_eq!(two.apps().len(), 2);
        let width = connect_width(1280);
        assert_eq!(
            render_connect(&one, width).height,
            render_connect(&two, width).height
        );
        let three = connect_card(
            &[
                (Protocol::IFacialMocap, "0.0.0.0:49983"),
                (Protocol::LiveLinkFace, "0.0.0.0:11111"),
            ],
            "192.168.1.20",
        );
        assert!(render_connect(&three, width).height > render_connect(&one, width).height);
    }

    #[test]
    fn connect_card_is_centred_and_sized_for_the_stage() {
        assert_eq!(connect_width(1280), 1200);
        assert_eq!(connect_width(640), 560);
        assert_eq!(connect_width(400), 480);
        assert_eq!(connect_width(3840), 1200);
        assert_eq!(connect_placement((1280, 720), (1200, 680)), (40, 20));
        assert_eq!(connect_placement((1280, 720), (1200, 900)), (40, 0));
        assert_eq!(connect_placement((400, 300), (480, 200)), (0, 50));
    }
}
