//! The guided calibration routine's interfaces: run from `facewire calibrate`, its prompts on
//! the terminal and, when there is one, on the stage; run from the control panel, its prompts
//! on the stage and in the panel, which takes the review's decision.

use std::io::{BufRead, Write};

use crate::calibrate::{Decision, Phase, Prompt, RoutineUi, Summary, TerminalUi};
use crate::control::{prompt_card, AppEvent, Notify, PromptChanges, RoutineView};

/// The frames an input has received so far.
pub type FrameCount = Box<dyn Fn() -> u64 + Send>;

/// Shows the routine's prompts on the terminal and, with `notify`, as a card on the stage;
/// the review is answered on the terminal. Until the first frame arrives the stage shows the
/// connect card (where to send, as a run shows it) instead of the routine's waiting card.
pub struct StageUi<R, W> {
    terminal: TerminalUi<R, W>,
    notify: Option<Notify>,
    shown: PromptChanges,
    /// The frames the network input has received so far, to know whether one has arrived.
    frames: Option<FrameCount>,
    /// Whether the stage was last told to show the connect card.
    connecting: bool,
}

impl<R, W> StageUi<R, W> {
    /// Prompts on `terminal`, and on the stage when `notify` is given.
    pub fn new(terminal: TerminalUi<R, W>, notify: Option<Notify>) -> StageUi<R, W> {
        StageUi {
            terminal,
            notify,
            shown: PromptChanges::default(),
            frames: None,
            connecting: false,
        }
    }

    /// Leaves the stage to the connect card while the routine waits and `frames` (the frames
    /// the network input has received) is 0.
    pub fn with_frames(mut self, frames: FrameCount) -> StageUi<R, W> {
        self.frames = Some(frames);
        self
    }

    /// Whether the routine waits for a first frame that has not come.
    fn before_first_frame(&self, prompt: &Prompt) -> bool {
        prompt.phase == Phase::Waiting && self.frames.as_ref().is_some_and(|count| count() == 0)
    }
}

impl<R: BufRead, W: Write> RoutineUi for StageUi<R, W> {
    fn show(&mut self, prompt: &Prompt) {
        self.terminal.show(prompt);
        let Some(notify) = &self.notify else { return };
        if self.before_first_frame(prompt) {
            // No prompt card: the stage shows its connect card.
            if !self.connecting {
                notify(AppEvent::Prompt(None));
                self.connecting = true;
                self.shown.reset();
            }
            return;
        }
        self.connecting = false;
        // Redraw the card only when what it shows changes (percent of progress, whole seconds).
        if !self.shown.changed(prompt) {
            return;
        }
        notify(AppEvent::Prompt(Some(prompt_card(prompt, "the terminal"))));
    }

    fn review(&mut self, summary: &Summary) -> Decision {
        self.terminal.review(summary)
    }
}

/// Runs the guided routine's prompts on the stage and in the panel, and takes the review's
/// decision from the panel. Events go out through `notify` (the stage's event proxy).
pub struct PanelRoutineUi {
    notify: Box<dyn Fn(AppEvent) + Send>,
    decisions: std::sync::mpsc::Receiver<Decision>,
    /// What the stage card shows, to redraw only changes.
    shown: PromptChanges,
}

impl PanelRoutineUi {
    /// A routine UI sending its events through `notify` and waiting for review decisions on
    /// `decisions` (a closed channel cancels).
    pub fn new(
        notify: Box<dyn Fn(AppEvent) + Send>,
        decisions: std::sync::mpsc::Receiver<Decision>,
    ) -> PanelRoutineUi {
        PanelRoutineUi {
            notify,
            decisions,
            shown: PromptChanges::default(),
        }
    }
}

impl crate::calibrate::RoutineUi for PanelRoutineUi {
    fn show(&mut self, prompt: &crate::calibrate::Prompt) {
        if !self.shown.changed(prompt) {
            return;
        }
        let card = prompt_card(prompt, "the panel");
        (self.notify)(AppEvent::Routine(RoutineView::Running {
            step: card.step,
            steps: card.steps,
            title: card.title.clone(),
            status: card.status.clone(),
            progress: card.progress,
        }));
        (self.notify)(AppEvent::Prompt(Some(card)));
    }

    fn review(&mut self, summary: &crate::calibrate::Summary) -> Decision {
        self.shown.reset();
        let steps = crate::calibrate::STEPS
            .iter()
            .map(|s| s.title.to_string())
            .collect();
        (self.notify)(AppEvent::Routine(RoutineView::Review {
            summary: summary.to_string(),
            steps,
        }));
        self.decisions.recv().unwrap_or(Decision::Cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    fn prompt(phase: Phase, step: usize) -> Prompt {
        Prompt {
            step,
            steps: 22,
            title: "Waiting for the phone",
            instruction: "Start the face-tracking app.",
            phase,
            progress: 0.0,
            remaining: Duration::ZERO,
        }
    }

    #[test]
    fn the_stage_shows_the_connect_card_until_the_first_frame() {
        let (tx, rx) = mpsc::channel();
        let notify: Notify = Arc::new(move |event| {
            let _ = tx.send(event);
        });
        let frames = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&frames);
        let terminal = TerminalUi::new(std::io::Cursor::new(Vec::new()), Vec::new());
        let mut ui = StageUi::new(terminal, Some(notify))
            .with_frames(Box::new(move || count.load(Ordering::Relaxed)));
        let cards = |rx: &mpsc::Receiver<AppEvent>| -> Vec<Option<String>> {
            rx.try_iter()
                .filter_map(|e| match e {
                    AppEvent::Prompt(card) => Some(card.map(|c| c.title)),
                    _ => None,
                })
                .collect()
        };
        // Waiting with no frame yet: no prompt card, so the stage shows the connect card.
        ui.show(&prompt(Phase::Waiting, 0));
        ui.show(&prompt(Phase::Waiting, 0));
        assert_eq!(cards(&rx), [None]);
        // A frame came (the face not yet seen): the routine's own waiting card.
        frames.store(1, Ordering::Relaxed);
        ui.show(&prompt(Phase::Waiting, 0));
        assert_eq!(cards(&rx), [Some("Waiting for the phone".to_string())]);
        ui.show(&prompt(Phase::Prepare, 0));
        assert_eq!(cards(&rx).len(), 1);
        // The phone stops later: the routine's card says so (the connect card is gone).
        ui.show(&prompt(Phase::Waiting, 3));
        assert_eq!(cards(&rx), [Some("Waiting for the phone".to_string())]);
    }
}
