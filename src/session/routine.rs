//! The guided calibration routine run from `facewire calibrate`: its prompts on the terminal
//! and, when there is one, on the stage.

use std::io::{BufRead, Write};

use super::Notify;
use crate::app::AppEvent;
use crate::calibrate::{Decision, Prompt, RoutineUi, Summary, TerminalUi};
use crate::panel::{prompt_card, PromptChanges};

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
