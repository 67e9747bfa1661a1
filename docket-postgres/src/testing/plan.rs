//! Judging the claim statement's plan (`EXPLAIN` text), shared by `tests/plan.rs` and the
//! `pg_checks plan` check behind `cargo xtask pg-plan`.

/// The partial indexes the claim statement must read, one per candidate class.
pub const CLAIM_INDEXES: [&str; 2] = ["runs_ready_index", "runs_expired_index"];

/// What is wrong with a claim plan: a sequential scan of the runs table, a partial index it
/// does not use, or an index scan that no `Limit` bounds (which would read — and lock — every
/// due row before the update instead of at most `limit` per class).
///
/// The expired-claim scan may reach its `Limit` through a `Sort` (schema version 10): its
/// index is keyed on `claim_started_at`, a lower bound of `claimed_at`, so the range it reads
/// (claims taken more than a TTL ago) is sorted by `claimed_at` before the limit; the rows
/// are still locked only above the sort, at most `limit` of them.
#[must_use]
pub fn claim_plan_problems(plan: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if plan.contains("Seq Scan on runs") {
        problems.push("it scans the runs table sequentially".to_owned());
    }
    for index in CLAIM_INDEXES {
        if !plan.contains(index) {
            problems.push(format!("it does not use {index}"));
        } else if !scan_is_limited(plan, index, index == "runs_expired_index") {
            problems.push(format!("no Limit bounds its scan of {index}"));
        }
    }
    problems
}

/// Whether the first `Index Scan using {index}` node has a `Limit` ancestor reached through
/// `LockRows` only (and a `Sort` when `sorted` allows one). In `EXPLAIN` text a node's parent
/// is the nearest line above it that is indented less; detail lines (`Index Cond:`,
/// `Filter:`) and siblings' subtrees are indented at least as deep, so they are passed over.
fn scan_is_limited(plan: &str, index: &str, sorted: bool) -> bool {
    let lines: Vec<&str> = plan.lines().collect();
    let needle = format!("Index Scan using {index}");
    let Some(at) = lines.iter().position(|line| line.contains(&needle)) else {
        return false;
    };
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut depth = indent(lines[at]);
    for line in lines[..at].iter().rev() {
        let here = indent(line);
        if here >= depth {
            continue;
        }
        depth = here;
        let node = line.trim_start().trim_start_matches("->").trim_start();
        if node.starts_with("Limit") {
            return true;
        }
        if !(node.starts_with("LockRows") || sorted && node.starts_with("Sort")) {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITED: &str = "Update on runs r
  CTE ready
    ->  Limit  (cost=0.42..5.08 rows=10 width=38)
          ->  LockRows  (cost=0.42..18960.69 rows=40670 width=38)
                ->  Index Scan using runs_ready_index on runs  (cost=0.42..18553.99 rows=40670 width=38)
                      Index Cond: (wake_at <= 1)
  CTE expired
    ->  Limit  (cost=0.28..18.98 rows=7 width=38)
          ->  LockRows  (cost=0.28..18.98 rows=7 width=38)
                ->  Index Scan using runs_expired_index on runs runs_1  (cost=0.28..18.91 rows=7 width=38)
                      Index Cond: (claim_started_at < 1)";

    #[test]
    fn a_plan_with_both_scans_under_a_limit_has_no_problems() {
        assert_eq!(claim_plan_problems(LIMITED), Vec::<String>::new());
    }

    #[test]
    fn only_the_expired_claim_scan_may_reach_its_limit_through_a_sort() {
        let sorted = |scan: &str| {
            let head = format!("->  Index Scan using {scan}");
            let at = LIMITED.find(&head).expect("the scan");
            let indent = LIMITED[..at].rsplit('\n').next().expect("a line").len();
            let pad = " ".repeat(indent);
            LIMITED.replacen(
                &format!("{pad}{head}"),
                &format!("{pad}->  Sort  (cost=1.00..1.01 rows=7 width=38)\n      {pad}{head}"),
                1,
            )
        };
        assert_eq!(
            claim_plan_problems(&sorted("runs_expired_index")),
            Vec::<String>::new()
        );
        assert_eq!(
            claim_plan_problems(&sorted("runs_ready_index")),
            ["no Limit bounds its scan of runs_ready_index"]
        );
    }

    #[test]
    fn a_scan_without_a_limit_above_it_is_reported() {
        let unlimited = LIMITED.replacen(
            "->  Limit  (cost=0.42..5.08",
            "->  Sort  (cost=0.42..5.08",
            1,
        );
        assert_eq!(
            claim_plan_problems(&unlimited),
            ["no Limit bounds its scan of runs_ready_index"]
        );
    }

    #[test]
    fn a_limit_elsewhere_in_the_plan_does_not_count() {
        // The scan's own parent chain ends at the CTE without a Limit; a Limit in another
        // subtree (here the expired CTE's) must not be mistaken for it.
        let unlimited = LIMITED.replacen(
            "    ->  Limit  (cost=0.42..5.08 rows=10 width=38)\n",
            "    ->  Materialize  (cost=0.42..5.08 rows=10 width=38)\n",
            1,
        );
        assert_eq!(
            claim_plan_problems(&unlimited),
            ["no Limit bounds its scan of runs_ready_index"]
        );
    }

    #[test]
    fn a_sequential_scan_and_a_missing_index_are_reported() {
        let seq = "Update on runs r\n  ->  Seq Scan on runs  (cost=0.00..1.00 rows=1 width=1)";
        assert_eq!(
            claim_plan_problems(seq),
            [
                "it scans the runs table sequentially",
                "it does not use runs_ready_index",
                "it does not use runs_expired_index"
            ]
        );
    }
}
