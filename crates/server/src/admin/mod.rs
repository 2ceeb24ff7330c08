//! The admin listener (`--metrics-listen ADDR`): an HTTP endpoint beside the data ports.
//!
//! - `GET /metrics`: every figure of memcached's `stats` (and the disk tier's, the MySQL
//!   proxy's, the containers') in the OpenMetrics text format that Prometheus scrapes,
//!   read from the same [`engine::stats::StatSink`] producers as `stats` (`metrics.rs`).
//! - `GET /`: the live status page; `GET /stats.json`: the figures it polls (`status.rs`),
//!   with the last two minutes of rates the admin thread keeps (`history.rs`).
//!
//! One thread serves it (tiny_http), so scrapes never take a worker from the data path.

mod history;
mod metrics;
mod status;

use std::sync::Arc;
use std::time::Instant;

use crate::shared::Shared;

/// Start serving the admin endpoints on `addr`; fails if the address cannot be bound.
pub fn start(addr: &str, shared: Arc<Shared>) -> std::io::Result<()> {
    let server = tiny_http::Server::http(addr)
        .map_err(|e| std::io::Error::other(format!("failed to listen on metrics {addr}: {e}")))?;
    let registry = metrics::registry(shared.clone());
    log::info!("listening on HTTP {addr} (GET /metrics: Prometheus/OpenMetrics; GET /: status page)");
    std::thread::Builder::new().name("admin".into()).spawn(move || {
        let mut history = history::History::default();
        let mut next = Instant::now();
        loop {
            if Instant::now() >= next {
                history.record(&status::report(&shared));
                next += history::INTERVAL;
                if next < Instant::now() {
                    next = Instant::now() + history::INTERVAL;
                }
            }
            let req = match server.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(Some(req)) => req,
                Ok(None) => continue,
                Err(e) => {
                    log::error!("metrics: the HTTP listener failed ({e}): /metrics and the status page are gone");
                    return;
                }
            };
            let resp = match (req.method(), req.url()) {
                (tiny_http::Method::Get, "/metrics") => match metrics::render(&registry) {
                    Ok(body) => tiny_http::Response::from_string(body).with_header(header(metrics::CONTENT_TYPE)),
                    Err(e) => tiny_http::Response::from_string(format!("encoding failed: {e}\n")).with_status_code(500),
                },
                (tiny_http::Method::Get, "/" | "/index.html") => {
                    tiny_http::Response::from_string(status::PAGE).with_header(header("text/html; charset=utf-8"))
                }
                (tiny_http::Method::Get, "/stats.json") => {
                    tiny_http::Response::from_string(status::json(&shared, &history))
                        .with_header(header("application/json"))
                        .with_header(header_named("Cache-Control", "no-store"))
                }
                (tiny_http::Method::Get, _) => {
                    tiny_http::Response::from_string("not found: try /, /stats.json or /metrics\n")
                        .with_status_code(404)
                }
                _ => tiny_http::Response::from_string("method not allowed\n").with_status_code(405),
            };
            if let Err(e) = req.respond(resp) {
                log::debug!("metrics: writing a response: {e}");
            }
        }
    })?;
    Ok(())
}

fn header(content_type: &str) -> tiny_http::Header {
    header_named("Content-Type", content_type)
}

fn header_named(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}
