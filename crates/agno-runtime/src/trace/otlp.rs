//! Export over OTLP (gRPC or protobuf over HTTP) through the maintained `opentelemetry-otlp`
//! exporter and the SDK's batch processor (its own thread, a bounded queue), with what becomes
//! of the spans counted: handed to the queue, exported, or lost with a failed export (a
//! collector that is down or refuses them). Spans the full queue drops are the rest.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter, SpanProcessor};

/// How spans are sent to an OTLP collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// gRPC (`grpc`; collectors listen on port 4317).
    Grpc,
    /// Protobuf over HTTP (`http/protobuf`; port 4318).
    HttpProtobuf,
    /// JSON over HTTP (`http/json`; port 4318).
    HttpJson,
}

impl std::str::FromStr for OtlpProtocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" | "http" => Ok(OtlpProtocol::HttpProtobuf),
            "http/json" => Ok(OtlpProtocol::HttpJson),
            other => Err(format!("unknown OTLP protocol {other:?}: use \"grpc\", \"http/protobuf\" or \"http/json\"")),
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

/// What became of the spans handed to the OTLP exporters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) handed: AtomicU64,
    pub(crate) exported: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// The batch processor over an OTLP exporter to `endpoint` over `protocol` (see
/// [`super::TracingBuilder::otlp`]), counting into `counters`.
pub(crate) fn processor(
    endpoint: Option<&str>,
    protocol: Option<OtlpProtocol>,
    counters: Arc<Counters>,
) -> Result<impl SpanProcessor + 'static, String> {
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    let endpoint = endpoint.map(|e| e.trim_end_matches('/'));
    let built = match OtlpProtocol::resolve(protocol, endpoint)? {
        OtlpProtocol::Grpc => {
            if tokio::runtime::Handle::try_current().is_err() {
                return Err("the gRPC exporter needs a tokio runtime: build the tracing inside one".to_owned());
            }
            let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic().with_protocol(Protocol::Grpc);
            if let Some(endpoint) = endpoint {
                exporter = exporter.with_endpoint(endpoint);
            }
            exporter.build()
        }
        http @ (OtlpProtocol::HttpProtobuf | OtlpProtocol::HttpJson) => {
            let protocol = if http == OtlpProtocol::HttpJson { Protocol::HttpJson } else { Protocol::HttpBinary };
            let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(protocol);
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
    let counting = Counting { inner: exporter, counters: Arc::clone(&counters) };
    Ok(Handing { inner: BatchSpanProcessor::builder(counting).build(), counters })
}

/// An exporter counting the spans of each export as exported or failed (failures logged as
/// [`super::worth_logging`] says).
#[derive(Debug)]
struct Counting<E> {
    inner: E,
    counters: Arc<Counters>,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.counters.exported.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                let before = self.counters.failed.fetch_add(n, Ordering::Relaxed);
                if super::worth_logging(before, n) {
                    tracing::warn!(error = %e, spans = n, failed = before + n, "cannot export spans over OTLP; they are lost");
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The batch processor, counting the sampled spans handed to it.
#[derive(Debug)]
struct Handing<P> {
    inner: P,
    counters: Arc<Counters>,
}

impl<P: SpanProcessor> SpanProcessor for Handing<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if span.span_context.is_sampled() {
            self.counters.handed.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
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
        assert_eq!("http/json".parse::<OtlpProtocol>().unwrap(), OtlpProtocol::HttpJson);
        assert!("thrift".parse::<OtlpProtocol>().unwrap_err().contains("\"grpc\", \"http/protobuf\" or \"http/json\""));
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
