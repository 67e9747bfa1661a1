//! The process's resident memory, from `/proc/self/status` (Linux; `None` elsewhere).

/// `VmRSS`: resident memory now, in KiB.
#[must_use]
pub(crate) fn resident_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

/// `VmHWM`: the peak resident memory of the process so far, in KiB.
#[must_use]
pub(crate) fn peak_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// Resets `VmHWM` to the current resident memory (Linux ≥ 4.0: `5` written to
/// `/proc/self/clear_refs`), so a later [`peak_kib`] covers only what came after; `false`
/// when the kernel does not allow it (the peak then covers the whole process).
pub(crate) fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, field)
}

/// The `kB` value of `field` in a `/proc/<pid>/status` text.
fn parse_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_parse_and_absent_ones_are_none() {
        let status = "Name:\tdocket\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(20_480));
        assert_eq!(parse_kib(status, "VmRSS:"), Some(10_240));
        assert_eq!(parse_kib(status, "VmSwap:"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_is_at_least_the_current_resident_memory() {
        let (now, peak) = (resident_kib(), peak_kib());
        assert!(now.is_some() && peak.is_some());
        assert!(peak >= now);
    }
}
