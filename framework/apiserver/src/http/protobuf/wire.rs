//! The protobuf wire format: varints, field keys and the four wire types
//! Kubernetes messages use. Every read is bounds-checked and fails with a
//! [`Malformed`] reason; nothing here allocates.

use super::error::Malformed;

/// Wire type 0: varint.
pub(super) const VARINT: u8 = 0;
/// Wire type 1: 8 little-endian bytes.
pub(super) const FIXED64: u8 = 1;
/// Wire type 2: length-delimited.
pub(super) const LEN: u8 = 2;
/// Wire type 5: 4 little-endian bytes.
pub(super) const FIXED32: u8 = 5;

/// Field numbers are 29 bits wide.
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// One field's value as it appears on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WireValue<'a> {
    /// A varint, not yet interpreted.
    Varint(u64),
    /// A fixed 64-bit value.
    Fixed64(u64),
    /// A fixed 32-bit value.
    Fixed32(u32),
    /// A length-delimited payload.
    Len(&'a [u8]),
}

impl WireValue<'_> {
    /// The wire type number, for error messages.
    pub(super) fn wire_type(&self) -> u8 {
        match self {
            WireValue::Varint(_) => VARINT,
            WireValue::Fixed64(_) => FIXED64,
            WireValue::Len(_) => LEN,
            WireValue::Fixed32(_) => FIXED32,
        }
    }
}

/// Reads a varint from the front of `buf`, returning it and the rest.
pub(super) fn read_varint(buf: &[u8]) -> Result<(u64, &[u8]), Malformed> {
    let mut value: u64 = 0;
    for (i, &byte) in buf.iter().enumerate() {
        // The tenth byte may only contribute the top bit of a u64, and must
        // end the varint.
        if i == 9 && byte > 1 {
            return Err(Malformed::VarintTooLong);
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((value, &buf[i + 1..]));
        }
    }
    Err(Malformed::TruncatedVarint)
}

/// An iterator over the fields of one message's bytes. After the first
/// error it yields nothing more.
pub(super) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Iterates over the fields encoded in `buf`.
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Fields { rest: buf }
    }

    fn next_field(&mut self) -> Result<(u32, WireValue<'a>), Malformed> {
        let (key, rest) = read_varint(self.rest)?;
        let number = key >> 3;
        let wire_type = (key & 7) as u8;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(Malformed::FieldNumber(number));
        }
        let (value, rest) = match wire_type {
            VARINT => {
                let (v, rest) = read_varint(rest)?;
                (WireValue::Varint(v), rest)
            }
            FIXED64 => {
                let (bytes, rest) = rest
                    .split_first_chunk::<8>()
                    .ok_or(Malformed::TruncatedFixed)?;
                (WireValue::Fixed64(u64::from_le_bytes(*bytes)), rest)
            }
            FIXED32 => {
                let (bytes, rest) = rest
                    .split_first_chunk::<4>()
                    .ok_or(Malformed::TruncatedFixed)?;
                (WireValue::Fixed32(u32::from_le_bytes(*bytes)), rest)
            }
            LEN => {
                let (len, rest) = read_varint(rest)?;
                let len_usize = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= rest.len())
                    .ok_or(Malformed::LengthOutOfBounds {
                        length: len,
                        remaining: rest.len(),
                    })?;
                let (payload, rest) = rest.split_at(len_usize);
                (WireValue::Len(payload), rest)
            }
            other => return Err(Malformed::WireType(other)),
        };
        self.rest = rest;
        // Checked above: 1..=2^29-1 fits in u32.
        Ok((number as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, WireValue<'a>), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = self.next_field();
        if item.is_err() {
            self.rest = &[];
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_and_reject_overlong_or_truncated_input() {
        assert_eq!(read_varint(&[0x00]).unwrap().0, 0);
        assert_eq!(
            read_varint(&[0xac, 0x02, 0xff]).unwrap(),
            (300, &[0xff][..])
        );
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_varint(&max).unwrap().0, u64::MAX);
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(read_varint(&too_big), Err(Malformed::VarintTooLong));
        assert_eq!(read_varint(&[0x80; 11]), Err(Malformed::VarintTooLong));
        assert_eq!(read_varint(&[0x80, 0x80]), Err(Malformed::TruncatedVarint));
        assert_eq!(read_varint(&[]), Err(Malformed::TruncatedVarint));
    }

    #[test]
    fn fields_yield_each_wire_type_then_stop_after_an_error() {
        // 1: varint 150, 2: "hi", 3: fixed64 1, 4: fixed32 2, then a bad key.
        let buf = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0,
            0, 0x07,
        ];
        let items: Vec<_> = Fields::new(&buf).collect();
        assert_eq!(
            items,
            vec![
                Ok((1, WireValue::Varint(150))),
                Ok((2, WireValue::Len(b"hi"))),
                Ok((3, WireValue::Fixed64(1))),
                Ok((4, WireValue::Fixed32(2))),
                Err(Malformed::FieldNumber(0)),
            ]
        );
    }

    #[test]
    fn lengths_past_the_end_and_group_wire_types_are_errors() {
        let items: Vec<_> = Fields::new(&[0x12, 0x05, b'a']).collect();
        assert_eq!(
            items,
            vec![Err(Malformed::LengthOutOfBounds {
                length: 5,
                remaining: 1
            })]
        );
        let items: Vec<_> = Fields::new(&[0x0b]).collect();
        assert_eq!(items, vec![Err(Malformed::WireType(3))]);
        let items: Vec<_> = Fields::new(&[0x09, 1, 2]).collect();
        assert_eq!(items, vec![Err(Malformed::TruncatedFixed)]);
    }
}
