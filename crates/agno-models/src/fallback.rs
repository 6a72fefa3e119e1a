//! `FallbackModel`: tries the primary model, then each fallback in turn, when a call fails
//! before its stream starts (after the primary's own retries).

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
}

#[async_trait]
impl Model for FallbackModel {
    fn id(&self) -> &str {
        self.primary.id()
    }

    fn provider(&self) -> &str {
        self.primary.provider()
    }

    fn capabilities(&self) -> Capabilities {
        self.primary.capabilities()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let mut last = match self.primary.stream(request.clone()).await {
            Ok(stream) => return Ok(stream),
            Err(e) => e,
        };
        for model in &self.fallbacks {
            tracing::warn!(from = self.primary.id(), to = model.id(), error = %last, "fallback model activated");
            match model.stream(request.clone()).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn invoke(&self, request: ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut last = match self.primary.invoke(request.clone()).await {
            Ok(response) => return Ok(response),
            Err(e) => e,
        };
        for model in &self.fallbacks {
            tracing::warn!(from = self.primary.id(), to = model.id(), error = %last, "fallback model activated");
            match model.invoke(request.clone()).await {
                Ok(response) => return Ok(response),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}
