//! Tracing of runs as OpenTelemetry spans, in the OpenInference conventions Agno's tracing uses:
//! one trace per run attempt of an agent, team or workflow, with a span for each model call,
//! tool call (a team's delegations among them, the members' runs nested under them) and
//! workflow step.
//!
//! A [`Tracing`] holds an OpenTelemetry tracer provider of its own (no global state: two
//! [`Tracing`]s in one process trace to two places). Runs are traced while a `Tracing` is in
//! their OpenTelemetry context: [`Tracing::in_scope`] for a future, [`Tracing::enter`] while a
//! run is started; the run's own task, and the tasks it starts, carry the context on. Without
//! one, a run makes no span and pays a thread-local lookup per span it would have made.
//!
//! With [`TracingBuilder::store`], ended spans go through a bounded buffer to one writer task
//! that stores them in batches in `agno_traces`/`agno_spans` (off the run's path: a slow
//! database never holds a run back; when the buffer is full, spans are dropped and counted).
//! Any other OpenTelemetry span processor (an OTLP exporter) can be added beside it.

mod spans;
mod store;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::context::{ContextGuard, FutureExt as _, WithContext};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanProcessor};

pub(crate) use spans::{RunSpan, Runner, SpanScope, in_span, propagate, traced};
pub use store::TracingStats;

/// The longest string attribute kept whole (longer ones are cut, never rejected).
pub const DEFAULT_MAX_ATTRIBUTE_LEN: usize = 16 * 1024;

/// Spans waiting to be stored beyond which new ones are dropped (and counted).
pub const DEFAULT_BUFFER: usize = 8192;

/// Where runs' spans go, and how many; cloning shares it. See the module documentation.
#[derive(Clone)]
pub struct Tracing {
    inner: Arc<Inner>,
}

struct Inner {
    tracer: SdkTracer,
    provider: SdkTracerProvider,
    writer: Option<store::Writer>,
    max_attribute_len: usize,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracing").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl Tracing {
    /// A tracing setup to build.
    pub fn builder() -> TracingBuilder {
        TracingBuilder {
            store: None,
            processors: Vec::new(),
            sample_ratio: 1.0,
            buffer: DEFAULT_BUFFER,
            max_attribute_len: DEFAULT_MAX_ATTRIBUTE_LEN,
            service_name: "agno".to_owned(),
        }
    }

    /// The current OpenTelemetry context with this tracing in it: runs started (or futures
    /// polled) under it are traced here.
    pub fn context(&self) -> Context {
        Context::current_with_value(self.clone())
    }

    /// `fut`, traced here while it runs.
    pub fn in_scope<F>(&self, fut: F) -> WithContext<F> {
        fut.with_context(self.context())
    }

    /// Traces here what the current thread starts until the guard drops (a run started with
    /// `run_stream` or `spawn_run` meanwhile carries it on its own task).
    pub fn enter(&self) -> ContextGuard {
        self.context().attach()
    }

    /// Waits until every span that ended before this call is stored (or dropped) and handed to
    /// the other processors' exporters (the OTLP batch sent).
    pub async fn flush(&self) {
        if let Some(writer) = &self.inner.writer {
            writer.flush().await;
        }
        let provider = self.inner.provider.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || provider.force_flush()).await.unwrap_or(Ok(())) {
            tracing::debug!(error = %e, "flushing the span processors failed");
        }
    }

    /// What the store has done so far: spans written, dropped and batches that failed.
    pub fn stats(&self) -> TracingStats {
        self.inner.writer.as_ref().map(store::Writer::stats).unwrap_or_default()
    }

    /// Ends the span processors (the OTLP exporter's last batch goes out); spans ended after
    /// this are not exported.
    pub fn shutdown(&self) {
        if let Err(e) = self.inner.provider.shutdown() {
            tracing::debug!(error = %e, "tracing shut down with an error");
        }
    }

    /// The tracing in the current context, if any.
    pub(crate) fn current() -> Option<Tracing> {
        Context::map_current(|cx| cx.get::<Tracing>().cloned())
    }
}

/// Builds a [`Tracing`].
pub struct TracingBuilder {
    store: Option<Arc<dyn agno_core::TraceStore>>,
    processors: Vec<Box<dyn SpanProcessor>>,
    sample_ratio: f64,
    buffer: usize,
    max_attribute_len: usize,
    service_name: String,
}

impl std::fmt::Debug for TracingBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingBuilder")
            .field("stores", &self.store.is_some())
            .field("processors", &self.processors.len())
            .field("sample_ratio", &self.sample_ratio)
            .field("buffer", &self.buffer)
            .finish()
    }
}

impl TracingBuilder {
    /// Stores spans and their traces in `store` (`agno_traces`, `agno_spans`).
    #[must_use]
    pub fn store(mut self, store: Arc<dyn agno_core::TraceStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Also hands every span to `processor` (e.g. a batch processor over an OTLP exporter).
    #[must_use]
    pub fn processor(mut self, processor: impl SpanProcessor + 'static) -> Self {
        self.processors.push(Box::new(processor));
        self
    }

    /// Also exports every span over OTLP to `endpoint`, or, when `None`, where the standard
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` say (default
    /// `http://localhost:4318`, or `:4317` for gRPC; `OTEL_EXPORTER_OTLP_HEADERS` and `_TIMEOUT`
    /// are read too), over `protocol` (see [`OtlpProtocol::resolve`]). Over HTTP, `/v1/traces`
    /// is added to an endpoint without it. Spans are batched and sent from a thread of their own:
    /// a collector that is down or slow never holds a run back; spans beyond the batch queue
    /// (2,048) are dropped.
    ///
    /// # Errors
    /// The exporter cannot be built (an invalid endpoint; gRPC outside a tokio runtime).
    pub fn otlp(mut self, endpoint: Option<&str>, protocol: Option<OtlpProtocol>) -> Result<Self, String> {
        use opentelemetry_otlp::{Protocol, WithExportConfig as _};
        let endpoint = endpoint.map(|e| e.trim_end_matches('/'));
        let built = match OtlpProtocol::resolve(protocol, endpoint)? {
            OtlpProtocol::Grpc => {
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err("the gRPC exporter needs a tokio runtime: build the tracing inside one".to_owned());
                }
                let mut exporter =
                    opentelemetry_otlp::SpanExporter::builder().with_tonic().with_protocol(Protocol::Grpc);
                if let Some(endpoint) = endpoint {
                    exporter = exporter.with_endpoint(endpoint);
                }
                exporter.build()
            }
            OtlpProtocol::HttpProtobuf => {
                let mut exporter =
                    opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
                if let Some(endpoint) = endpoint {
                    let url = if endpoint.ends_with("/v1/traces") {
                        endpoint.to_owned()
                    } else {
                        format!("{endpoint}/v1/traces")
                    };
                    exporter = exporter.with_endpoint(url);
                }
                exporter.build()
            }
        };
        let exporter = built.map_err(|e| format!("cannot build the OTLP exporter: {e}"))?;
        self.processors.push(Box::new(opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build()));
        Ok(self)
    }

    /// The `service.name` the spans are exported under (default `agno`; `OTEL_SERVICE_NAME` wins).
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Traces this share of runs (0.0 to 1.0; default all), decided per trace.
    #[must_use]
    pub fn sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = if ratio.is_finite() { ratio.clamp(0.0, 1.0) } else { 1.0 };
        self
    }

    /// Spans waiting to be stored beyond which new ones are dropped (default
    /// [`DEFAULT_BUFFER`]).
    #[must_use]
    pub fn buffer(mut self, spans: usize) -> Self {
        self.buffer = spans.max(1);
        self
    }

    /// The longest string attribute kept whole (default [`DEFAULT_MAX_ATTRIBUTE_LEN`] bytes).
    #[must_use]
    pub fn max_attribute_len(mut self, bytes: usize) -> Self {
        self.max_attribute_len = bytes.max(64);
        self
    }

    /// The tracing. With a store, its writer task starts on the current tokio runtime.
    ///
    /// # Errors
    /// A store is given outside a tokio runtime.
    pub fn build(self) -> Result<Tracing, String> {
        let sampler = if self.sample_ratio >= 1.0 {
            Sampler::AlwaysOn
        } else {
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(self.sample_ratio)))
        };
        // `OTEL_SERVICE_NAME` (read by the resource's builder) wins over the name given here.
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(self.service_name);
        }
        let resource = resource.build();
        let mut provider = SdkTracerProvider::builder().with_sampler(sampler).with_resource(resource);
        let writer = match self.store {
            Some(store) => {
                let handle = tokio::runtime::Handle::try_current()
                    .map_err(|_| "storing spans needs a tokio runtime: build the tracing inside one".to_owned())?;
                let (writer, processor) = store::Writer::start(store, self.buffer, &handle);
                provider = provider.with_span_processor(processor);
                Some(writer)
            }
            None => None,
        };
        for processor in self.processors {
            provider = provider.with_span_processor(BoxedProcessor(processor));
        }
        let provider = provider.build();
        let tracer = provider.tracer("agno");
        Ok(Tracing { inner: Arc::new(Inner { tracer, provider, writer, max_attribute_len: self.max_attribute_len }) })
    }
}

/// How spans are sent to an OTLP collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// gRPC (`grpc`; collectors listen on port 4317).
    Grpc,
    /// Protobuf over HTTP (`http/protobuf`; port 4318).
    HttpProtobuf,
}

impl std::str::FromStr for OtlpProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" | "http" => Ok(OtlpProtocol::HttpProtobuf),
            other => Err(format!("unknown OTLP protocol {other:?}: use \"grpc\" or \"http/protobuf\"")),
        }
    }
}

impl OtlpProtocol {
    /// The protocol to use: `given`, else the standard `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else gRPC for an endpoint on port 4317 (the collectors'
    /// gRPC port), else HTTP.
    ///
    /// # Errors
    /// A protocol variable names a protocol not spoken here.
    pub fn resolve(given: Option<OtlpProtocol>, endpoint: Option<&str>) -> Result<OtlpProtocol, String> {
        if let Some(protocol) = given {
            return Ok(protocol);
        }
        for var in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Some(value) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
                return value.parse().map_err(|e| format!("{var}: {e}"));
            }
        }
        let port = endpoint.and_then(|e| e.split("://").nth(1)).and_then(|rest| {
            let authority = rest.split('/').next().unwrap_or_default();
            authority.rsplit_once(':').map(|(_, port)| port)
        });
        Ok(if port == Some("4317") { OtlpProtocol::Grpc } else { OtlpProtocol::HttpProtobuf })
    }
}

/// A boxed processor as the provider's builder takes one.
#[derive(Debug)]
struct BoxedProcessor(Box<dyn SpanProcessor>);

impl SpanProcessor for BoxedProcessor {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.0.on_start(span, cx);
    }
    fn on_end(&self, span: opentelemetry_sdk::trace::SpanData) {
        self.0.on_end(span);
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::OtlpProtocol;

    #[test]
    fn the_protocol_is_the_given_one_else_grpc_on_the_grpc_port() {
        assert_eq!("grpc".parse::<OtlpProtocol>().unwrap(), OtlpProtocol::Grpc);
        assert_eq!("http/protobuf".parse::<OtlpProtocol>().unwrap(), OtlpProtocol::HttpProtobuf);
        assert!("http/json".parse::<OtlpProtocol>().unwrap_err().contains("\"grpc\" or \"http/protobuf\""));
        let given = OtlpProtocol::resolve(Some(OtlpProtocol::HttpProtobuf), Some("http://c:4317")).unwrap();
        assert_eq!(given, OtlpProtocol::HttpProtobuf);
        if ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return; // The environment decides; what follows is the default without it.
        }
        assert_eq!(OtlpProtocol::resolve(None, Some("http://collector:4317")).unwrap(), OtlpProtocol::Grpc);
        assert_eq!(OtlpProtocol::resolve(None, Some("http://collector:4317/")).unwrap(), OtlpProtocol::Grpc);
        assert_eq!(OtlpProtocol::resolve(None, Some("http://collector:4318")).unwrap(), OtlpProtocol::HttpProtobuf);
        assert_eq!(OtlpProtocol::resolve(None, Some("http://collector:43170")).unwrap(), OtlpProtocol::HttpProtobuf);
        assert_eq!(OtlpProtocol::resolve(None, None).unwrap(), OtlpProtocol::HttpProtobuf);
    }
}
