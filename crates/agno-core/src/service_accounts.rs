//! Service accounts (`agno_service_accounts`): machine identities authenticated by opaque
//! `agno_pat_...` tokens, as Python Agno 3.1 keeps them. Only the token's SHA-256 hash is stored;
//! a name is unique among the accounts not revoked, so a revoked name can be minted again.

use serde::{Deserialize, Serialize};

use crate::{DbError, DbErrorKind, DbResult, SortOrder};

/// The principal prefix of a service account: requests made with its token run as `sa:<name>`.
pub const SERVICE_ACCOUNT_PRINCIPAL_PREFIX: &str = "sa:";

/// One row of `agno_service_accounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceAccount {
    /// Its id (a UUID).
    pub id: String,
    /// Its name (a lowercase slug).
    pub name: String,
    /// The user it belongs to; none for a workspace-level account.
    pub user_id: Option<String>,
    /// SHA-256 of the token, hex.
    pub token_hash: String,
    /// The token's first characters, for display.
    pub token_prefix: String,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// When it was minted (epoch seconds).
    pub created_at: i64,
    /// When the token stops working.
    pub expires_at: Option<i64>,
    /// When the token was last used.
    pub last_used_at: Option<i64>,
    /// When it was revoked (one way: never reset).
    pub revoked_at: Option<i64>,
    /// Who minted it.
    pub created_by: Option<String>,
}

impl ServiceAccount {
    /// The `user_id` its requests run as (`sa:<name>`).
    pub fn principal(&self) -> String {
        format!("{SERVICE_ACCOUNT_PRINCIPAL_PREFIX}{}", self.name)
    }

    /// Whether its token authenticates at `now`: not revoked, not expired.
    pub fn usable_at(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// The columns a listing may be sorted by (Agno's `SERVICE_ACCOUNT_SORTABLE_COLUMNS`); another
/// `sort_by` sorts by `created_at`.
pub const SERVICE_ACCOUNT_SORTABLE: [&str; 4] = ["created_at", "name", "last_used_at", "expires_at"];

/// A listing of service accounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountQuery {
    /// Include revoked accounts.
    pub include_revoked: bool,
    /// Page size.
    pub limit: u64,
    /// Page, from 1.
    pub page: u64,
    /// One of [`SERVICE_ACCOUNT_SORTABLE`].
    pub sort_by: &'static str,
    /// Direction.
    pub sort_order: SortOrder,
    /// Only this user's accounts and the workspace-level ones.
    pub user_id: Option<String>,
}

impl ServiceAccountQuery {
    /// The sort column for `requested`, clamped to [`SERVICE_ACCOUNT_SORTABLE`].
    pub fn sort_column(requested: &str) -> &'static str {
        SERVICE_ACCOUNT_SORTABLE.iter().find(|c| **c == requested).copied().unwrap_or("created_at")
    }
}

fn unsupported() -> DbError {
    DbError::new(DbErrorKind::Unsupported, "Service accounts not supported by the configured database")
}

/// Where service accounts are kept. The SQL databases keep them; the others answer
/// [`DbErrorKind::Unsupported`], as Python Agno's do.
#[async_trait::async_trait]
pub trait ServiceAccountStore: Send + Sync {
    /// Stores a new account.
    ///
    /// # Errors
    /// [`DbErrorKind::Conflict`] when an account of that name is not revoked.
    async fn create_service_account(&self, account: &ServiceAccount) -> DbResult<()> {
        let _ = account;
        Err(unsupported())
    }

    /// The account `id`; with `user_id`, only that user's or a workspace-level one.
    ///
    /// # Errors
    /// A storage error.
    async fn get_service_account(&self, id: &str, user_id: Option<&str>) -> DbResult<Option<ServiceAccount>> {
        let _ = (id, user_id);
        Err(unsupported())
    }

    /// The account of `name` that is not revoked.
    ///
    /// # Errors
    /// A storage error.
    async fn get_active_service_account(&self, name: &str) -> DbResult<Option<ServiceAccount>> {
        let _ = name;
        Err(unsupported())
    }

    /// The account whose token hashes to `token_hash` (revoked or expired too: the caller
    /// decides).
    ///
    /// # Errors
    /// A storage error.
    async fn service_account_by_token(&self, token_hash: &str) -> DbResult<Option<ServiceAccount>> {
        let _ = token_hash;
        Err(unsupported())
    }

    /// A page of accounts and how many the listing holds.
    ///
    /// # Errors
    /// A storage error.
    async fn get_service_accounts(&self, query: &ServiceAccountQuery) -> DbResult<(Vec<ServiceAccount>, u64)> {
        let _ = query;
        Err(unsupported())
    }

    /// Records that account `id`'s token was used at `at` (an account not revoked).
    ///
    /// # Errors
    /// A storage error.
    async fn touch_service_account(&self, id: &str, at: i64) -> DbResult<()> {
        let _ = (id, at);
        Err(unsupported())
    }

    /// Revokes account `id` at `at` unless it already is; whether this call revoked it.
    ///
    /// # Errors
    /// A storage error.
    async fn revoke_service_account(&self, id: &str, at: i64) -> DbResult<bool> {
        let _ = (id, at);
        Err(unsupported())
    }
}
