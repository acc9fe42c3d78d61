//! The HTTP server: the API of `docs/view-api.md` and the page's assets,
//! embedded in the binary. Queries run on blocking threads, at most a
//! few at a time (a storm of requests queues instead of starving the
//! machine); a malformed parameter is a 400 with a message; only the
//! embedded assets are ever served as files.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::activities;
use crate::index::View;
use crate::live::Slot;
use crate::query::{self, Answer, ApiError, Window};

#[derive(rust_embed::RustEmbed)]
#[folder = "$REEF_WEB_DIST"]
struct Assets;

struct App {
    slot: Arc<Slot>,
    /// WebSockets open at once (`/api/live`).
    sockets: Arc<Semaphore>,
    /// Queries running at once.
    slots: Semaphore,
    /// Host names the page may be reached by (DNS rebinding guard), when
    /// bound to a loopback address.
    hosts: Option<Vec<String>>,
    /// `/api/profile`'s symbolizer.
    profile: Arc<crate::profile::Cache>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.message});
        if let Some(p) = self.position {
            body["position"] = json!(p);
        }
        if let Some(e) = self.expr {
            body["expr"] = json!(e);
        }
        if let Some(t) = self.text {
            body["text"] = json!(t);
        }
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (status, axum::Json(body)).into_response()
    }
}

/// `/api/activities` and `/api/periods`: the window's intervals.
fn intervals(v: &View, p: &Params, spec: activities::Spec) -> Result<serde_json::Value, ApiError> {
    let (from, to) = p.range()?;
    let limit: usize = p
        .opt("limit", "a number of intervals (at most 100000)")?
        .unwrap_or(10_000);
    if limit > 100_000 {
        return Err(ApiError::bad("`limit` must be at most 100000"));
    }
    let order = match p.0.get("sort").map(String::as_str) {
        None | Some("begin") => activities::Order::Begin,
        Some("duration") => activities::Order::Duration,
        Some(o) => {
            return Err(ApiError::bad(format!(
                "`sort` must be `begin` or `duration`, not {o:?}"
            )))
        }
    };
    let bins: usize = p.opt("bins", "a number of bins (1 to 1000)")?.unwrap_or(20);
    if !(1..=1000).contains(&bins) {
        return Err(ApiError::bad("`bins` must be from 1 to 1000"));
    }
    let set = activities::get(v, spec)?;
    let name = p.0.get("name").map(String::as_str);
    Ok(activities::window(&set, from, to, name, limit, order, bins))
}

/// `/api/info`, with the view's epoch and, for a live trace, the
/// connection's status.
fn info(slot: &Slot, v: &View) -> serde_json::Value {
    let mut i = query::info(v);
    i["epoch"] = json!(slot.epoch());
    if let Some(l) = &slot.live {
        i["live"] = serde_json::to_value(l.status()).unwrap_or_default();
    }
    i
}

/// WebSockets `/api/live` keeps open at once; more are refused (503).
const MAX_SOCKETS: usize = 32;

/// `/api/live`: a WebSocket on which the server pushes `/api/info`'s
/// answer whenever it changes (checked every 50 ms), for as long as the
/// page keeps it open.
async fn live_socket(
    State(app): State<Arc<App>>,
    ws: axum::extract::ws::WebSocketUpgrade,
) -> Response {
    let Ok(permit) = app.sockets.clone().try_acquire_owned() else {
        return ApiError {
            status: 503,
            message: format!("at most {MAX_SOCKETS} pages follow the trace at once"),
            position: None,
            expr: None,
            text: None,
        }
        .into_response();
    };
    ws.on_upgrade(move |mut sock| async move {
        let _permit = permit;
        use axum::extract::ws::Message;
        let mut last = String::new();
        loop {
            let slot = app.slot.clone();
            let text = match tokio::task::spawn_blocking(move || info(&slot, &slot.view())).await {
                Ok(v) => v.to_string(),
                Err(_) => return,
            };
            if text != last {
                if sock.send(Message::Text(text.clone().into())).await.is_err() {
                    return;
                }
                last = text;
            }
            // Stop when the page closes the socket; a message from it is
            // ignored.
            match tokio::time::timeout(std::time::Duration::from_millis(50), sock.recv()).await {
                Err(_) => {}
                Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => return,
                Ok(Some(Ok(_))) => {}
            }
        }
    })
}

/// The query string, parsed.
struct Params(HashMap<String, String>);

impl Params {
    fn from(q: Result<Query<Vec<(String, String)>>, QueryRejection>) -> Result<Params, ApiError> {
        let Query(list) = q.map_err(|e| ApiError::bad(format!("bad query string: {e}")))?;
        let mut m = HashMap::new();
        for (k, v) in list {
            if m.insert(k.clone(), v).is_some() {
                return Err(ApiError::bad(format!("parameter `{k}` given twice")));
            }
        }
        Ok(Params(m))
    }

    fn opt<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<Option<T>, ApiError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(s) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad(format!("`{name}` must be {what}, not {s:?}"))),
        }
    }

    fn req<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<T, ApiError> {
        self.opt(name, what)?
            .ok_or_else(|| ApiError::bad(format!("`{name}` is missing: {what}")))
    }

    fn time(&self, name: &str) -> Result<i64, ApiError> {
        let t: i64 = self.req(name, "a time in ns from the first event (an integer ≥ 0)")?;
        if !(0..=1 << 62).contains(&t) {
            return Err(ApiError::bad(format!(
                "`{name}` must be from 0 to 2^62 ns, not {t}"
            )));
        }
        Ok(t)
    }

    /// `from` and `to`, times with `to` after `from`.
    fn range(&self) -> Result<(i64, i64), ApiError> {
        let (from, to) = (self.time("from")?, self.time("to")?);
        if to <= from {
            return Err(ApiError::bad(format!(
                "`to` ({to}) must be greater than `from` ({from})"
            )));
        }
        Ok((from, to))
    }

    fn list(&self, name: &str) -> Result<Vec<u32>, ApiError> {
        match self.0.get(name) {
            None => Ok(Vec::new()),
            Some(s) if s.trim().is_empty() => Ok(Vec::new()),
            Some(s) => {
                let v: Result<Vec<u32>, _> = s.split(',').map(|x| x.trim().parse()).collect();
                let mut v = v.map_err(|_| {
                    ApiError::bad(format!(
                        "`{name}` must be ids separated by commas, not {s:?}"
                    ))
                })?;
                if v.len() > 100_000 {
                    return Err(ApiError::bad(format!("`{name}`: too many ids")));
                }
                v.sort_unstable();
                v.dedup();
                Ok(v)
            }
        }
    }

    fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.0.get(name).map(String::as_str) {
            None | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") | Some("") => Ok(true),
            Some(s) => Err(ApiError::bad(format!("`{name}` must be 0 or 1, not {s:?}"))),
        }
    }

    fn window(&self) -> Result<Window, ApiError> {
        let (from, to) = self.range()?;
        let width: u32 = self.req("width", "the width in pixels (1 to 16384)")?;
        if !(1..=16384).contains(&width) {
            return Err(ApiError::bad(format!(
                "`width` must be 1 to 16384, not {width}"
            )));
        }
        let rows = match self.0.get("rows") {
            Some(_) => Some(self.list("rows")?),
            None => None,
        };
        Ok(Window {
            from,
            to,
            width,
            rows,
            filter: self.opt("filter", "a filter id")?,
        })
    }
}

type Q = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// Runs `f` on a blocking thread once a slot is free.
async fn run<T: Into<Answer> + Send + 'static>(
    app: Arc<App>,
    q: Q,
    f: impl FnOnce(&Arc<View>, Params) -> Result<T, ApiError> + Send + 'static,
) -> Response {
    let p = match Params::from(q) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let Ok(_permit) = app.slots.acquire().await else {
        return ApiError::bad("shutting down").into_response();
    };
    let view = app.slot.view();
    match tokio::task::spawn_blocking(move || f(&view, p).map(Into::into)).await {
        Ok(Ok(Answer::Value(v))) => (
            [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
            axum::Json(v),
        )
            .into_response(),
        Ok(Ok(Answer::Text(t))) => (
            [
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
            ],
            t,
        )
            .into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError {
            status: 500,
            message: "the query failed".into(),
            position: None,
            expr: None,
            text: None,
        }
        .into_response(),
    }
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(
            "/api/info",
            get(|State(a): State<Arc<App>>, q: Q| {
                let slot = a.slot.clone();
                run(a, q, move |v, _| Ok(info(&slot, v)))
            }),
        )
        .route("/api/live", get(live_socket))
        .route(
            "/api/latency",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let log = p.0.get("log").cloned().ok_or_else(|| {
                        ApiError::bad(format!(
                            "`log` is missing: one of {}",
                            activities::LOGS.join(", ")
                        ))
                    })?;
                    if !activities::LOGS.contains(&log.as_str()) {
                        return Err(ApiError::bad(format!(
                            "no log {log:?}: one of {}",
                            activities::LOGS.join(", ")
                        )));
                    }
                    intervals(v, &p, activities::Spec::Log(log))
                })
            }),
        )
        .route(
            "/api/rows",
            get(|State(a): State<Arc<App>>, q: Q| run(a, q, |v, _| Ok(query::rows(v)))),
        )
        .route(
            "/api/window",
            get(|State(a): State<Arc<App>>, q: Q| run(a, q, |v, p| query::window(v, &p.window()?))),
        )
        .route(
            "/api/arrows",
            get(|State(a): State<Arc<App>>, q: Q| run(a, q, |v, p| query::arrows(v, &p.window()?))),
        )
        .route(
            "/api/events",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let from = p.time("from")?;
                    let count: usize = p.req("count", "a number of events (0 to 1000)")?;
                    if count > 1000 {
                        return Err(ApiError::bad(format!(
                            "`count` must be at most 1000, not {count}"
                        )));
                    }
                    let skip: u64 = p.opt("skip", "a number of events")?.unwrap_or(0);
                    query::events(
                        v,
                        from,
                        skip,
                        count,
                        p.flag("back")?,
                        p.opt("filter", "a filter id")?,
                    )
                })
            }),
        )
        .route(
            "/api/event",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let row: u32 = p.req("row", "a row id")?;
                    let (from, to) = p.range()?;
                    query::event(v, row, from, to, p.opt("filter", "a filter id")?)
                })
            }),
        )
        .route(
            "/api/search",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let expr: String = p.req("expr", "an expression")?;
                    let from = p.time("from")?;
                    let skip: u64 = p.opt("skip", "a number of events")?.unwrap_or(0);
                    query::search(
                        v,
                        &expr,
                        from,
                        skip,
                        p.flag("back")?,
                        p.opt("filter", "a filter id")?,
                    )
                })
            }),
        )
        .route(
            "/api/stats",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let (from, to) = p.range()?;
                    query::stats(v, from, to, p.opt("filter", "a filter id")?)
                })
            }),
        )
        .route(
            "/api/filter",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let expr = p.0.get("expr").cloned().ok_or_else(|| {
                        ApiError::bad("`expr` is missing: an expression (may be empty)")
                    })?;
                    query::make_filter(v, &expr, p.list("hide_classes")?, p.list("hide_rows")?)
                })
            }),
        )
        .route(
            "/api/analysis",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let name: String = p.req("name", "an analysis name")?;
                    let (from, to) = p.range()?;
                    let limit: Option<usize> = p.opt("limit", "a number of rows (0: all)")?;
                    let o = query::AnalysisOpts {
                        limit,
                        total: p.flag("total")?,
                        per_tid: p.flag("per_tid")?,
                        per_prio: p.flag("per_prio")?,
                    };
                    query::analysis(v, &name, from, to, &o)
                })
            }),
        )
        .route(
            "/api/activities",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let text = |name: &str, what: &str| {
                        p.0.get(name)
                            .cloned()
                            .ok_or_else(|| ApiError::bad(format!("`{name}` is missing: {what}")))
                    };
                    let spec = activities::Spec::Activities {
                        begin: text("begin", "the condition that begins an activity")?,
                        end: text("end", "the condition that ends one")?,
                        key: p.0.get("key").filter(|k| !k.trim().is_empty()).cloned(),
                    };
                    intervals(v, &p, spec)
                })
            }),
        )
        .route(
            "/api/periods",
            get(|State(a): State<Arc<App>>, q: Q| {
                run(a, q, |v, p| {
                    let defs: Vec<String> =
                        p.0.get("periods")
                            .map(|t| {
                                t.lines()
                                    .filter(|l| !l.trim().is_empty())
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default();
                    if defs.is_empty() {
                        return Err(ApiError::bad(
                            "`periods` is missing: period definitions, one per line",
                        ));
                    }
                    intervals(v, &p, activities::Spec::Periods(defs))
                })
            }),
        )
        .route(
            "/api/profile",
            get(|State(a): State<Arc<App>>, q: Q| {
                let cache = a.profile.clone();
                run(a, q, move |v, p| {
                    let (from, to) = p.range()?;
                    let row: Option<u32> = p.opt("row", "a row id")?;
                    crate::profile::profile(v, &cache, from, to, row, p.flag("events")?)
                })
            }),
        )
        .fallback(asset)
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// A 400 or 403 with `message`.
fn refuse(status: u16, message: String) -> Response {
    ApiError {
        status,
        message,
        position: None,
        expr: None,
        text: None,
    }
    .into_response()
}

/// Why `req` is refused, if it is: a request target in absolute form
/// (`GET http://other/api/info`, whose authority would stand for the
/// Host header), a second `Host` header, a `Host` other than the
/// loopback name the server was reached by (a page elsewhere resolving
/// its own name to 127.0.0.1 could otherwise read the traces), or an
/// `Origin` other than the page's own (WebSockets and cross-origin
/// requests are not bound by the same-origin policy: a page of another
/// site could read `/api/live`). A request without `Origin` (not made by
/// a page: curl, scripts) passes.
fn refusal(app: &App, req: &axum::extract::Request) -> Option<Response> {
    let uri = req.uri();
    if uri.scheme().is_some() || uri.authority().is_some() || !uri.path().starts_with('/') {
        return Some(refuse(
            400,
            format!("request target {uri} refused: ask for the path alone (origin form, /api/...)"),
        ));
    }
    let headers = req.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Some(refuse(400, "more than one Host header".into()));
    }
    let host = host.and_then(|h| h.to_str().ok()).unwrap_or("");
    if let Some(names) = &app.hosts {
        let name = match host.rfind(':') {
            Some(i) if !host.ends_with(']') => &host[..i],
            _ => host,
        };
        if !names.iter().any(|h| h.eq_ignore_ascii_case(name)) {
            return Some(refuse(
                403,
                format!("unexpected Host header {host:?}: use the address reef view printed"),
            ));
        }
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let origin = origin.to_str().unwrap_or("");
        // The page's own origin: the scheme, then the very host and port
        // it asked this server for (a tunnel's port included).
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|a| !host.is_empty() && a.eq_ignore_ascii_case(host));
        if !own || origins.next().is_some() {
            return Some(refuse(
                403,
                format!(
                    "requests from the page {origin:?} are refused: only reef view's own page \
                     (http://{host}) may read the trace"
                ),
            ));
        }
    }
    None
}

/// Applies [`refusal`] to every request, and marks every answer
/// `nosniff`.
async fn guard(
    State(app): State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut resp = match refusal(&app, &req) {
        Some(r) => r,
        None => next.run(req).await,
    };
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn asset(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") || path == "api" {
        return ApiError::not_found(format!("no such endpoint: /{path}")).into_response();
    }
    let path = if path.is_empty() { "index.html" } else { path };
    match Assets::get(path) {
        Some(f) => {
            let ty = match path.rsplit('.').next() {
                Some("html") => "text/html; charset=utf-8",
                Some("js") => "text/javascript; charset=utf-8",
                Some("css") => "text/css; charset=utf-8",
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                Some("json") | Some("map") => "application/json",
                _ => "application/octet-stream",
            };
            ([(header::CONTENT_TYPE, ty)], f.data.into_owned()).into_response()
        }
        None => ApiError::not_found(format!("no such file: /{path}")).into_response(),
    }
}

/// Serves `slot`'s view on `listener` until the process is interrupted
/// (SIGINT, SIGTERM).
pub fn serve(slot: Arc<Slot>, listener: std::net::TcpListener) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let hosts = local.ip().is_loopback().then(|| {
        vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "[::1]".to_string(),
            local.ip().to_string(),
        ]
    });
    let slots = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 8);
    let app = Arc::new(App {
        slot,
        sockets: Arc::new(Semaphore::new(MAX_SOCKETS)),
        slots: Semaphore::new(slots),
        hosts,
        profile: Arc::default(),
    });
    listener.set_nonblocking(true)?;
    // A live trace: the traced program and the receiving thread come
    // before the page's queries.
    let nice = if app.slot.live.is_some() { 10 } else { 0 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(slots + 2)
        .on_thread_start(move || {
            if nice > 0 {
                crate::pass::lower_priority(nice);
            }
        })
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::from_std(listener)?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        // Interrupted: stop at once (open WebSockets would hold a graceful
        // shutdown forever).
        tokio::select! {
            r = accept(l, router(app)) => r,
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = term.recv() => Ok(()),
        }
    })
}

/// Time a client has to send a request's head, from the moment the
/// connection waits for one (idle keep-alive time included): a client
/// that sends it byte by byte, or not at all, is cut then.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Time an answer may wait for the client to read it (a write that makes
/// no progress): a client that stops reading is cut then.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` on each connection `l` accepts, HTTP/1.1 with upgrades
/// (`/api/live`), each connection bounded by [`HEAD_TIMEOUT`] and
/// [`WRITE_TIMEOUT`].
async fn accept(l: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    loop {
        let tcp = match l.accept().await {
            Ok((tcp, _)) => tcp,
            // Out of descriptors, a connection reset before it was
            // taken: the others go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let svc = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(Stalls::new(tcp, WRITE_TIMEOUT));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(io, svc)
                .with_upgrades()
                .await;
        });
    }
}

/// A connection whose writes fail with `TimedOut` once one has waited
/// `limit` for the peer to read.
struct Stalls {
    tcp: tokio::net::TcpStream,
    limit: Duration,
    /// Set while a write waits.
    since: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Stalls {
    fn new(tcp: tokio::net::TcpStream, limit: Duration) -> Stalls {
        Stalls {
            tcp,
            limit,
            since: None,
        }
    }

    /// `r`, or `TimedOut` when the wait it is part of lasted too long.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if r.is_ready() {
            self.since = None;
            return r;
        }
        let limit = self.limit;
        let sleep = self
            .since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl tokio::io::AsyncRead for Stalls {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Stalls {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.tcp).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.tcp).poll_shutdown(cx);
        self.watch(cx, r)
    }
}
