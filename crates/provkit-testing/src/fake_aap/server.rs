//! Serving the fake over a real loopback socket (plain HTTP or HTTPS) with keep-alive.
//!
//! A request is handled to the end even when its client leaves first (a timeout, a reset), as
//! AWX does: its API is a WSGI application under uWSGI behind nginx (AWX's
//! `tools/ansible/roles/dockerfile/files/uwsgi.ini`), which runs a view to completion and only
//! notices the closed socket when it writes the answer; a request queued behind busy workers
//! is still read and handled later (uWSGI's `harakiri`, 115 s in AWX, bounds a running view,
//! not the wait in front of it). So a launch whose client gave up still creates its job. hyper
//! drops a service future when the client closes the connection; the fake therefore runs each
//! request on a task of its own and the connection only waits for it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use http::Request;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::app::ResetConnection;
use super::{FakeAap, FakeAapError};

/// Error returned to hyper to drop a connection without answering.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by fault injection")
    }
}

impl std::error::Error for Reset {}

/// Arranges for the socket to be closed with an RST (SO_LINGER 0) when it is dropped.
#[cfg(unix)]
fn arm_rst(stream: &TcpStream) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    stream.as_fd().try_clone_to_owned().ok()
}

#[cfg(unix)]
fn fire_rst(dup: Option<std::os::fd::OwnedFd>) {
    if let Some(fd) = dup {
        let std_stream = std::net::TcpStream::from(fd);
        let _ = tokio::net::TcpSocket::from_std_stream(std_stream).set_zero_linger();
    }
}

#[cfg(not(unix))]
fn arm_rst(_stream: &TcpStream) -> Option<()> {
    None
}

#[cfg(not(unix))]
fn fire_rst(_dup: Option<()>) {}

async fn serve_connection(
    fake: FakeAap,
    stream: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let dup = std::sync::Mutex::new(Some(arm_rst(&stream)));
    let dup = Arc::new(dup);
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let fake = fake.clone();
        let dup = dup.clone();
        let shutdown = shutdown.clone();
        async move {
            if super::websocket::is_websocket_path(fake.app.mode, req.uri().path()) {
                return Ok(super::websocket::upgrade(&fake.app, req.map(Body::new)));
            }
            // Handled on a task of its own: a client leaving does not stop it (see the module
            // docs); the server shutting down does.
            let handled = tokio::spawn(until_shutdown(
                fake.app.clone().handle(req.map(Body::new)),
                shutdown,
            ));
            let Ok(Some(resp)) = handled.await else {
                return Err(Reset);
            };
            if resp.extensions().get::<ResetConnection>().is_some() {
                let d = dup
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .flatten();
                fire_rst(d);
                return Err(Reset);
            }
            Ok(resp)
        }
    });
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1.keep_alive(true);
    match tls {
        None => {
            let _ = http1
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        }
        Some(acceptor) => {
            if let Ok(tls_stream) = acceptor.accept(stream).await {
                let _ = http1
                    .serve_connection(TokioIo::new(tls_stream), service)
                    .with_upgrades()
                    .await;
            }
        }
    }
}

/// `work`'s output, or `None` once `shutdown` flips (or its sender is gone).
async fn until_shutdown<T>(
    work: impl std::future::Future<Output = T>,
    mut shutdown: watch::Receiver<bool>,
) -> Option<T> {
    if *shutdown.borrow() {
        return None;
    }
    tokio::select! {
        out = work => Some(out),
        _ = shutdown.wait_for(|stop| *stop) => None,
    }
}

/// Runs the accept loop until `shutdown` flips.
pub(crate) async fn accept_loop(
    fake: FakeAap,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                conns.spawn(serve_connection(fake.clone(), stream, tls.clone(), shutdown.clone()));
                while conns.try_join_next().is_some() {}
            }
        }
    }
    conns.abort_all();
}

/// A running fake AAP server on a loopback port. Dropping it stops the server.
#[derive(Debug)]
pub struct FakeAapServer {
    pub(crate) fake: FakeAap,
    pub(crate) addr: SocketAddr,
    pub(crate) ca_pem: Option<String>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) task: Option<JoinHandle<()>>,
}

impl FakeAapServer {
    /// Starts an AWX-mode server with the default fixtures on a random port of 127.0.0.1.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), provkit_testing::fake_aap::FakeAapError> {
    /// let server = provkit_testing::fake_aap::FakeAapServer::start().await?;
    /// println!("{} token {}", server.api_base(), server.token());
    /// # Ok(()) }
    /// ```
    pub async fn start() -> Result<FakeAapServer, FakeAapError> {
        FakeAap::builder().start().await
    }

    pub(crate) async fn launch(
        fake: FakeAap,
        addr: SocketAddr,
        https: bool,
    ) -> Result<FakeAapServer, FakeAapError> {
        if !addr.ip().is_loopback() {
            return Err(FakeAapError::NotLoopback { addr });
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| FakeAapError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| FakeAapError::Bind { addr, source })?;
        let (tls, ca_pem) = if https {
            let material = super::tls::generate()?;
            (
                Some(tokio_rustls::TlsAcceptor::from(material.server_config)),
                Some(material.ca_pem),
            )
        } else {
            (None, None)
        };
        let (tx, rx) = watch::channel(false);
        tokio::spawn(super::websocket::announce_loop(
            fake.app.clone(),
            rx.clone(),
        ));
        let task = tokio::spawn(accept_loop(fake.clone(), listener, tls, rx));
        Ok(FakeAapServer {
            fake,
            addr: local,
            ca_pem,
            shutdown: tx,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The controller API base: `…/api/v2/` (AWX and both modes) or `…/api/controller/v2/` (gateway).
    pub fn api_base(&self) -> String {
        format!("{}{}", self.base_url(), self.fake.api_prefix())
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The first write-scoped token from the fixtures (the default admin token when none were declared).
    pub fn token(&self) -> String {
        self.fake.admin_token()
    }

    /// PEM of the CA that signed the server certificate (HTTPS mode only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The control and inspection handle.
    pub fn aap(&self) -> &FakeAap {
        &self.fake
    }

    /// Stops accepting connections and closes the open ones.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeAapServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

impl std::ops::Deref for FakeAapServer {
    type Target = FakeAap;
    fn deref(&self) -> &FakeAap {
        &self.fake
    }
}
