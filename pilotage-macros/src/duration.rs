//! ISO 8601 durations for `retention`: `PnYnMnWnDTnHnMnS`.
//!
//! Years count 365 days, months 30 days, weeks 7 days. Only the seconds component may carry a
//! fraction (`PT0.5S`, `PT1,5S`). Components appear in that order, each at most once, and at
//! least one must be present.

use std::time::Duration;

const DAY: u128 = 86_400;
const DATE_UNITS: [(char, u128); 4] = [('Y', 365 * DAY), ('M', 30 * DAY), ('W', 7 * DAY), ('D', DAY)];
const TIME_UNITS: [(char, u128); 3] = [('H', 3600), ('M', 60), ('S', 1)];

/// Parse `text` as an ISO 8601 duration.
pub fn parse(text: &str) -> Result<Duration, String> {
    let mut rest = text.strip_prefix('P').ok_or_else(|| "an ISO 8601 duration starts with `P`".to_owned())?;
    let mut nanos_total: u128 = 0;
    let mut any = false;
    let mut in_time = false;
    let mut next_unit = 0usize;
    while !rest.is_empty() {
        if rest.starts_with('T') {
            if in_time {
                return Err("`T` appears twice".to_owned());
            }
            in_time = true;
            next_unit = 0;
            rest = &rest[1..];
            if rest.is_empty() {
                return Err("`T` must be followed by hours, minutes or seconds (e.g. `PT1H`)".to_owned());
            }
            continue;
        }
        let digits_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .ok_or_else(|| format!("the number `{rest}` has no unit designator"))?;
        let (number, after) = rest.split_at(digits_end);
        let unit = after.chars().next().unwrap_or_default();
        rest = &after[unit.len_utf8()..];
        if number.is_empty() {
            return Err(format!("`{unit}` has no number before it"));
        }
        let units: &[(char, u128)] = if in_time { &TIME_UNITS } else { &DATE_UNITS };
        let Some(position) = units.iter().position(|(u, _)| *u == unit) else {
            let section = if in_time { "after `T` (H, M, S)" } else { "before `T` (Y, M, W, D)" };
            return Err(format!("`{unit}` is not a unit {section}"));
        };
        if position < next_unit {
            return Err(format!("`{unit}` is out of order or repeated: the order is Y M W D T H M S"));
        }
        next_unit = position + 1;
        let seconds_per_unit = units[position].1;
        let (whole, fraction) = match number.find(['.', ',']) {
            Some(i) => (&number[..i], &number[i + 1..]),
            None => (number, ""),
        };
        if number.len() != whole.len() && !(in_time && unit == 'S') {
            return Err(format!("only seconds may have a fraction, not `{number}{unit}`"));
        }
        if whole.is_empty() || fraction.contains(['.', ',']) {
            return Err(format!("`{number}` is not a number"));
        }
        if number.len() != whole.len() && fraction.is_empty() {
            return Err(format!("`{number}` has no digits after its decimal mark"));
        }
        let whole: u128 = whole.parse().map_err(|_| format!("`{number}` is too large"))?;
        let mut fraction_nanos: u128 = 0;
        for (i, d) in fraction.chars().take(9).enumerate() {
            fraction_nanos += u128::from(d.to_digit(10).unwrap_or(0)) * 10u128.pow(8 - i as u32);
        }
        nanos_total = whole
            .checked_mul(seconds_per_unit * 1_000_000_000)
            .and_then(|n| n.checked_add(nanos_total + fraction_nanos))
            .ok_or_else(|| "the duration is too long".to_owned())?;
        any = true;
    }
    if !any {
        return Err("the duration has no components (e.g. `PT1H`, `P30D`)".to_owned());
    }
    let secs =
        u64::try_from(nanos_total / 1_000_000_000).map_err(|_| "the duration is too long".to_owned())?;
    Ok(Duration::new(secs, (nanos_total % 1_000_000_000) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid() {
        assert_eq!(parse("PT1H"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("P1D"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("P1Y"), Ok(Duration::from_secs(365 * 86_400)));
        assert_eq!(parse("P1M"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse("P2W"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse("PT1M"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("P1DT1H1M1S"), Ok(Duration::from_secs(86_400 + 3661)));
        assert_eq!(parse("PT0.5S"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("PT1,25S"), Ok(Duration::from_millis(1250)));
        assert_eq!(parse("P1Y2M3W4DT5H6M7.000000001S").map(|d| d.subsec_nanos()), Ok(1));
    }

    #[test]
    fn invalid() {
        for bad in [
            "", "1H", "P", "PT", "P1H", "PT1D", "P1D1Y", "PT1H1H", "P1.5D", "PTH", "PT1", "P1DT", "PT1.S",
            "PT1.2.3S", "P1x",
        ] {
            assert!(parse(bad).is_err(), "{bad} should be rejected");
        }
    }
}
