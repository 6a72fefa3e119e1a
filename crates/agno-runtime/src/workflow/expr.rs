//! A small subset of CEL (the expression language Agno's `Condition` accepts as a string) for
//! condition evaluators.
//!
//! Variables, as in Agno: `input` (the workflow input as text), `previous_step_content` (text),
//! `previous_step_outputs` (step name to content text), `additional_data` and `session_state`
//! (maps). Supported: literals (`"text"`, `'text'`, numbers, `true`, `false`, `null`, lists),
//! field access (`session_state.tier`, `previous_step_outputs["draft"]`), `!`, `&&`, `||`,
//! `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, the methods `contains`, `startsWith`, `endsWith`, and
//! `size(x)`. A missing field is `null`; an expression whose result is not a boolean is true
//! when its value is "truthy" (non-empty, non-zero, not null).

use std::fmt;

use serde_json::{Map, Value};

/// A parse error, with the byte offset where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid expression {source_text:?} at offset {offset}: {message}")]
pub struct ExpressionError {
    /// The expression.
    pub source_text: String,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// A parsed expression.
#[derive(Clone, PartialEq)]
pub struct Expression {
    source: String,
    ast: Node,
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    List(Vec<Node>),
    Var(String),
    Field(Box<Node>, String),
    Index(Box<Node>, Box<Node>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Compare(Box<Node>, Op, Box<Node>),
    Method(Box<Node>, String, Vec<Node>),
    Size(Box<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Str(String),
    Num(f64),
    Ident(String),
    Sym(&'static str),
}

const VARIABLES: [&str; 5] =
    ["input", "previous_step_content", "previous_step_outputs", "additional_data", "session_state"];

impl Expression {
    /// Parses `text`.
    ///
    /// # Errors
    /// A syntax error, an unknown variable or method, with its offset.
    pub fn parse(text: &str) -> Result<Self, ExpressionError> {
        let err = |offset: usize, message: String| ExpressionError { source_text: text.to_owned(), offset, message };
        let tokens = tokenize(text).map_err(|(o, m)| err(o, m))?;
        let mut parser = Parser { tokens, pos: 0, end: text.len() };
        let ast = parser.or().map_err(|(o, m)| err(o, m))?;
        if let Some((offset, token)) = parser.tokens.get(parser.pos) {
            return Err(err(*offset, format!("unexpected {token:?}")));
        }
        Ok(Self { source: text.to_owned(), ast })
    }

    /// The text the expression was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates over `context` (a map of the variables) to a boolean.
    pub fn is_true(&self, context: &Map<String, Value>) -> bool {
        truthy(&eval(&self.ast, context))
    }

    /// Evaluates over `context` to a value (a router's selector names its choice this way).
    pub fn evaluate(&self, context: &Map<String, Value>) -> Value {
        eval(&self.ast, context)
    }
}

/// The variables of an expression for a step, as Agno builds them for CEL: `input` and
/// `previous_step_content` as text, `previous_step_outputs` (step name to content text),
/// `additional_data` and `session_state`.
pub fn step_context(input: &super::StepInput) -> Map<String, Value> {
    let outputs: Map<String, Value> =
        input.previous_step_outputs.iter().map(|(name, o)| (name.clone(), Value::String(o.content_text()))).collect();
    let mut ctx = Map::new();
    ctx.insert("input".to_owned(), Value::String(input.input_text()));
    ctx.insert(
        "previous_step_content".to_owned(),
        input.previous_step_content.as_ref().map_or(Value::Null, |_| Value::String(input.previous_step_text())),
    );
    ctx.insert("previous_step_outputs".to_owned(), Value::Object(outputs));
    ctx.insert("additional_data".to_owned(), Value::Object(input.additional_data.clone().unwrap_or_default()));
    ctx.insert("session_state".to_owned(), Value::Object(input.session_state.snapshot()));
    ctx
}

fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, (usize, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'"' || c == b'\'' {
            let mut s = String::new();
            i += 1;
            let mut chars = text[i..].char_indices();
            let mut closed = false;
            while let Some((k, ch)) = chars.next() {
                if ch == '\\' {
                    match chars.next() {
                        Some((_, 'n')) => s.push('\n'),
                        Some((_, 't')) => s.push('\t'),
                        Some((_, other)) => s.push(other),
                        None => break,
                    }
                } else if ch as u32 == u32::from(c) {
                    i += k + 1;
                    closed = true;
                    break;
                } else {
                    s.push(ch);
                }
            }
            if !closed {
                return Err((start, "unterminated string".to_owned()));
            }
            out.push((start, Token::Str(s)));
            continue;
        }
        if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            let n = text[start..i].parse::<f64>().map_err(|e| (start, format!("bad number: {e}")))?;
            out.push((start, Token::Num(n)));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start, Token::Ident(text[start..i].to_owned())));
            continue;
        }
        let two = text.get(i..i + 2).unwrap_or("");
        let sym = ["&&", "||", "==", "!=", "<=", ">="].into_iter().find(|s| *s == two);
        if let Some(sym) = sym {
            out.push((start, Token::Sym(sym)));
            i += 2;
            continue;
        }
        let one = ["!", "<", ">", "(", ")", "[", "]", ".", ","].into_iter().find(|s| s.as_bytes()[0] == c);
        match one {
            Some(sym) => {
                out.push((start, Token::Sym(sym)));
                i += 1;
            }
            None => return Err((start, format!("unexpected character {:?}", text[start..].chars().next()))),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    pos: usize,
    /// Offset of the end of the text (where "unexpected end" errors point).
    end: usize,
}

type Parsed = Result<Node, (usize, String)>;

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(o, _)| *o)
    }

    fn eat(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Some(Token::Sym(s)) if *s == sym) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, sym: &str) -> Result<(), (usize, String)> {
        if self.eat(sym) { Ok(()) } else { Err((self.offset(), format!("expected {sym:?}"))) }
    }

    fn or(&mut self) -> Parsed {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Node::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Parsed {
        let mut left = self.not()?;
        while self.eat("&&") {
            left = Node::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Parsed {
        if self.eat("!") { Ok(Node::Not(Box::new(self.not()?))) } else { self.compare() }
    }

    fn compare(&mut self) -> Parsed {
        let left = self.postfix()?;
        let op = match self.peek() {
            Some(Token::Sym("==")) => Op::Eq,
            Some(Token::Sym("!=")) => Op::Ne,
            Some(Token::Sym("<")) => Op::Lt,
            Some(Token::Sym("<=")) => Op::Le,
            Some(Token::Sym(">")) => Op::Gt,
            Some(Token::Sym(">=")) => Op::Ge,
            Some(Token::Ident(w)) if w == "in" => Op::In,
            _ => return Ok(left),
        };
        self.pos += 1;
        Ok(Node::Compare(Box::new(left), op, Box::new(self.postfix()?)))
    }

    fn postfix(&mut self) -> Parsed {
        let mut node = self.primary()?;
        loop {
            if self.eat(".") {
                let offset = self.offset();
                let Some(Token::Ident(name)) = self.peek().cloned() else {
                    return Err((offset, "expected a field or method name after '.'".to_owned()));
                };
                self.pos += 1;
                if self.eat("(") {
                    if !["contains", "startsWith", "endsWith", "size"].contains(&name.as_str()) {
                        return Err((offset, format!("unknown method {name:?}")));
                    }
                    let args = self.args()?;
                    node = Node::Method(Box::new(node), name, args);
                } else {
                    node = Node::Field(Box::new(node), name);
                }
            } else if self.eat("[") {
                let index = self.or()?;
                self.expect("]")?;
                node = Node::Index(Box::new(node), Box::new(index));
            } else {
                return Ok(node);
            }
        }
    }

    fn args(&mut self) -> Result<Vec<Node>, (usize, String)> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.or()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> Parsed {
        let offset = self.offset();
        let Some(token) = self.peek().cloned() else {
            return Err((offset, "unexpected end of expression".to_owned()));
        };
        self.pos += 1;
        match token {
            Token::Str(s) => Ok(Node::Literal(Value::String(s))),
            Token::Num(n) => Ok(Node::Literal(number(n))),
            Token::Sym("(") => {
                let inner = self.or()?;
                self.expect(")")?;
                Ok(inner)
            }
            Token::Sym("[") => {
                let mut items = Vec::new();
                if !self.eat("]") {
                    loop {
                        items.push(self.or()?);
                        if self.eat("]") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Ok(Node::List(items))
            }
            Token::Ident(word) => match word.as_str() {
                "true" => Ok(Node::Literal(Value::Bool(true))),
                "false" => Ok(Node::Literal(Value::Bool(false))),
                "null" => Ok(Node::Literal(Value::Null)),
                "size" => {
                    self.expect("(")?;
                    let mut args = self.args()?;
                    match (args.pop(), args.is_empty()) {
                        (Some(arg), true) => Ok(Node::Size(Box::new(arg))),
                        _ => Err((offset, "size() takes one argument".to_owned())),
                    }
                }
                name if VARIABLES.contains(&name) => Ok(Node::Var(name.to_owned())),
                other => Err((offset, format!("unknown variable {other:?} (known: {})", VARIABLES.join(", ")))),
            },
            Token::Sym(s) => Err((offset, format!("unexpected {s:?}"))),
        }
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn truthy(v: &Value) -> bool {
    agno_core::truthy(Some(v))
}

fn eval(node: &Node, ctx: &Map<String, Value>) -> Value {
    match node {
        Node::Literal(v) => v.clone(),
        Node::List(items) => Value::Array(items.iter().map(|n| eval(n, ctx)).collect()),
        Node::Var(name) => ctx.get(name).cloned().unwrap_or(Value::Null),
        Node::Field(base, name) => eval(base, ctx).get(name).cloned().unwrap_or(Value::Null),
        Node::Index(base, index) => {
            let base = eval(base, ctx);
            match eval(index, ctx) {
                Value::String(key) => base.get(&key).cloned().unwrap_or(Value::Null),
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| base.get(i).cloned())
                    .unwrap_or(Value::Null),
                _ => Value::Null,
            }
        }
        Node::Not(inner) => Value::Bool(!truthy(&eval(inner, ctx))),
        Node::And(a, b) => Value::Bool(truthy(&eval(a, ctx)) && truthy(&eval(b, ctx))),
        Node::Or(a, b) => Value::Bool(truthy(&eval(a, ctx)) || truthy(&eval(b, ctx))),
        Node::Compare(a, op, b) => Value::Bool(compare(&eval(a, ctx), *op, &eval(b, ctx))),
        Node::Size(inner) => size(&eval(inner, ctx)),
        Node::Method(base, name, args) => {
            let base = eval(base, ctx);
            let arg = args.first().map(|a| eval(a, ctx)).unwrap_or(Value::Null);
            match (name.as_str(), &base, &arg) {
                ("size", _, _) => size(&base),
                ("contains", Value::String(s), Value::String(sub)) => Value::Bool(s.contains(sub.as_str())),
                ("contains", Value::Array(items), item) => Value::Bool(items.contains(item)),
                ("contains", Value::Object(map), Value::String(key)) => Value::Bool(map.contains_key(key)),
                ("startsWith", Value::String(s), Value::String(p)) => Value::Bool(s.starts_with(p.as_str())),
                ("endsWith", Value::String(s), Value::String(p)) => Value::Bool(s.ends_with(p.as_str())),
                _ => Value::Bool(false),
            }
        }
    }
}

fn size(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::from(s.chars().count()),
        Value::Array(a) => Value::from(a.len()),
        Value::Object(o) => Value::from(o.len()),
        _ => Value::from(0),
    }
}

fn compare(a: &Value, op: Op, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ordering = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64().zip(y.as_f64()).and_then(|(x, y)| x.partial_cmp(&y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    };
    match op {
        Op::Eq => ordering.map_or(a == b, |o| o == Ordering::Equal),
        Op::Ne => !ordering.map_or(a == b, |o| o == Ordering::Equal),
        Op::Lt => ordering == Some(Ordering::Less),
        Op::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        Op::Gt => ordering == Some(Ordering::Greater),
        Op::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
        Op::In => match b {
            Value::Array(items) => items.contains(a),
            Value::Object(map) => a.as_str().is_some_and(|k| map.contains_key(k)),
            Value::String(s) => a.as_str().is_some_and(|sub| s.contains(sub)),
            _ => false,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ctx() -> Map<String, Value> {
        json!({
            "input": "please refund my order",
            "previous_step_content": "42",
            "previous_step_outputs": {"draft": "a draft"},
            "additional_data": {"priority": 3},
            "session_state": {"tier": "pro", "tags": ["a", "b"], "count": 2.5},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn expressions_evaluate_as_cel_does() {
        let cases = [
            (r#"session_state.tier == "pro""#, true),
            (r#"session_state.tier != 'pro'"#, false),
            (r#"input.contains("refund") && !input.contains("cancel")"#, true),
            (r#""a" in session_state.tags"#, true),
            (r#""refund" in input"#, true),
            ("additional_data.priority >= 3 && additional_data.priority < 4", true),
            ("session_state.count > 2", true),
            ("size(session_state.tags) == 2", true),
            ("session_state.tags.size() == 3", false),
            (r#"previous_step_outputs["draft"].startsWith("a ")"#, true),
            ("session_state.missing == null", true),
            ("session_state.missing", false),
            ("previous_step_content", true),
            ("(false || true) && [1, 2].contains(2)", true),
            (r#"input.endsWith("order") || session_state.nope.deeper == 1"#, true),
        ];
        for (text, expected) in cases {
            let e = Expression::parse(text).unwrap();
            assert_eq!(e.is_true(&ctx()), expected, "{text}");
        }
    }

    #[test]
    fn bad_expressions_say_where() {
        for (text, offset, what) in [
            ("session_state.tier ==", 21, "end of expression"),
            ("sesion_state.tier", 0, "unknown variable"),
            ("input.shout()", 6, "unknown method"),
            (r#"input == "open"#, 9, "unterminated"),
            ("input ~ 1", 6, "unexpected character"),
            ("(input", 6, "expected \")\""),
        ] {
            let err = Expression::parse(text).unwrap_err();
            assert!(err.message.contains(what), "{text}: {err}");
            assert_eq!(err.offset, offset, "{text}: {err}");
        }
    }
}
