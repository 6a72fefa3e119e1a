//! `setters!`: the by-value builder setters of the crate's builders, written once.
//!
//! Each line names a setter, its one argument and the field it assigns:
//!
//! ```ignore
//! setters! {
//!     /// Agent name.
//!     name(value: impl Into<String>) => inner.name = Some(value.into());
//! }
//! ```
//!
//! expands to `pub fn name(mut self, value: impl Into<String>) -> Self`, which assigns and
//! returns `self`. Setters that do more than assign one field are written by hand.

/// Expands `name(arg: Type) => field.path = value;` lines into by-value builder setters.
macro_rules! setters {
    ($( $(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $($field:ident).+ = $value:expr; )*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$($field).+ = $value;
            self
        }
    )*};
}
