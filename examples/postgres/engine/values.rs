//! Values between JSON and PostgreSQL: `:name` inputs go out as text that PostgreSQL parses as
//! the parameter's own type (so any type works, and a value that does not fit is PostgreSQL's
//! own error), and column values come back as JSON (numbers, booleans, strings, JSON; `numeric`
//! as a string, so no digit is lost; dates and times in ISO 8601; `bytea` as hexadecimal).

use std::error::Error;

use pilotage::prelude::*;
use tokio_postgres::types::{private::BytesMut, Format, FromSql, IsNull, ToSql, Type};

type BoxError = Box<dyn Error + Sync + Send>;

/// One input value, sent in text format (`None`: SQL NULL).
#[derive(Debug)]
pub struct Text(pub Option<String>);

impl Text {
    /// The text of a JSON scalar (`null` is NULL; arrays and objects are refused before).
    pub fn of(v: &Json) -> Text {
        Text(match v {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
    }
}

impl ToSql for Text {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match &self.0 {
            None => Ok(IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    tokio_postgres::types::to_sql_checked!();
}

/// One column value as JSON.
pub struct Cell(pub Json);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let v = match *ty {
            Type::BOOL => json!(bool::from_sql(ty, raw)?),
            Type::INT2 => json!(i16::from_sql(ty, raw)?),
            Type::INT4 => json!(i32::from_sql(ty, raw)?),
            Type::INT8 => json!(i64::from_sql(ty, raw)?),
            Type::OID => json!(u32::from_sql(ty, raw)?),
            Type::FLOAT4 => json!(f32::from_sql(ty, raw)?),
            Type::FLOAT8 => json!(f64::from_sql(ty, raw)?),
            Type::JSON | Type::JSONB => Json::from_sql(ty, raw)?,
            Type::NUMERIC => json!(numeric(raw)?),
            Type::DATE => json!(date(i64::from(i32::from_sql(ty, raw)?))),
            Type::TIMESTAMP => json!(timestamp(i64::from_sql(ty, raw)?, "")),
            Type::TIMESTAMPTZ => json!(timestamp(i64::from_sql(ty, raw)?, "Z")),
            Type::UUID => json!(uuid(raw)?),
            Type::BYTEA => json!(raw.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            _ if <&str as FromSql>::accepts(ty) => json!(<&str>::from_sql(ty, raw)?),
            _ => json!(format!("({} value)", ty.name())),
        };
        Ok(Cell(v))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, BoxError> {
        Ok(Cell(Json::Null))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// `numeric`'s binary form (base-10000 digits) as decimal text, written into one string.
pub(crate) fn numeric(raw: &[u8]) -> Result<String, BoxError> {
    use std::fmt::Write;
    let word = |i: usize| -> Result<i16, BoxError> {
        let b = raw.get(i..i + 2).ok_or("short numeric")?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    };
    let (ndigits, weight, sign, dscale) = (word(0)?, word(2)?, word(4)? as u16, word(6)?);
    match sign {
        0xC000 => return Ok("NaN".to_owned()),
        0xD000 => return Ok("Infinity".to_owned()),
        0xF000 => return Ok("-Infinity".to_owned()),
        _ => {}
    }
    let ndigits = usize::try_from(ndigits)?;
    let scale = usize::try_from(dscale)?;
    if raw.len() < 8 + 2 * ndigits {
        return Err("short numeric".into());
    }
    // Digit `k` (0 before the first and past the last).
    let digit = |k: i32| -> i16 {
        match usize::try_from(k) {
            Ok(k) if k < ndigits => word(8 + 2 * k).unwrap_or(0),
            _ => 0,
        }
    };
    let mut out = String::with_capacity(8 + 4 * ndigits + scale);
    if sign == 0x4000 {
        out.push('-');
    }
    let start = out.len();
    for k in 0..=i32::from(weight).max(-1) {
        let d = digit(k);
        if out.len() == start {
            if d != 0 {
                let _ = write!(out, "{d}");
            }
        } else {
            let _ = write!(out, "{d:04}");
        }
    }
    if out.len() == start {
        out.push('0');
    }
    if scale > 0 {
        out.push('.');
        let frac = out.len();
        let mut k = i32::from(weight) + 1;
        while out.len() - frac < scale {
            let _ = write!(out, "{:04}", digit(k));
            k += 1;
        }
        out.truncate(frac + scale);
    }
    Ok(out)
}

/// Days since 2000-01-01 as `YYYY-MM-DD` (proleptic Gregorian; Howard Hinnant's civil_from_days).
pub(crate) fn date(days: i64) -> String {
    let z = days + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Microseconds since 2000-01-01 00:00 as ISO 8601, with `zone` appended.
pub(crate) fn timestamp(micros: i64, zone: &str) -> String {
    if micros == i64::MAX {
        return "infinity".to_owned();
    }
    if micros == i64::MIN {
        return "-infinity".to_owned();
    }
    let day = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let (s, us) = (rest / 1_000_000, rest % 1_000_000);
    let time = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    let frac = if us == 0 { String::new() } else { format!(".{us:06}") };
    format!("{}T{time}{frac}{zone}", date(day))
}

fn uuid(raw: &[u8]) -> Result<String, BoxError> {
    if raw.len() != 16 {
        return Err("a uuid has 16 bytes".into());
    }
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]))
}
