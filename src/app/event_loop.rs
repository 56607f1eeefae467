//! The stage's winit event loop, which receives the session's [`AppEvent`]s through its
//! `EventLoopProxy`.

use crate::control::{AppEvent, Notify};

/// The stage's event loop, opened before the window so that background threads can be handed
/// a [`Notify`] first.
pub struct StageLoop {
    event_loop: winit::event_loop::EventLoop<AppEvent>,
}

/// The event loop could not be opened or ended with an error.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct LoopError {
    what: String,
    #[source]
    source: winit::error::EventLoopError,
}

impl StageLoop {
    /// Opens the event loop; `hint` ends the message when there is no display.
    pub fn open(hint: &str) -> Result<StageLoop, LoopError> {
        let event_loop = winit::event_loop::EventLoop::<AppEvent>::with_user_event()
            .build()
            .map_err(|source| LoopError {
                what: format!("cannot open a window ({hint})"),
                source,
            })?;
        Ok(StageLoop { event_loop })
    }

    /// A [`Notify`] that sends events to this loop.
    pub fn notifier(&self) -> Notify {
        let proxy = self.event_loop.create_proxy();
        std::sync::Arc::new(move |event: AppEvent| {
            let _ = proxy.send_event(event);
        })
    }

    /// Runs `app` until the stage closes.
    pub fn run(self, app: &mut super::StageApp) -> Result<(), LoopError> {
        self.event_loop.run_app(app).map_err(|source| LoopError {
            what: "the stage's event loop failed".into(),
            source,
        })
    }
}
