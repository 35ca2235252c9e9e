//! The keys of each object of the file, read from the types that describe it, so that the
//! reader's unknown-key checks and the schema name the same keys: one list, in declaration
//! order (which is the order the "allowed keys" of an error message lists).

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The keys of the object `T` describes: the field names serde's derive hands to
/// `deserialize_struct` (renames applied), caught by a deserializer that reads nothing.
pub(crate) fn of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut catcher = FieldCatcher(None);
    // It always fails (it holds no value); only the field list it caught matters.
    let _ = T::deserialize(&mut catcher);
    catcher.0.unwrap_or(&[])
}

struct FieldCatcher(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut FieldCatcher {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("fields caught"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_the_declared_fields_renamed_in_order() {
        assert_eq!(
            of::<super::super::File>()[..3],
            ["$schema", "mcpServers", "servers"]
        );
        assert_eq!(
            of::<super::super::policies::OutputRule>(),
            ["tools", "mask", "redact", "allow", "strictSchema"]
        );
        assert_eq!(
            of::<super::super::policies::Classification>(),
            ["read", "write", "destructive"]
        );
        assert_eq!(of::<String>(), Vec::<&str>::new());
    }
}
