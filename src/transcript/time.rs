//! When a transcript line says something happened: its `timestamp`, as the
//! agents write it (ISO 8601 / RFC 3339: `2026-11-22T19:13:12.656Z`, or
//! with an offset), in milliseconds since the Unix epoch.

use serde_json::Value;

/// The line's `timestamp`, when it is one.
pub fn timestamp_ms(line: &Value) -> Option<u64> {
    parse_rfc3339_ms(line.get("timestamp")?.as_str()?)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` in milliseconds since the
/// epoch; `None` for anything else (or a time before 1970).
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let digits = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(part).ok()?.parse().ok())?
    };
    let separated = b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':');
    if !separated {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0i64;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        let fraction = std::str::from_utf8(&b[start..at.min(start + 3)]).ok()?;
        if fraction.is_empty() {
            return None;
        }
        millis = fraction.parse::<i64>().ok()? * 10i64.pow(3 - fraction.len() as u32);
    }
    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() && b.get(at + 3) == Some(&b':') => {
            let minutes = digits(at + 1, 2)? * 60 + digits(at + 4, 2)?;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1000 + millis).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_timestamps_read_as_milliseconds() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2026-11-22T19:13:12.656Z", Some(1_795_374_792_656)),
            ("2026-11-22T19:13:12Z", Some(1_795_374_792_000)),
            ("2026-11-22T20:13:12.6+01:00", Some(1_795_374_792_600)),
            ("2000-02-29T00:00:00.123456Z", Some(951_782_400_123)),
            ("2026-11-22", None),
            ("t", None),
            ("2026-13-01T00:00:00Z", None),
            ("1969-12-31T23:59:59Z", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_rfc3339_ms(text), expected, "{text}");
        }
    }
}
