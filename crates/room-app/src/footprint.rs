//! The estimated bytes a value holds, for the caches bounded by bytes: what its serialized form
//! would hold, counted by walking the value once, with no text written. Strings and byte strings
//! count their length, numbers their width, every field and element a word for its place.

use serde::Serialize;
use serde::ser;

/// Estimated bytes of `value`: its strings' lengths, its numbers' widths and a word per field,
/// element and variant. Never fails: a value whose serialization fails counts what was walked.
pub(crate) fn estimate<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter(0);
    let _ = value.serialize(&mut counter);
    counter.0
}

const WORD: usize = size_of::<usize>();

struct Counter(usize);

/// The only error of [`Counter`]: a serialization that fails on its own.
#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the value could not be walked")
    }
}

impl std::error::Error for Failed {}

impl ser::Error for Failed {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Failed
    }
}

impl ser::Serializer for &mut Counter {
    type Ok = ();
    type Error = Failed;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, _: bool) -> Result<(), Failed> {
        self.0 += 1;
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), Failed> {
        self.0 += 1;
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), Failed> {
        self.0 += 2;
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), Failed> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), Failed> {
        self.0 += 8;
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), Failed> {
        self.0 += 1;
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), Failed> {
        self.0 += 2;
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), Failed> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), Failed> {
        self.0 += 8;
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Result<(), Failed> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Failed> {
        self.0 += 8;
        Ok(())
    }
    fn serialize_char(self, c: char) -> Result<(), Failed> {
        self.0 += c.len_utf8();
        Ok(())
    }
    fn serialize_str(self, s: &str) -> Result<(), Failed> {
        self.0 += WORD + s.len();
        Ok(())
    }
    fn serialize_bytes(self, b: &[u8]) -> Result<(), Failed> {
        self.0 += WORD + b.len();
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Failed> {
        self.0 += 1;
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Failed> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Failed> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Failed> {
        self.0 += WORD;
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Failed> {
        self.0 += WORD;
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Failed> {
        self.0 += 3 * WORD;
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        self.0 += WORD;
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Failed> {
        self.0 += 3 * WORD;
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Failed> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Failed> {
        self.0 += WORD;
        Ok(self)
    }
}

/// Elements and fields: a word for each one's place, and what it holds (a field's name is
/// static and counts nothing).
macro_rules! compound {
    ($($trait:ident :: $method:ident ($($name:ident: $ty:ty)?)),* $(,)?) => {$(
        impl ser::$trait for &mut Counter {
            type Ok = ();
            type Error = Failed;
            fn $method<T: Serialize + ?Sized>(
                &mut self,
                $($name: $ty,)?
                value: &T,
            ) -> Result<(), Failed> {
                self.0 += WORD;
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Failed> {
                Ok(())
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element(),
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeTupleVariant::serialize_field(),
    SerializeStruct::serialize_field(_name: &'static str),
    SerializeStructVariant::serialize_field(_name: &'static str),
);

/// Map entries: what the key and the value hold.
impl ser::SerializeMap for &mut Counter {
    type Ok = ();
    type Error = Failed;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Failed> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Failed> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Failed> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Serialize)]
    struct Message {
        from: String,
        text: String,
        to: Vec<String>,
        at: u64,
    }

    #[test]
    fn grows_with_the_text_a_value_holds() {
        let short = Message {
            from: "alice".into(),
            text: "hi".into(),
            to: vec!["bob".into()],
            at: 1,
        };
        let long = Message {
            text: "x".repeat(10_000),
            ..short.clone()
        };
        let many = Message {
            to: (0..100).map(|i| format!("user-{i}")).collect(),
            ..short.clone()
        };
        let small = estimate(&short);
        assert!(small >= "alice".len() + "hi".len() + "bob".len() + 8);
        assert!(estimate(&long) >= small + 9_998);
        assert!(estimate(&many) >= small + 99 * "user-0".len());
        // Within a small factor of the JSON text.
        let json = serde_json::to_string(&long).unwrap().len();
        assert!(
            estimate(&long) <= 2 * json,
            "{} against {json}",
            estimate(&long)
        );
    }
}
