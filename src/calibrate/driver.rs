//! The interactive calibration driver: runs a [`Routine`] in real time on frames from any
//! source, shows its prompts through a [`RoutineUi`] (the terminal's [`TerminalUi`], or a
//! window), asks for review, and hands back the calibration to save.

use std::io::{self, BufRead, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tracing::{debug, info};

use super::profile::Profile;
use super::routine::{Calibration, Phase, Prompt, Routine, Summary};
use crate::arkit::FaceFrame;

/// How often the routine advances when no frame arrives.
pub const TICK: Duration = Duration::from_millis(30);

/// What the performer decided after reviewing the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Save the new profile.
    Save,
    /// Repeat this step (0-based index into the routine's steps), then review again.
    Redo(usize),
    /// Discard the calibration.
    Cancel,
}

/// Where prompts are shown and the review happens.
pub trait RoutineUi {
    /// Shows the current prompt. Called after every frame and tick, so implementations should
    /// redraw only what changed.
    fn show(&mut self, prompt: &Prompt);
    /// Shows the summary and returns the performer's decision.
    fn review(&mut self, summary: &Summary) -> Decision;
}

/// Errors of the interactive routine.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The frame source closed before the routine finished.
    #[error("the face data stream ended before calibration finished")]
    Disconnected,
}

/// Cells of the terminal progress bar.
const BAR: usize = 30;

/// A [`RoutineUi`] on a text terminal: prints each step's title and instruction when it
/// changes, a progress bar redrawn in place, and reads the review decision as a line: Enter or
/// `y` saves, a step number (as printed, 1-based) repeats that step, `q` cancels.
#[derive(Debug)]
pub struct TerminalUi<R, W> {
    /// Where decisions are read.
    input: R,
    /// Where prompts are written.
    output: W,
    /// The last step and phase shown, and the filled cells of the bar.
    last: Option<(usize, Phase, usize)>,
    /// The routine's number of steps (from the last prompt).
    steps: usize,
    /// Whether the progress bar is drawn (redrawn in place with `\r`): on a terminal, not into
    /// a pipe or a file, which get the steps' lines alone.
    bar: bool,
}

impl TerminalUi<io::StdinLock<'static>, io::Stdout> {
    /// A terminal UI on standard input and output; the progress bar only when standard output
    /// is a terminal.
    pub fn stdio() -> Self {
        let bar = io::IsTerminal::is_terminal(&io::stdout());
        TerminalUi::new(io::stdin().lock(), io::stdout()).with_bar(bar)
    }
}

impl<R: BufRead, W: Write> TerminalUi<R, W> {
    /// A terminal UI reading decisions from `input` and writing to `output`.
    pub fn new(input: R, output: W) -> Self {
        TerminalUi {
            input,
            output,
            last: None,
            steps: 0,
            bar: true,
        }
    }

    /// Draws the progress bar (the default) or leaves it out.
    pub fn with_bar(mut self, bar: bool) -> Self {
        self.bar = bar;
        self
    }

    /// The writer, for tests.
    pub fn output(&self) -> &W {
        &self.output
    }

    fn draw(&mut self, prompt: &Prompt) -> io::Result<()> {
        let filled = ((prompt.progress.clamp(0.0, 1.0) * BAR as f32).round() as usize).min(BAR);
        let key = (prompt.step, prompt.phase, filled);
        if self.last == Some(key) {
            return Ok(());
        }
        let new_phase = self
            .last
            .is_none_or(|(s, p, _)| s != prompt.step || p != prompt.phase);
        self.last = Some(key);
        let out = &mut self.output;
        if new_phase {
            match prompt.phase {
                Phase::Prepare => writeln!(
                    out,
                    "\n\nStep {}/{}: {}\n  {}",
                    prompt.step + 1,
                    prompt.steps,
                    prompt.title.to_uppercase(),
                    prompt.instruction
                )?,
                Phase::Record => writeln!(out, "\n  recording...")?,
                Phase::Waiting => {
                    writeln!(out, "\n\n{}\n  {}", prompt.title, prompt.instruction)?;
                    return out.flush();
                }
                Phase::Finished => {
                    writeln!(out, "\n\n{}\n  {}", prompt.title, prompt.instruction)?;
                    return out.flush();
                }
            }
        }
        if self.bar && prompt.phase != Phase::Finished {
            let label = if prompt.phase == Phase::Prepare {
                "get ready"
            } else {
                "hold     "
            };
            write!(
                out,
                "\r  {label} [{}{}] {:4.1} s ",
                "#".repeat(filled),
                ".".repeat(BAR - filled),
                prompt.remaining.as_secs_f32()
            )?;
        }
        out.flush()
    }

    fn ask(&mut self, summary: &Summary) -> io::Result<Decision> {
        writeln!(self.output, "\n\n{summary}")?;
        let flagged = summary.flagged().count();
        if flagged > 0 {
            writeln!(
                self.output,
                "{flagged} channel(s) flagged; repeat their step to calibrate them."
            )?;
        }
        loop {
            write!(
                self.output,
                "Save? [Enter or y: save; 1-{}: repeat that step; q: cancel] ",
                self.steps
            )?;
            self.output.flush()?;
            let mut line = String::new();
            if self.input.read_line(&mut line)? == 0 {
                return Ok(Decision::Cancel);
            }
            match parse_decision(&line, self.steps) {
                Some(d) => return Ok(d),
                None => writeln!(self.output, "Please answer Enter, y, a step number or q.")?,
            }
        }
    }
}

/// Reads a review answer: empty or `y`/`yes` saves, `q`/`quit`/`cancel` cancels, a number
/// from 1 to `steps` repeats that step (returned 0-based); anything else is `None`.
pub fn parse_decision(line: &str, steps: usize) -> Option<Decision> {
    let answer = line.trim().to_ascii_lowercase();
    match answer.as_str() {
        "" | "y" | "yes" | "s" | "save" => Some(Decision::Save),
        "q" | "quit" | "cancel" => Some(Decision::Cancel),
        _ => match answer.parse::<usize>() {
            Ok(n) if (1..=steps).contains(&n) => Some(Decision::Redo(n - 1)),
            _ => None,
        },
    }
}

impl<R: BufRead, W: Write> RoutineUi for TerminalUi<R, W> {
    fn show(&mut self, prompt: &Prompt) {
        self.steps = prompt.steps;
        // A closed terminal must not stop the routine; the review then cancels.
        let _ = self.draw(prompt);
    }

    fn review(&mut self, summary: &Summary) -> Decision {
        self.ask(summary).unwrap_or(Decision::Cancel)
    }
}

/// Runs the full guided routine ([`Routine::new`]) in real time on raw frames from `frames`,
/// showing prompts through `ui`, until the performer saves (`Ok(Some(calibration))`, to be saved
/// with [`Profile::save`]) or cancels (`Ok(None)`). `old` is the performer's current profile,
/// shown beside the new ranges and carried over where nothing new was measured.
pub fn run_routine(
    frames: Receiver<FaceFrame>,
    ui: &mut dyn RoutineUi,
    old: Option<&Profile>,
    performer: &str,
) -> Result<Option<Calibration>, DriveError> {
    drive(Routine::new(), &frames, ui, old, performer)
}

/// [`run_routine`] with a given routine (for shorter step lists).
pub fn drive(
    mut routine: Routine,
    frames: &Receiver<FaceFrame>,
    ui: &mut dyn RoutineUi,
    old: Option<&Profile>,
    performer: &str,
) -> Result<Option<Calibration>, DriveError> {
    info!(
        performer,
        steps = routine.steps().len(),
        "calibration started"
    );
    loop {
        routine.tick(Instant::now());
        ui.show(&routine.prompt());
        while !routine.is_done() {
            match frames.recv_timeout(TICK) {
                Ok(frame) => routine.feed(&frame, Instant::now()),
                Err(RecvTimeoutError::Timeout) => routine.tick(Instant::now()),
                Err(RecvTimeoutError::Disconnected) => return Err(DriveError::Disconnected),
            }
            ui.show(&routine.prompt());
        }
        let calibration = routine.result(performer, old);
        match ui.review(&calibration.summary) {
            Decision::Save => {
                info!(performer, "calibration accepted");
                return Ok(Some(calibration));
            }
            Decision::Cancel => {
                info!(performer, "calibration cancelled");
                return Ok(None);
            }
            Decision::Redo(step) => {
                debug!(step, "repeating a step");
                routine.redo(step);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_parse() {
        assert_eq!(parse_decision("\n", 5), Some(Decision::Save));
        assert_eq!(parse_decision(" Y \n", 5), Some(Decision::Save));
        assert_eq!(parse_decision("q", 5), Some(Decision::Cancel));
        assert_eq!(parse_decision("3", 5), Some(Decision::Redo(2)));
        assert_eq!(parse_decision("0", 5), None);
        assert_eq!(parse_decision("6", 5), None);
        assert_eq!(parse_decision("what", 5), None);
    }

    #[test]
    fn terminal_prints_prompts_once_and_reads_a_redo() {
        let mut ui = TerminalUi::new(io::Cursor::new(b"x\n2\n".to_vec()), Vec::new());
        let prompt = Prompt {
            step: 1,
            steps: 3,
            title: "Blink",
            instruction: "Close both eyes.",
            phase: Phase::Prepare,
            progress: 0.5,
            remaining: Duration::from_secs(1),
        };
        ui.show(&prompt);
        ui.show(&prompt);
        assert_eq!(ui.review(&Summary::default()), Decision::Redo(1));
        assert_eq!(ui.review(&Summary::default()), Decision::Cancel);
        let text = String::from_utf8(ui.output().clone()).unwrap();
        assert_eq!(text.matches("Step 2/3: BLINK").count(), 1, "{text}");
        assert!(text.contains("Please answer"), "{text}");
    }

    #[test]
    fn without_a_terminal_the_steps_are_lines_and_no_bar_is_drawn() {
        let mut ui = TerminalUi::new(io::Cursor::new(b"\n".to_vec()), Vec::new()).with_bar(false);
        let mut prompt = Prompt {
            step: 0,
            steps: 2,
            title: "Rest",
            instruction: "Look at the camera.",
            phase: Phase::Prepare,
            progress: 0.0,
            remaining: Duration::from_secs(2),
        };
        for phase in [Phase::Prepare, Phase::Record] {
            prompt.phase = phase;
            for progress in [0.1, 0.5, 0.9] {
                prompt.progress = progress;
                ui.show(&prompt);
            }
        }
        let text = String::from_utf8(ui.output().clone()).unwrap();
        assert!(text.contains("Step 1/2: REST"), "{text}");
        assert!(text.contains("recording..."), "{text}");
        assert!(!text.contains('\r') && !text.contains('#'), "{text:?}");
    }
}
