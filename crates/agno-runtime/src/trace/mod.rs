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

mod otlp;
mod spans;
mod store;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::context::{ContextGuard, FutureExt as _, WithContext};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanProcessor};

pub use otlp::OtlpProtocol;
pub(crate) use spans::{RunSpan, Runner, SpanScope, in_span, json_cut, propagate, span_name, traced};
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
    otlp: Arc<otlp::Counters>,
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
            otlp_counters: Arc::default(),
            sample_ratio: None,
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

    /// What became of the spans so far: written to the store, dropped, batches that failed, and
    /// handed to, exported by or lost by the OTLP exporters.
    pub fn stats(&self) -> TracingStats {
        use std::sync::atomic::Ordering::Relaxed;
        let mut stats = self.inner.writer.as_ref().map(store::Writer::stats).unwrap_or_default();
        stats.otlp_handed = self.inner.otlp.handed.load(Relaxed);
        stats.otlp_exported = self.inner.otlp.exported.load(Relaxed);
        stats.otlp_failed = self.inner.otlp.failed.load(Relaxed);
        stats
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
    otlp_counters: Arc<otlp::Counters>,
    sample_ratio: Option<f64>,
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
    /// (2,048) are dropped. What happened to them is counted in [`TracingStats`].
    ///
    /// # Errors
    /// The exporter cannot be built (an invalid endpoint; gRPC outside a tokio runtime).
    pub fn otlp(mut self, endpoint: Option<&str>, protocol: Option<OtlpProtocol>) -> Result<Self, String> {
        self.processors.push(Box::new(otlp::processor(endpoint, protocol, Arc::clone(&self.otlp_counters))?));
        Ok(self)
    }

    /// The `service.name` the spans are exported under (default `agno`; `OTEL_SERVICE_NAME` wins).
    #[must_use]
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Traces this share of runs (0.0 to 1.0), decided per trace. Without it, the standard
    /// `OTEL_TRACES_SAMPLER` (with `OTEL_TRACES_SAMPLER_ARG`) decides when set, else all runs are
    /// traced.
    #[must_use]
    pub fn sample_ratio(mut self, ratio: f64) -> Self {
        self.sample_ratio = Some(if ratio.is_finite() { ratio.clamp(0.0, 1.0) } else { 1.0 });
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
        let sampler = match self.sample_ratio {
            Some(ratio) if ratio < 1.0 => Some(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio)))),
            Some(_) => Some(Sampler::AlwaysOn),
            // The SDK's default reads `OTEL_TRACES_SAMPLER`.
            None if std::env::var_os("OTEL_TRACES_SAMPLER").is_some() => None,
            None => Some(Sampler::AlwaysOn),
        };
        // `OTEL_SERVICE_NAME` (read by the resource's builder) wins over the name given here.
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(self.service_name);
        }
        let resource = resource.build();
        let mut provider = SdkTracerProvider::builder().with_resource(resource);
        if let Some(sampler) = sampler {
            provider = provider.with_sampler(sampler);
        }
        let (writer, store) = match self.store {
            Some(store) => {
                let handle = tokio::runtime::Handle::try_current()
                    .map_err(|_| "storing spans needs a tokio runtime: build the tracing inside one".to_owned())?;
                let (writer, processor) = store::Writer::start(store, self.buffer, &handle);
                (Some(writer), Some(processor))
            }
            None => (None, None),
        };
        let provider = provider.with_span_processor(Fanout { store, others: self.processors }).build();
        let tracer = provider.tracer("agno");
        let inner =
            Inner { tracer, provider, writer, otlp: self.otlp_counters, max_attribute_len: self.max_attribute_len };
        Ok(Tracing { inner: Arc::new(inner) })
    }
}

/// Whether a count of lost spans (or batches) that went from `before` to `before + added` is
/// worth a log line: the first loss, then each time the count passes a power of two, so an
/// outage is logged a few times, not once per span.
pub(crate) fn worth_logging(before: u64, added: u64) -> bool {
    before == 0 || before.saturating_add(added).ilog2() > before.ilog2()
}

/// The one processor the provider has: each ended span goes to the store by reference, then to
/// the other processors, moved to the last (the SDK would clone a span for every processor but
/// the last; here only processors beyond the first export pay a clone).
#[derive(Debug)]
struct Fanout {
    store: Option<store::StoreProcessor>,
    others: Vec<Box<dyn SpanProcessor>>,
}

impl SpanProcessor for Fanout {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        for processor in &self.others {
            processor.on_start(span, cx);
        }
    }
    fn on_end(&self, span: opentelemetry_sdk::trace::SpanData) {
        if let Some(store) = &self.store {
            store.take(&span);
        }
        if let Some((last, first)) = self.others.split_last() {
            for processor in first {
                processor.on_end(span.clone());
            }
            last.on_end(span);
        }
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.others.iter().map(|p| p.force_flush()).fold(Ok(()), Result::and)
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.others.iter().map(|p| p.shutdown_with_timeout(timeout)).fold(Ok(()), Result::and)
    }
    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        for processor in &mut self.others {
            processor.set_resource(resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::worth_logging;

    #[test]
    fn losses_are_logged_at_the_first_and_each_power_of_two_passed() {
        let logged: Vec<u64> = (0..40).filter(|&before| worth_logging(before, 1)).map(|b| b + 1).collect();
        assert_eq!(logged, [1, 2, 4, 8, 16, 32], "the counts at which a loss of one is logged");
        assert!(worth_logging(6, 6), "6 -> 12 passes 8");
        assert!(!worth_logging(8, 6), "8 -> 14 passes none");
        assert!(!worth_logging(u64::MAX, 1), "no overflow");
    }
}
