//! Values derived from each call: `{user_id}`, `{session_id}`, `{run_id}` and `{agent_id}` in a
//! string are replaced by the call's values (`{{` and `}}` are literal braces). Headers of MCP
//! servers ([`HeaderTemplates`], Agno's `header_provider`) and Toolbox bound parameters are
//! written this way in `agentos.toml`.

use agno_core::ToolContext;

use crate::session::HeaderProvider;

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    UserId,
    SessionId,
    RunId,
    AgentId,
}

/// A string with placeholders for a call's values.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTemplate(Vec<Piece>);

impl CallTemplate {
    /// Parses `template`; `what` names it in errors (`header X-User`).
    ///
    /// # Errors
    /// A message naming `what` and the unknown placeholder or the unclosed brace.
    pub fn parse(what: &str, template: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let mut key = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(k) => key.push(k),
                            None => return Err(format!("{what}: unclosed {{ in {template:?}")),
                        }
                    }
                    let piece = match key.as_str() {
                        "user_id" => Piece::UserId,
                        "session_id" => Piece::SessionId,
                        "run_id" => Piece::RunId,
                        "agent_id" => Piece::AgentId,
                        other => {
                            return Err(format!(
                                "{what}: unknown placeholder {{{other}}} (known: {{user_id}}, {{session_id}}, {{run_id}}, {{agent_id}}; write {{{{ for a brace)"
                            ));
                        }
                    };
                    out.push(Piece::Text(std::mem::take(&mut text)));
                    out.push(piece);
                }
                c => text.push(c),
            }
        }
        out.push(Piece::Text(text));
        out.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        Ok(Self(out))
    }

    /// Whether it names a value of the call (otherwise it is the same text on every call).
    pub fn is_dynamic(&self) -> bool {
        self.0.iter().any(|p| !matches!(p, Piece::Text(_)))
    }

    /// The text for the call made in `ctx`; `None` when it names a value the call does not have
    /// (a run without a user), so nothing is ever sent half-filled.
    pub fn render(&self, ctx: &ToolContext) -> Option<String> {
        let mut value = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => value.push_str(t),
                Piece::UserId => value.push_str(ctx.user_id.as_deref()?),
                Piece::SessionId => value.push_str(&ctx.session_id),
                Piece::RunId => value.push_str(&ctx.run_id),
                Piece::AgentId => value.push_str(ctx.agent_id.as_deref()?),
            }
        }
        Some(value)
    }
}

/// Headers from templates; a header whose template names a value the call does not have is left
/// out, never sent empty.
#[derive(Debug, Clone)]
pub struct HeaderTemplates(Vec<(String, CallTemplate)>);

impl HeaderTemplates {
    /// Parses `name = template` pairs.
    ///
    /// # Errors
    /// A message naming the header and the unknown placeholder or unclosed brace.
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, String> {
        pairs
            .iter()
            .map(|(name, template)| Ok((name.clone(), CallTemplate::parse(&format!("header {name}"), template)?)))
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether any template names a value of the call (otherwise the headers are fixed).
    pub fn is_dynamic(&self) -> bool {
        self.0.iter().any(|(_, t)| t.is_dynamic())
    }
}

impl HeaderProvider for HeaderTemplates {
    fn headers(&self, ctx: &ToolContext) -> Vec<(String, String)> {
        self.0.iter().filter_map(|(name, template)| Some((name.clone(), template.render(ctx)?))).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    #[test]
    fn templates_fill_the_calls_values_and_leave_out_what_is_missing() {
        let t = HeaderTemplates::parse(&pairs(&[
            ("X-User", "user {user_id}"),
            ("X-Where", "{session_id}/{run_id} {{literal}}"),
            ("X-Fixed", "v"),
        ]))
        .unwrap();
        assert!(t.is_dynamic());
        let mut ctx = ToolContext { session_id: "s1".into(), run_id: "r1".into(), ..ToolContext::default() };
        assert_eq!(t.headers(&ctx), pairs(&[("X-Where", "s1/r1 {literal}"), ("X-Fixed", "v")]));
        ctx.user_id = Some("ann".into());
        assert_eq!(t.headers(&ctx)[0], ("X-User".to_owned(), "user ann".to_owned()));
        assert!(!HeaderTemplates::parse(&pairs(&[("A", "b")])).unwrap().is_dynamic());
        let err = HeaderTemplates::parse(&pairs(&[("A", "{token}")])).unwrap_err();
        assert!(err.contains("header A: unknown placeholder {token}"), "{err}");
        assert!(HeaderTemplates::parse(&pairs(&[("A", "{user_id")])).unwrap_err().contains("unclosed"));
        let bound = CallTemplate::parse("bound_params.user", "{user_id}").unwrap();
        assert_eq!(bound.render(&ctx).as_deref(), Some("ann"));
    }
}
