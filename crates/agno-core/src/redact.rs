//! Secrets kept out of messages.

/// The URL with any password replaced by `***`, for messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact_url("postgresql://app:s3cret@db:5432/agno"), "postgresql://app:***@db:5432/agno");
        assert_eq!(redact_url("redis://:pw@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(redact_url("sqlite://agno.db"), "sqlite://agno.db");
        assert_eq!(redact_url("mysql://root@127.0.0.1/test"), "mysql://root@127.0.0.1/test");
    }
}
