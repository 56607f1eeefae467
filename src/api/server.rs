//! The listener: a thread ("facewire-api") with a tokio runtime, one task per connection.
//! Hostile clients are bounded: addresses not allowed are closed at once, connections beyond
//! [`Limits::max_connections`] are refused with a close frame, messages beyond
//! [`Limits::max_message`] close the connection, and a client that does not read its answers
//! is dropped once [`Limits::queue`] messages wait for it. Every drop is counted.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;

use super::plugin::{Plugin, Shared, Step};
use super::{ApiConfig, ApiEvent, ApiHost, InjectedStore, TokenError, TokenStore};

/// Bounds on what clients may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; more are refused with close code 1013 (try again later).
    pub max_connections: usize,
    /// The largest message (and frame) read, in bytes; a larger one closes the connection
    /// with close code 1009 (too big).
    pub max_message: usize,
    /// Messages waiting to be sent to one client; a client that lets more pile up is dropped.
    pub queue: usize,
    /// How long a client may take to complete the WebSocket handshake.
    pub handshake_timeout: Duration,
    /// How long a token request waits for the host's answer before it counts as denied.
    pub approval_timeout: Duration,
    /// How long an answer waits for the run to carry out what it asked (an expression or a
    /// hotkey, taken at the chain's next tick, every 10 ms) before it goes out anyway.
    pub apply_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            max_message: 64 * 1024,
            queue: 64,
            handshake_timeout: Duration::from_secs(5),
            approval_timeout: Duration::from_secs(120),
            apply_timeout: Duration::from_millis(500),
        }
    }
}

/// Why the API server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The address could not be bound (in use, or not this PC's).
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        cause: std::io::Error,
    },
    /// Listening beyond loopback with no address allowed would only refuse everyone, or was
    /// not meant.
    #[error("{addr} is not loopback and [api] allow lists no address")]
    Exposed {
        /// The address.
        addr: SocketAddr,
    },
    /// The tokens file is unusable.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The thread could not be started.
    #[error("cannot start the API thread: {0}")]
    Thread(std::io::Error),
}

/// What the server counted since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections from addresses not allowed, closed at once.
    pub not_allowed: u64,
    /// Connections refused because [`Limits::max_connections`] were served.
    pub refused_full: u64,
    /// Clients that did not complete the WebSocket handshake in time or correctly.
    pub bad_handshakes: u64,
    /// Messages answered with an `APIError` before they were read (not JSON, bad envelope).
    pub malformed: u64,
    /// Connections closed for a message larger than [`Limits::max_message`].
    pub oversized: u64,
    /// Clients dropped because they did not read their answers.
    pub dropped_slow: u64,
    /// Events a slow session missed.
    pub events_missed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    not_allowed: AtomicU64,
    refused_full: AtomicU64,
    bad_handshakes: AtomicU64,
    malformed: AtomicU64,
    oversized: AtomicU64,
    dropped_slow: AtomicU64,
    events_missed: AtomicU64,
    /// When a dropped client was last logged: at most one warning per [`LOG_EVERY`].
    last_warning: Mutex<Option<Instant>>,
}

/// The least time between two warnings about dropped clients.
const LOG_EVERY: Duration = Duration::from_secs(10);

impl Counters {
    fn bump(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ApiStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ApiStats {
            accepted: get(&self.accepted),
            not_allowed: get(&self.not_allowed),
            refused_full: get(&self.refused_full),
            bad_handshakes: get(&self.bad_handshakes),
            malformed: get(&self.malformed),
            oversized: get(&self.oversized),
            dropped_slow: get(&self.dropped_slow),
            events_missed: get(&self.events_missed),
        }
    }

    /// Warns about a dropped client, at most once per [`LOG_EVERY`], with the totals so far.
    fn warn(&self, peer: SocketAddr, reason: &'static str) {
        let now = Instant::now();
        let mut last = self.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < LOG_EVERY) {
            tracing::debug!(%peer, reason, "API client dropped");
            return;
        }
        *last = Some(now);
        let s = self.snapshot();
        tracing::warn!(
            %peer,
            reason,
            not_allowed = s.not_allowed,
            refused_full = s.refused_full,
            bad_handshakes = s.bad_handshakes,
            oversized = s.oversized,
            dropped_slow = s.dropped_slow,
            "API client dropped (totals so far; further drops within 10 s are not logged)"
        );
    }
}

/// The running server. Dropping it stops the server and joins its thread.
#[derive(Debug)]
pub struct ApiHandle {
    addr: SocketAddr,
    events: broadcast::Sender<ApiEvent>,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ApiHandle {
    /// The address it listens on (the port chosen when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends `event` to every session subscribed to it. Never blocks; a session too slow to
    /// take events misses the oldest (counted in [`ApiStats::events_missed`]).
    pub fn emit(&self, event: ApiEvent) {
        // No session subscribed is no error.
        let _ = self.events.send(event);
    }

    /// A sender of events that the rest of a live run can keep (the ingest thread's chain
    /// reports tracking changes and hotkeys through one); it outlives nothing: once the
    /// server stops, what it sends goes nowhere.
    pub fn emitter(&self) -> ApiEmitter {
        ApiEmitter(self.events.clone())
    }

    /// What was counted so far.
    pub fn stats(&self) -> ApiStats {
        self.counters.snapshot()
    }

    /// Stops the server: every connection is closed and the thread joined.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the API thread panicked");
            }
        }
    }
}

impl Drop for ApiHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends events to the API's subscribed sessions; see [`ApiHandle::emitter`].
#[derive(Debug, Clone)]
pub struct ApiEmitter(broadcast::Sender<ApiEvent>);

impl ApiEmitter {
    /// An emitter into `events`, for tests of what a live run emits.
    #[cfg(test)]
    pub fn for_tests(events: broadcast::Sender<ApiEvent>) -> ApiEmitter {
        ApiEmitter(events)
    }

    /// Sends `event` to every session subscribed to it; never blocks.
    pub fn emit(&self, event: ApiEvent) {
        let _ = self.0.send(event);
    }
}

/// What the accept loop and every connection share.
struct Context {
    config: ApiConfig,
    limits: Limits,
    shared: Shared,
    counters: Arc<Counters>,
    next_session: AtomicU64,
    connections: Arc<Semaphore>,
    /// Refusals being written at once (each is a handshake and a close frame).
    refusals: Arc<Semaphore>,
}

/// Starts the server on its own thread: binds `config.listen` (errors come back here), opens
/// the tokens file, and serves until the handle is dropped. `host` answers the requests;
/// injected values go to `injected`.
pub fn spawn(
    config: &ApiConfig,
    host: Arc<dyn ApiHost>,
    injected: InjectedStore,
    limits: Limits,
) -> Result<ApiHandle, ApiError> {
    let addr = config.listen;
    if !addr.ip().is_loopback() && config.allow.is_empty() {
        return Err(ApiError::Exposed { addr });
    }
    let tokens = TokenStore::open(&config.tokens)?;
    let custom = super::CustomParams::new(tokens.parameters()?);
    {
        let mut injected = injected.lock();
        for p in custom.all() {
            injected.declare(p);
        }
    }
    let listener =
        std::net::TcpListener::bind(addr).map_err(|cause| ApiError::Bind { addr, cause })?;
    let bound = listener
        .local_addr()
        .map_err(|cause| ApiError::Bind { addr, cause })?;
    listener
        .set_nonblocking(true)
        .map_err(|cause| ApiError::Bind { addr, cause })?;
    let (events, _) = broadcast::channel(64);
    let counters = Arc::new(Counters::default());
    let context = Arc::new(Context {
        config: config.clone(),
        limits,
        shared: Shared {
            host,
            tokens,
            injected,
            custom: Mutex::new(custom),
            approve: config.approve.clone(),
            events: events.clone(),
            cooldowns: Mutex::new(Default::default()),
            started: Instant::now(),
            plugins: AtomicUsize::new(0),
        },
        counters: counters.clone(),
        next_session: AtomicU64::new(1),
        connections: Arc::new(Semaphore::new(limits.max_connections)),
        refusals: Arc::new(Semaphore::new(8)),
    });
    let (shutdown, stop) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("facewire-api".into())
        .spawn(move || run(listener, context, stop))
        .map_err(ApiError::Thread)?;
    tracing::info!(addr = %bound, "VTube Studio-compatible API listening");
    Ok(ApiHandle {
        addr: bound,
        events,
        counters,
        shutdown: Some(shutdown),
        thread: Some(thread),
    })
}

fn run(listener: std::net::TcpListener, context: Arc<Context>, stop: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(cause = %e, "cannot start the API runtime");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(cause = %e, "cannot listen for API clients");
                return;
            }
        };
        let mut stop = stop;
        loop {
            tokio::select! {
                _ = &mut stop => break,
                accepted = listener.accept() => match accepted {
                    Ok((tcp, peer)) => admit(&context, tcp, peer),
                    Err(e) => {
                        // Out of file descriptors and the like: wait rather than spin.
                        tracing::debug!(cause = %e, "API accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
    });
    // Dropping the runtime cancels every connection's task.
    drop(runtime);
    tracing::debug!("API server stopped");
}

fn admit(context: &Arc<Context>, tcp: TcpStream, peer: SocketAddr) {
    let counters = &context.counters;
    if !context.config.allows(peer.ip()) {
        counters.bump(&counters.not_allowed);
        counters.warn(peer, "address not in [api] allow");
        return;
    }
    match context.connections.clone().try_acquire_owned() {
        Ok(permit) => {
            tokio::spawn(serve(context.clone(), tcp, peer, permit));
        }
        Err(_) => {
            counters.bump(&counters.refused_full);
            counters.warn(peer, "too many connections");
            if let Ok(permit) = context.refusals.clone().try_acquire_owned() {
                tokio::spawn(refuse(context.clone(), tcp, permit));
            }
        }
    }
}

fn ws_config(limits: &Limits) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(limits.max_message))
        .max_frame_size(Some(limits.max_message))
        .max_write_buffer_size(4 * 1024 * 1024)
}

/// Completes the handshake only to say why the connection closes.
async fn refuse(context: Arc<Context>, tcp: TcpStream, _permit: OwnedSemaphorePermit) {
    let limits = context.limits;
    let handshake = tokio_tungstenite::accept_async_with_config(tcp, Some(ws_config(&limits)));
    if let Ok(Ok(mut ws)) = tokio::time::timeout(limits.handshake_timeout, handshake).await {
        let frame = CloseFrame {
            code: CloseCode::Again,
            reason: "facewire: too many API connections, try again later".into(),
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(Some(frame))).await;
    }
}

/// A token request waiting for the host.
struct Pending {
    request_id: String,
    plugin: String,
    developer: String,
    answer: Pin<Box<dyn Future<Output = bool> + Send>>,
}

async fn answer(pending: &mut Option<Pending>) -> bool {
    match pending {
        Some(p) => (&mut p.answer).await,
        None => std::future::pending().await,
    }
}

async fn serve(
    context: Arc<Context>,
    tcp: TcpStream,
    peer: SocketAddr,
    _permit: OwnedSemaphorePermit,
) {
    let limits = context.limits;
    let counters = &context.counters;
    let _ = tcp.set_nodelay(true);
    let handshake = tokio_tungstenite::accept_async_with_config(tcp, Some(ws_config(&limits)));
    let ws = match tokio::time::timeout(limits.handshake_timeout, handshake).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => {
            counters.bump(&counters.bad_handshakes);
            tracing::debug!(%peer, cause = %e, "API handshake failed");
            return;
        }
        Err(_) => {
            counters.bump(&counters.bad_handshakes);
            counters.warn(peer, "handshake not completed in time");
            return;
        }
    };
    counters.bump(&counters.accepted);
    let shared = &context.shared;
    let id = context.next_session.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(%peer, session = id, "API client connected");

    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::channel::<Message>(limits.queue);
    let mut writer = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
    });

    let mut session = Plugin::new(id);
    let mut events = shared.events.subscribe();
    let mut pending: Option<Pending> = None;
    // Queues a message; false when the client must go (it does not read, or the writer ended).
    let push = |text: String| match tx.try_send(Message::text(text)) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            counters.bump(&counters.dropped_slow);
            counters.warn(peer, "does not read its answers");
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    };
    loop {
        let keep = tokio::select! {
            message = stream.next() => {
                let text = match message {
                    Some(Ok(Message::Text(t))) => Some(t.as_str().to_owned()),
                    Some(Ok(Message::Binary(b))) => Some(
                        // Binary frames are allowed when they hold UTF-8, as in VTube Studio;
                        // anything else is answered as invalid JSON.
                        String::from_utf8(b.to_vec()).unwrap_or_default(),
                    ),
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Ok(_)) => None,
                    Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                        counters.bump(&counters.oversized);
                        tracing::debug!(%peer, size, max_size, "API message too large");
                        counters.warn(peer, "message too large");
                        let _ = tx.try_send(Message::Close(Some(CloseFrame {
                            code: CloseCode::Size,
                            reason: "facewire: message too large".into(),
                        })));
                        break;
                    }
                    Some(Err(e)) => {
                        tracing::debug!(%peer, session = id, cause = %e, "API connection failed");
                        break;
                    }
                };
                match text {
                    Some(text) => match session.handle(shared, &text, Instant::now()) {
                        Step::Reply(reply) => {
                            if session.take_refused() {
                                counters.bump(&counters.malformed);
                            }
                            push(reply)
                        }
                        Step::After { reply, applied } => {
                            // Only this connection waits: the others are served meanwhile.
                            if !applied.wait(limits.apply_timeout).await {
                                tracing::debug!(%peer, session = id, "answered before the run carried the request out");
                            }
                            push(reply)
                        }
                        Step::Ask { request_id, plugin, developer, answer } => {
                            let timeout = limits.approval_timeout;
                            pending = Some(Pending {
                                request_id,
                                plugin,
                                developer,
                                answer: Box::pin(async move {
                                    matches!(tokio::time::timeout(timeout, answer).await, Ok(Ok(true)))
                                }),
                            });
                            true
                        }
                    },
                    None => true,
                }
            }
            allowed = answer(&mut pending) => {
                let p = pending.take().expect("an answer comes only while pending");
                push(session.answered(shared, &p.request_id, &p.plugin, &p.developer, allowed))
            }
            event = events.recv() => match event {
                Ok(event) => session.event(&event).is_none_or(&push),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    counters.events_missed.fetch_add(n, Ordering::Relaxed);
                    true
                }
                // The handle is gone: the server is stopping.
                Err(broadcast::error::RecvError::Closed) => break,
            },
        };
        if !keep {
            break;
        }
    }
    session.close(shared);
    drop(tx);
    // Let what is queued go out (a close frame, the last answers), briefly.
    if tokio::time::timeout(Duration::from_secs(1), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
        tracing::debug!(%peer, session = id, "API writer did not finish; dropped");
    }
    tracing::debug!(%peer, session = id, "API client disconnected");
}
