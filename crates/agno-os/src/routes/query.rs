//! Query strings read as FastAPI reads them: a parameter given several times is a list where
//! the handler takes a list (`?topics=a&topics=b`) and its last value where it takes one value;
//! numbers and booleans are parsed from their text; an empty value of an optional parameter is
//! its text (the handler decides). Every route's query goes through [`Query`], so this holds
//! everywhere, and a query that does not fit answers 422 naming the parameter.

use std::collections::BTreeMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use crate::error::ApiError;

/// The query of a request, deserialized into `T` (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned + schemars::JsonSchema, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        from_query(parts.uri.query().unwrap_or_default()).map(Query)
    }
}

/// Deserializes `T` from a query string and checks the bounds `T`'s schema declares
/// ([`super::validate`]).
///
/// # Errors
/// 422 naming the parameter that does not fit.
pub fn from_query<T: DeserializeOwned + schemars::JsonSchema>(query: &str) -> Result<T, ApiError> {
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        values.entry(name.into_owned()).or_default().push(value.into_owned());
    }
    let pairs: Vec<(String, Vec<String>)> = values.into_iter().collect();
    let parsed = T::deserialize(Params { values: pairs.clone().into_iter(), field: None }).map_err(|e: Error| {
        let name = e.field.clone().unwrap_or_default();
        ApiError::unprocessable(e.message).at("query", &name)
    })?;
    super::validate::check::<T>(&super::validate::query_value::<T>(&pairs), "query").map_err(|mut e| {
        // FastAPI quotes a query parameter's refused input as the text it was sent as.
        let given = e.location.as_ref().and_then(|(_, name)| pairs.iter().find(|(n, _)| n == name));
        if let (Some(input), Some((_, values))) = (e.input.as_mut(), given)
            && !input.is_string()
            && !input.is_null()
            && let Some(text) = values.last()
        {
            **input = serde_json::Value::String(text.clone());
        }
        e
    })?;
    Ok(parsed)
}

/// Why a query did not fit, and which parameter.
#[derive(Debug)]
struct Error {
    message: String,
    field: Option<String>,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        Self { message: msg.to_string(), field: None }
    }
}

/// The parameters as a map of name to values.
struct Params {
    values: std::vec::IntoIter<(String, Vec<String>)>,
    field: Option<(String, Vec<String>)>,
}

impl<'de> de::Deserializer<'de> for Params {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> de::MapAccess<'de> for Params {
    type Error = Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((name, values)) = self.values.next() else { return Ok(None) };
        let key = seed.deserialize(name.clone().into_deserializer())?;
        self.field = Some((name, values));
        Ok(Some(key))
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (name, values) = self.field.take().unwrap_or_default();
        seed.deserialize(Values(values)).map_err(|mut e| {
            e.message = format!("{name}: {}", e.message);
            e.field = Some(name);
            e
        })
    }
}

/// Every value given for one parameter.
struct Values(Vec<String>);

impl Values {
    /// The value a single-valued parameter takes: the last one given.
    fn last(self) -> String {
        self.0.into_iter().last().unwrap_or_default()
    }
}

macro_rules! parse_as {
    ($($method:ident => $visit:ident: $ty:ty),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let text = self.last();
            let parsed: $ty = text.trim().parse().map_err(|_| {
                <Error as de::Error>::custom(format!("{text:?} is not a valid {}", stringify!($ty)))
            })?;
            visitor.$visit(parsed)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Values {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.last())
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(de::value::SeqDeserializer::new(self.0.into_iter().map(|v| Values(vec![v]))))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let text = self.last();
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => visitor.visit_bool(true),
            "false" | "0" | "no" | "off" | "f" | "n" => visitor.visit_bool(false),
            _ => Err(<Error as de::Error>::custom(format!("{text:?} is not a valid boolean"))),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.last().into_deserializer())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    parse_as! {
        deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16, deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64, deserialize_u8 => visit_u8: u8, deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32, deserialize_u64 => visit_u64: u64, deserialize_f32 => visit_f32: f32,
        deserialize_f64 => visit_f64: f64,
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct tuple
        tuple_struct map struct identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, Error> for Values {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq, schemars::JsonSchema)]
    struct Q {
        topics: Option<Vec<String>>,
        limit: Option<usize>,
        name: Option<String>,
        flag: Option<bool>,
    }

    #[test]
    fn repeated_names_are_lists_or_their_last_value() {
        let q: Q = from_query("topics=a&topics=b&limit=5&limit=7&name=x+y&flag=true").unwrap();
        assert_eq!(
            q,
            Q {
                topics: Some(vec!["a".into(), "b".into()]),
                limit: Some(7),
                name: Some("x y".into()),
                flag: Some(true)
            }
        );
        let q: Q = from_query("topics=only").unwrap();
        assert_eq!(q.topics, Some(vec!["only".into()]));
        let q: Q = from_query("").unwrap();
        assert_eq!(q, Q { topics: None, limit: None, name: None, flag: None });
    }

    #[test]
    fn a_value_that_does_not_fit_names_its_parameter() {
        let e = from_query::<Q>("limit=abc").unwrap_err();
        assert_eq!(e.location, Some(("query", "limit".to_owned())));
        assert!(e.detail.contains("limit"), "{}", e.detail);
        let e = from_query::<Q>("limit=99999999999999999999999").unwrap_err();
        assert_eq!(e.location, Some(("query", "limit".to_owned())));
    }
}
