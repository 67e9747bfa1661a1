//! Values as typed SQL literals, for statements sent with their parameters inline.
//!
//! Text goes into an escape string (`E'…'`, whose meaning does not depend on
//! `standard_conforming_strings`) with `\` and `'` doubled and NUL written as `\000` (which
//! the server rejects exactly as it rejects a NUL in a bound text); bytes as hex; numbers as
//! quoted decimal. [`typed_literal`] casts the literal to the type sqlx declares for the same
//! Rust value when it binds it, so a statement is typed exactly as when prepared.

/// A value that can be written as a typed SQL literal.
pub(crate) trait Literal {
    /// The SQL type sqlx declares for the same Rust value when it binds it.
    const TYPE: &'static str;
    /// Appends the value as an (untyped) SQL literal; `NULL` for none.
    fn write(&self, out: &mut String);
}

/// A [`Literal`] that can be an array element.
pub(crate) trait Element: Literal {
    /// The SQL type of an array of this element.
    const ARRAY: &'static str;
}

impl Literal for i64 {
    const TYPE: &'static str = "int8";
    fn write(&self, out: &mut String) {
        // Quoted, so that i64::MIN is one literal rather than a negated overflowing one.
        out.push('\'');
        out.push_str(&self.to_string());
        out.push('\'');
    }
}

impl Element for i64 {
    const ARRAY: &'static str = "int8[]";
}

impl Literal for i32 {
    const TYPE: &'static str = "int4";
    fn write(&self, out: &mut String) {
        out.push('\'');
        out.push_str(&self.to_string());
        out.push('\'');
    }
}

impl Element for i32 {
    const ARRAY: &'static str = "int4[]";
}

impl Literal for bool {
    const TYPE: &'static str = "bool";
    fn write(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl Element for bool {
    const ARRAY: &'static str = "bool[]";
}

impl Literal for str {
    const TYPE: &'static str = "text";
    fn write(&self, out: &mut String) {
        out.reserve(self.len() + 3);
        out.push_str("E'");
        for c in self.chars() {
            match c {
                '\'' => out.push_str("''"),
                '\\' => out.push_str("\\\\"),
                '\0' => out.push_str("\\000"),
                c => out.push(c),
            }
        }
        out.push('\'');
    }
}

impl Literal for String {
    const TYPE: &'static str = "text";
    fn write(&self, out: &mut String) {
        self.as_str().write(out);
    }
}

impl Element for String {
    const ARRAY: &'static str = "text[]";
}

impl Literal for [u8] {
    const TYPE: &'static str = "bytea";
    fn write(&self, out: &mut String) {
        // `\x` is bytea's hex input format; the backslash is doubled inside `E'…'`.
        out.reserve(2 * self.len() + 6);
        out.push_str("E'\\\\x");
        out.push_str(&hex::encode(self));
        out.push('\'');
    }
}

impl Literal for Vec<u8> {
    const TYPE: &'static str = "bytea";
    fn write(&self, out: &mut String) {
        self.as_slice().write(out);
    }
}

impl Element for Vec<u8> {
    const ARRAY: &'static str = "bytea[]";
}

impl<T: Literal> Literal for Option<T> {
    const TYPE: &'static str = T::TYPE;
    fn write(&self, out: &mut String) {
        match self {
            Some(value) => value.write(out),
            None => out.push_str("NULL"),
        }
    }
}

impl<T: Element> Element for Option<T> {
    const ARRAY: &'static str = T::ARRAY;
}

impl<T: Literal + ?Sized> Literal for &T {
    const TYPE: &'static str = T::TYPE;
    fn write(&self, out: &mut String) {
        (**self).write(out);
    }
}

impl<T: Element> Literal for Vec<T> {
    const TYPE: &'static str = T::ARRAY;
    fn write(&self, out: &mut String) {
        out.push_str("ARRAY[");
        for (i, element) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            element.write(out);
        }
        out.push(']');
    }
}

/// `value` as a typed literal: `(<literal>::<type>)`.
pub(crate) fn typed_literal<T: Literal + ?Sized>(value: &T) -> String {
    let mut out = String::from("(");
    value.write(&mut out);
    out.push_str("::");
    out.push_str(T::TYPE);
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_typed_and_escaped() {
        assert_eq!(typed_literal(&-5_i64), "('-5'::int8)");
        assert_eq!(typed_literal(&i64::MIN), "('-9223372036854775808'::int8)");
        assert_eq!(typed_literal(&7_i32), "('7'::int4)");
        assert_eq!(typed_literal(&true), "(true::bool)");
        assert_eq!(
            typed_literal("it's a \\ \0"),
            "(E'it''s a \\\\ \\000'::text)"
        );
        assert_eq!(typed_literal(&None::<&str>), "(NULL::text)");
        assert_eq!(typed_literal(&vec![0_u8, 0xab]), "(E'\\\\x00ab'::bytea)");
        assert_eq!(
            typed_literal(&vec![Some("a".to_owned()), None]),
            "(ARRAY[E'a',NULL]::text[])"
        );
        assert_eq!(typed_literal(&Vec::<i64>::new()), "(ARRAY[]::int8[])");
        assert_eq!(
            typed_literal(&vec![vec![1_u8]]),
            "(ARRAY[E'\\\\x01']::bytea[])"
        );
    }
}
