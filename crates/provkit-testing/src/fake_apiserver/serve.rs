//! Serving the fake over loopback HTTP (plain HTTP on 127.0.0.1), for an operator binary,
//! `kubectl` or curl.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::http::handle;
use super::server::FakeApiServer;

/// A running loopback listener; dropping it (or [`shutdown`](Self::shutdown)) stops serving.
#[derive(Debug)]
pub struct ServeHandle {
    addr: SocketAddr,
    default_namespace: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl ServeHandle {
    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Config` for it (plain HTTP, no credentials).
    ///
    /// # Panics
    /// Never: the URL is built from a socket address.
    #[must_use]
    pub fn config(&self) -> kube::Config {
        #[allow(clippy::expect_used)]
        let uri = self
            .url()
            .parse()
            .expect("a socket address always makes a valid URI");
        let mut config = kube::Config::new(uri);
        config.default_namespace.clone_from(&self.default_namespace);
        config
    }

    /// A kubeconfig (YAML) whose current context points at the server, for `kubectl
    /// --kubeconfig`.
    #[must_use]
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: provkit-fake
  cluster:
    server: {url}
users:
- name: provkit-fake
  user: {{}}
contexts:
- name: provkit-fake
  context:
    cluster: provkit-fake
    user: provkit-fake
    namespace: {ns}
current-context: provkit-fake
",
            url = self.url(),
            ns = self.default_namespace
        )
    }

    /// Stops accepting connections and waits for the listener task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ServeHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl FakeApiServer {
    /// Serves on `127.0.0.1:0` (an ephemeral port).
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub async fn serve(&self) -> std::io::Result<ServeHandle> {
        self.serve_on("127.0.0.1:0".parse().map_err(std::io::Error::other)?)
            .await
    }

    /// Serves on `addr` (keep it a loopback address).
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub async fn serve_on(&self, addr: SocketAddr) -> std::io::Result<ServeHandle> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let inner = self.inner.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let inner = inner.clone();
            async move { handle(inner, req).await }
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(ServeHandle {
            addr,
            default_namespace: self.inner.default_namespace.clone(),
            stop: Some(stop),
            task: Some(task),
        })
    }
}
