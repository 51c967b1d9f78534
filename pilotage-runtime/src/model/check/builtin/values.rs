//! JSON numbers: their exact order, and `multipleOf`.

use std::cmp::Ordering;

use serde_json::Number;

/// A JSON number as serde_json holds it.
#[derive(Debug, Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

fn num(n: &Number) -> Num {
    if let Some(u) = n.as_u64() {
        Num::U(u)
    } else if let Some(i) = n.as_i64() {
        Num::I(i)
    } else {
        Num::F(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// 2^127: below it in magnitude, a float's integer part fits an `i128` exactly.
const I128_RANGE: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;

/// The exact order of two JSON numbers (1 == 1.0; 2^53 + 1 > 2^53 as a float).
pub(super) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (num(a), num(b)) {
        (Num::F(x), Num::F(y)) => x.partial_cmp(&y),
        (Num::F(x), Num::U(y)) => int_vs_float(i128::from(y), x).map(Ordering::reverse),
        (Num::F(x), Num::I(y)) => int_vs_float(i128::from(y), x).map(Ordering::reverse),
        (Num::U(x), Num::F(y)) => int_vs_float(i128::from(x), y),
        (Num::I(x), Num::F(y)) => int_vs_float(i128::from(x), y),
        (x, y) => Some(integer(x).cmp(&integer(y))),
    }
}

fn integer(n: Num) -> i128 {
    match n {
        Num::U(u) => i128::from(u),
        Num::I(i) => i128::from(i),
        Num::F(_) => 0,
    }
}

fn int_vs_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= I128_RANGE {
        return Some(Ordering::Less);
    }
    if f <= -I128_RANGE {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    match i.cmp(&(whole as i128)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(f - whole)),
        order => Some(order),
    }
}

pub(super) fn is_integer(n: &Number) -> bool {
    match num(n) {
        Num::F(f) => f.is_finite() && f.fract() == 0.0,
        _ => true,
    }
}

/// 2^53: integers up to it are exact as floats.
const SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// `multipleOf`, as `jsonschema` decides it: integers by integer remainder, fractions by the
/// decimals both numbers print as (0.3 is a multiple of 0.1).
pub(super) fn is_multiple(n: &Number, multiple: f64) -> bool {
    if multiple.fract() == 0.0 {
        return is_multiple_of_integer(n, multiple);
    }
    let Some(value) = n.as_f64() else { return false };
    if value == 0.0 {
        return true;
    }
    if value.abs() < multiple {
        return false;
    }
    if let Some(answer) = divides_exactly(value, multiple) {
        return answer;
    }
    let quotient = value / multiple;
    quotient.is_finite() && quotient.fract() == 0.0
}

fn is_multiple_of_integer(n: &Number, multiple: f64) -> bool {
    if multiple > 0.0 && multiple <= SAFE_INTEGER {
        let divisor = multiple as u64;
        match num(n) {
            Num::U(u) => return u % divisor == 0,
            Num::I(i) => return i % (divisor as i64) == 0,
            Num::F(f) if f.abs() >= SAFE_INTEGER => {
                if let Some(answer) = decimal_multiple(&n.to_string(), divisor) {
                    return answer;
                }
            }
            Num::F(_) => {}
        }
    }
    n.as_f64().is_some_and(|f| f.fract() == 0.0 && f % multiple == 0.0)
}

/// Whether the plain decimal integer `text` (no exponent) divides by `divisor`.
fn decimal_multiple(text: &str, divisor: u64) -> Option<bool> {
    if text.contains(['e', 'E']) || divisor == 0 {
        return None;
    }
    let text = text.strip_prefix('-').unwrap_or(text);
    let (digits, fraction) = text.split_once('.').unwrap_or((text, ""));
    if !fraction.bytes().all(|b| b == b'0') {
        return Some(false);
    }
    let mut remainder = 0u64;
    for byte in digits.bytes() {
        let digit = u64::from(byte.checked_sub(b'0').filter(|d| *d <= 9)?);
        remainder = (remainder.checked_mul(10)?.checked_add(digit)?) % divisor;
    }
    Some(remainder == 0)
}

/// A finite float as the decimal it prints as: `mantissa / 10^decimals`.
fn decimal_parts(value: f64) -> Option<(i128, i32)> {
    if !value.is_finite() {
        return None;
    }
    let text = format!("{value:e}");
    let (digits, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let negative = digits.starts_with('-');
    let digits = digits.trim_start_matches('-');
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut mantissa: i128 = 0;
    for byte in whole.bytes().chain(fraction.bytes()) {
        let digit = i128::from(byte.checked_sub(b'0').filter(|d| *d <= 9)?);
        mantissa = mantissa.checked_mul(10)?.checked_add(digit)?;
    }
    let decimals = i32::try_from(fraction.len()).ok()?.checked_sub(exponent)?;
    Some((if negative { -mantissa } else { mantissa }, decimals))
}

/// Whether `value / multiple` is an integer in the decimals both print as; None past `i128`.
fn divides_exactly(value: f64, multiple: f64) -> Option<bool> {
    let (value_mantissa, value_decimals) = decimal_parts(value)?;
    let (multiple_mantissa, multiple_decimals) = decimal_parts(multiple)?;
    if multiple_mantissa == 0 {
        return None;
    }
    let shared = value_decimals.min(multiple_decimals);
    let scale = |mantissa: i128, decimals: i32| {
        let places = u32::try_from(decimals.checked_sub(shared)?).ok()?;
        mantissa.checked_mul(10_i128.checked_pow(places)?)
    };
    let numerator = scale(value_mantissa, multiple_decimals)?;
    let denominator = scale(multiple_mantissa, value_decimals)?;
    numerator.checked_rem(denominator).map(|r| r == 0)
}
