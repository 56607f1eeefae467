//! The panel's API section: stream tools asking for a token wait here until the performer
//! allows or denies them.

use egui::{Color32, RichText};
use tokio::sync::oneshot;

use super::PanelAction;

/// A plugin waiting for the performer's answer, as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRequest {
    /// Which request it is (the answer names it).
    pub id: u64,
    /// The plugin's name.
    pub plugin: String,
    /// Its developer.
    pub developer: String,
}

/// The plugins waiting for an answer, with where each answer goes.
#[derive(Debug, Default)]
pub struct Approvals {
    next: u64,
    waiting: Vec<(PluginRequest, oneshot::Sender<bool>)>,
}

impl Approvals {
    /// `plugin` by `developer` asks for a token; the answer goes to `reply`.
    pub fn ask(&mut self, plugin: String, developer: String, reply: oneshot::Sender<bool>) {
        self.next += 1;
        tracing::warn!(
            %plugin,
            %developer,
            "a plugin asks for a token: allow or deny it at the top of the control panel \
             (unanswered, it is refused after two minutes)"
        );
        self.waiting.push((
            PluginRequest {
                id: self.next,
                plugin,
                developer,
            },
            reply,
        ));
    }

    /// Answers request `id`; returns what was done, for the panel's messages.
    pub fn answer(&mut self, id: u64, allow: bool) -> Result<String, AnswerError> {
        let Some(at) = self.waiting.iter().position(|(r, _)| r.id == id) else {
            return Err(AnswerError::NotWaiting);
        };
        let (request, reply) = self.waiting.remove(at);
        let verb = if allow { "allowed" } else { "denied" };
        tracing::info!(plugin = %request.plugin, developer = %request.developer, allow, "plugin answered");
        reply.send(allow).map_err(|_| AnswerError::Lapsed {
            plugin: request.plugin.clone(),
        })?;
        Ok(format!(
            "{} by {} {verb}",
            request.plugin, request.developer
        ))
    }

    /// The requests still waiting (those whose plugin stopped waiting are forgotten).
    pub fn waiting(&mut self) -> Vec<PluginRequest> {
        self.waiting.retain(|(_, reply)| !reply.is_closed());
        self.waiting.iter().map(|(r, _)| r.clone()).collect()
    }
}

/// Why a plugin's request could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The request was answered already, or is not known.
    #[error("that request is no longer waiting")]
    NotWaiting,
    /// The plugin stopped waiting for the answer.
    #[error("{plugin} stopped waiting (a request lapses after two minutes)")]
    Lapsed {
        /// The plugin's name.
        plugin: String,
    },
}

/// Lays the prompts out: one line per plugin waiting, with Allow and Deny.
pub(super) fn section(
    ui: &mut egui::Ui,
    waiting: &[PluginRequest],
    actions: &mut Vec<PanelAction>,
) {
    if waiting.is_empty() {
        return;
    }
    ui.label(
        RichText::new("Stream tools ask to control facewire")
            .strong()
            .color(Color32::from_rgb(220, 150, 40)),
    );
    for request in waiting {
        ui.horizontal_wrapped(|ui| {
            ui.label(format!(
                "{} (by {}) wants a token: it could trigger expressions, switch avatars and \
                 move the face.",
                request.plugin, request.developer
            ));
            if ui.button("Allow").clicked() {
                actions.push(PanelAction::AnswerPlugin {
                    id: request.id,
                    allow: true,
                });
            }
            if ui.button("Deny").clicked() {
                actions.push(PanelAction::AnswerPlugin {
                    id: request.id,
                    allow: false,
                });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_reach_the_plugin_and_lapsed_requests_go() {
        let mut approvals = Approvals::default();
        let (reply, mut answer) = oneshot::channel();
        approvals.ask("Streamer.bot".into(), "Streamer.bot".into(), reply);
        let (reply, gone) = oneshot::channel();
        approvals.ask("Other".into(), "Someone".into(), reply);
        drop(gone);
        let waiting = approvals.waiting();
        assert_eq!(waiting.len(), 1);
        assert!(approvals.answer(waiting[0].id, true).is_ok());
        assert_eq!(answer.try_recv(), Ok(true));
        assert!(approvals.answer(waiting[0].id, false).is_err());
        assert!(approvals.waiting().is_empty());
    }
}
