//! CronJob schedules as `robfig/cron/v3`'s `ParseStandard` reads them, with
//! its error messages.

const MONTHS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const FIELDS: [Bounds; 5] = [
    Bounds {
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 12,
        names: MONTHS,
    },
    Bounds {
        min: 0,
        max: 6,
        names: DAYS,
    },
];

fn must_parse_int(expr: &str) -> Result<u32, String> {
    let num: i64 = match expr.parse::<i64>() {
        Ok(n) if i32::try_from(n).is_ok() || n.unsigned_abs() < (1 << 62) => n,
        Ok(_) => {
            return Err(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
            ));
        }
        Err(_) => {
            let reason = if expr
                .trim_start_matches(['-', '+'])
                .chars()
                .all(|c| c.is_ascii_digit())
                && !expr.trim_start_matches(['-', '+']).is_empty()
            {
                "value out of range"
            } else {
                "invalid syntax"
            };
            return Err(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: {reason}"
            ));
        }
    };
    if num < 0 {
        return Err(format!("negative number ({num}) not allowed: {expr}"));
    }
    u32::try_from(num).map_err(|_| format!("end of range ({num}) above maximum: {expr}"))
}

fn int_or_name(expr: &str, names: &[(&str, u32)]) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    if let Some((_, n)) = names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    must_parse_int(expr)
}

fn range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = int_or_name(low_and_high[0], bounds.names)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `cron.ParseStandard`: five fields or a descriptor.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec.trim();
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        spec = spec.split_once(' ').map_or("", |(_, rest)| rest.trim());
    }
    if spec.starts_with('@') {
        return match spec {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
            | "@hourly" => Ok(()),
            s if s.starts_with("@every ") => Ok(()),
            s => Err(format!("unrecognized descriptor: {s}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in fields.iter().zip(FIELDS.iter()) {
        for expr in field.split(',') {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        assert!(parse_standard("*/5 * * * *").is_ok());
        assert!(parse_standard("0 0 * jan-mar mon").is_ok());
        assert!(parse_standard("@hourly").is_ok());
        assert_eq!(
            parse_standard("* * *").unwrap_err(),
            "expected exactly 5 fields, found 3: [* * *]"
        );
        assert_eq!(
            parse_standard("61 * * * *").unwrap_err(),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            parse_standard("x * * * *").unwrap_err(),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
    }
}
