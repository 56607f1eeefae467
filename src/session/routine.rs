//! The guided calibration routine's interfaces: run from `facewire calibrate`, its prompts on
//! the terminal and, when there is one, on the stage; run from the control panel, its prompts
//! on the stage and in the panel, which takes the review's decision.

use std::io::{BufRead, Write};

use crate::calibrate::{Decision, Prompt, RoutineUi, Summary, TerminalUi};
use crate::control::{prompt_card, AppEvent, Notify, PromptChanges, RoutineView};

/// Shows the routine's prompts on the terminal and, with `notify`, as a card on the stage;
/// the review is answered on the terminal.
pub struct StageUi<R, W> {
    terminal: TerminalUi<R, W>,
    notify: Option<Notify>,
    shown: PromptChanges,
}

impl<R, W> StageUi<R, W> {
    /// Prompts on `terminal`, and on the stage when `notify` is given.
    pub fn new(terminal: TerminalUi<R, W>, notify: Option<Notify>) -> StageUi<R, W> {
        StageUi {
            terminal,
            notify,
            shown: PromptChanges::default(),
        }
    }
}

impl<R: BufRead, W: Write> RoutineUi for StageUi<R, W> {
    fn show(&mut self, prompt: &Prompt) {
        self.terminal.show(prompt);
        let Some(notify) = &self.notify else { return };
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
