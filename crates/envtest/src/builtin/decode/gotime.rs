//! `metav1.Time` and `metav1.MicroTime` parsing with Go's `time.Parse`
//! semantics and error texts, for the layouts `2006-01-02T15:04:05Z07:00`
//! (RFC 3339) and `2006-01-02T15:04:05.000000Z07:00` (RFC 3339 with
//! exactly six fractional digits). A parsed value is returned in the
//! canonical UTC form Go writes back (seconds, or microseconds).

const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// One element of the layout.
#[derive(Clone, Copy)]
enum Elem {
    Literal(&'static str),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Micros,
    Zone,
}

impl Elem {
    fn layout_text(self) -> &'static str {
        match self {
            Elem::Literal(s) => s,
            Elem::Year => "2006",
            Elem::Month => "01",
            Elem::Day => "02",
            Elem::Hour => "15",
            Elem::Minute => "04",
            Elem::Second => "05",
            Elem::Micros => ".000000",
            Elem::Zone => "Z07:00",
        }
    }
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn digit(s: &[u8], i: usize) -> Option<u32> {
    s.get(i)
        .filter(|c| c.is_ascii_digit())
        .map(|c| u32::from(c - b'0'))
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &[u8], fixed: bool) -> Option<(u32, usize)> {
    let first = digit(s, 0)?;
    match digit(s, 1) {
        Some(second) => Some((first * 10 + second, 2)),
        None if fixed => None,
        None => Some((first, 1)),
    }
}

fn all_digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    let mut n: u32 = 0;
    for c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(n)
}

fn days_in(month: u32, year: i32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parses `value`; the error is Go's `*time.ParseError` text.
pub(crate) fn parse(value: &str, micro: bool) -> Result<String, String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let mut elems = vec![
        Elem::Year,
        Elem::Literal("-"),
        Elem::Month,
        Elem::Literal("-"),
        Elem::Day,
        Elem::Literal("T"),
        Elem::Hour,
        Elem::Literal(":"),
        Elem::Minute,
        Elem::Literal(":"),
        Elem::Second,
    ];
    if micro {
        elems.push(Elem::Micros);
    }
    elems.push(Elem::Zone);

    let cannot = |value_elem: &[u8], layout_elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(&String::from_utf8_lossy(value_elem)),
            quote(layout_elem)
        )
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", quote(value));

    let (mut year, mut month, mut day, mut hour, mut minute, mut second) = (0i32, 0, 0, 0, 0, 0);
    let mut nanos: u32 = 0;
    let mut offset_secs: i32 = 0;
    let mut rest = value.as_bytes();
    for (index, elem) in elems.iter().enumerate() {
        let hold = rest;
        match *elem {
            Elem::Literal(lit) => {
                if !rest.starts_with(lit.as_bytes()) {
                    return Err(cannot(rest, lit));
                }
                rest = &rest[lit.len()..];
            }
            Elem::Year => {
                if rest.len() < 4 || digit(rest, 0).is_none() {
                    return Err(cannot(hold, elem.layout_text()));
                }
                year =
                    all_digits(&rest[..4]).ok_or_else(|| cannot(hold, elem.layout_text()))? as i32;
                rest = &rest[4..];
            }
            Elem::Month | Elem::Day | Elem::Minute | Elem::Second | Elem::Hour => {
                let fixed = !matches!(elem, Elem::Hour);
                let (n, used) =
                    getnum(rest, fixed).ok_or_else(|| cannot(hold, elem.layout_text()))?;
                rest = &rest[used..];
                match elem {
                    Elem::Month => {
                        if n == 0 || n > 12 {
                            return Err(out_of_range("month"));
                        }
                        month = n;
                    }
                    Elem::Day => day = n,
                    Elem::Hour => {
                        if n >= 24 {
                            return Err(out_of_range("hour"));
                        }
                        hour = n;
                    }
                    Elem::Minute => {
                        if n >= 60 {
                            return Err(out_of_range("minute"));
                        }
                        minute = n;
                    }
                    _ => {
                        if n >= 60 {
                            return Err(out_of_range("second"));
                        }
                        second = n;
                        // A fraction the layout does not ask for is still accepted.
                        let next_is_micros = matches!(elems.get(index + 1), Some(Elem::Micros));
                        if !next_is_micros
                            && rest.len() >= 2
                            && (rest[0] == b'.' || rest[0] == b',')
                            && digit(rest, 1).is_some()
                        {
                            let mut n = 2;
                            while digit(rest, n).is_some() {
                                n += 1;
                            }
                            nanos = fraction_nanos(&rest[1..n]);
                            rest = &rest[n..];
                        }
                    }
                }
            }
            Elem::Micros => {
                if rest.len() < 7 || !(rest[0] == b'.' || rest[0] == b',') {
                    return Err(cannot(hold, elem.layout_text()));
                }
                let digits = &rest[1..7];
                if all_digits(digits).is_none() {
                    return Err(cannot(hold, elem.layout_text()));
                }
                nanos = fraction_nanos(digits);
                rest = &rest[7..];
            }
            Elem::Zone => {
                if rest.first() == Some(&b'Z') {
                    rest = &rest[1..];
                } else {
                    if rest.len() < 6 || rest[3] != b':' {
                        return Err(cannot(hold, elem.layout_text()));
                    }
                    let hours = all_digits(&rest[1..3]);
                    let mins = all_digits(&rest[4..6]);
                    let (Some(h), Some(m)) = (hours, mins) else {
                        return Err(cannot(hold, elem.layout_text()));
                    };
                    let magnitude = (h * 60 + m) as i32 * 60;
                    offset_secs = match rest[0] {
                        b'+' => magnitude,
                        b'-' => -magnitude,
                        _ => return Err(cannot(hold, elem.layout_text())),
                    };
                    rest = &rest[6..];
                }
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(value),
            quote(&String::from_utf8_lossy(rest))
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(format!("parsing time {}: day out of range", quote(value)));
    }
    canonical(
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
        offset_secs,
        micro,
    )
    .ok_or_else(|| format!("parsing time {}: out of range", quote(value)))
}

fn fraction_nanos(digits: &[u8]) -> u32 {
    let mut nanos: u32 = 0;
    for i in 0..9 {
        nanos = nanos * 10 + digits.get(i).map_or(0, |c| u32::from(c - b'0'));
    }
    nanos
}

#[allow(clippy::too_many_arguments)]
fn canonical(
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    offset_secs: i32,
    micro: bool,
) -> Option<String> {
    use jiff::civil::DateTime;
    let civil = DateTime::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second).ok()?,
        i32::try_from(nanos).ok()?,
    )
    .ok()?;
    let offset = jiff::tz::Offset::from_seconds(offset_secs).ok()?;
    let ts = offset.to_timestamp(civil).ok()?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    jiff::fmt::strtime::format(format, ts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_error_matches_recorded_message() {
        assert_eq!(
            parse("yesterday", true).unwrap_err(),
            "parsing time \"yesterday\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"yesterday\" as \"2006\""
        );
    }

    #[test]
    fn micro_time_needs_six_digits() {
        assert_eq!(
            parse("2024-01-02T03:04:05Z", true).unwrap_err(),
            "parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
        );
        assert_eq!(
            parse("2024-01-02T03:04:05.123456Z", true).unwrap(),
            "2024-01-02T03:04:05.123456Z"
        );
    }

    #[test]
    fn time_is_normalised_to_utc_seconds() {
        assert_eq!(
            parse("2024-01-02T03:04:05.9+01:00", false).unwrap(),
            "2024-01-02T02:04:05Z"
        );
        assert_eq!(
            parse("2024-13-02T03:04:05Z", false).unwrap_err(),
            "parsing time \"2024-13-02T03:04:05Z\": month out of range"
        );
        assert_eq!(
            parse("2023-02-29T03:04:05Z", false).unwrap_err(),
            "parsing time \"2023-02-29T03:04:05Z\": day out of range"
        );
        assert_eq!(
            parse("2024-01-02 03:04:05Z", false).unwrap_err(),
            "parsing time \"2024-01-02 03:04:05Z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \" 03:04:05Z\" as \"T\""
        );
        assert_eq!(
            parse("2024-01-02T03:04:05Zjunk", false).unwrap_err(),
            "parsing time \"2024-01-02T03:04:05Zjunk\": extra text: \"junk\""
        );
    }
}
