//! `FallbackModel`: tries the primary model, then each fallback in turn, when a call fails
//! before its stream starts (after the primary's own retries).

use std::future::Future;
use std::sync::Arc;

use agno_core::{Capabilities, Model, ModelError, ModelRequest, ModelResponse, ModelStream};
use async_trait::async_trait;

/// A model with fallbacks.
#[derive(Debug, Clone)]
pub struct FallbackModel {
    primary: Arc<dyn Model>,
    fallbacks: Vec<Arc<dyn Model>>,
}

impl FallbackModel {
    /// `primary`, then `fallbacks` in order.
    pub fn new(primary: Arc<dyn Model>, fallbacks: Vec<Arc<dyn Model>>) -> Self {
        Self { primary, fallbacks }
    }

    /// Calls `call` on each model in order until one succeeds; returns the last error otherwise.
    async fn first_success<T, F, Fut>(&self, request: ModelRequest, call: F) -> Result<T, ModelError>
    where
        F: Fn(Arc<dyn Model>, ModelRequest) -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let mut last = match call(Arc::clone(&self.primary), request.clone()).await {
            Ok(out) => return Ok(out),
            Err(e) => e,
        };
        for model in &self.fallbacks {
            tracing::warn!(from = self.primary.id(), to = model.id(), error = %last, "fallback model activated");
            match call(Arc::clone(model), request.clone()).await {
                Ok(out) => return Ok(out),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

#[async_trait]
impl Model for FallbackModel {
    fn id(&self) -> &str {
        self.primary.id()
    }

    fn provider(&self) -> &str {
        self.primary.provider()
    }

    fn name(&self) -> &str {
        self.primary.name()
    }

    fn metrics_provider(&self) -> std::borrow::Cow<'_, str> {
        self.primary.metrics_provider()
    }

    fn capabilities(&self) -> Capabilities {
        self.primary.capabilities()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.first_success(request, |model, req| async move { model.stream(req).await }).await
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        self.first_success(request, |model, req| async move { model.invoke(req).await }).await
    }
}
