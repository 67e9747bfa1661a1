//! `suite!` and the case table it expands from.
//!
//! The table is a `macro_rules!` list (families, then case names) so that a backend's test
//! crate can stamp out one `#[test]` per case at compile time; the same table builds
//! [`crate::cases()`] for [`crate::run_all`].

/// Stamps out one `#[test]` per conformance case, named `family__case`, inside `mod $name`.
///
/// ```
/// // In a backend's `tests/conformance.rs` (here: the reference memory store).
/// docket_conformance::suite!(memory, docket_conformance::memory::MemoryHarness);
/// ```
///
/// Each test builds its own multi-threaded tokio runtime (4 workers), opens a fresh store from
/// the harness expression (evaluated per test) and runs one case. Filter as usual:
/// `cargo test --test conformance -- claims__` or `-- --list`.
///
/// A case of a family that needs an ability the harness does not declare (the operation
/// registry families without [`crate::Capabilities::ops_registry`]) passes without running
/// and prints `SKIPPED family__case: <why>` to stderr.
#[macro_export]
macro_rules! suite {
    ($name:ident, $harness:expr $(,)?) => {
        #[allow(non_snake_case)]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::__case_table!(__stamp_tests!($harness));
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_tests {
    (($harness:expr) $($family:ident $(($need:ident))? { $($case:ident),* $(,)? })*) => {
        $($(
            $crate::__private::pastey::paste! {
                #[test]
                fn [<$family __ $case>]() {
                    $crate::__private::run_test(
                        &$harness,
                        &$crate::__private::infos::[<$family __ $case>],
                    );
                }
            }
        )*)*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __catalogue {
    (() $($family:ident $(($need:ident))? { $($case:ident),* $(,)? })*) => {
        /// What each family needs beyond the mandatory contract.
        #[allow(non_upper_case_globals)]
        pub mod needs {
            $(
                #[doc = concat!("The requirements of family `", stringify!($family), "`.")]
                pub const $family: &[$crate::harness::Requirement] =
                    &[$($crate::harness::Requirement::$need)?];
            )*
        }

        /// One entry per case (what the generated tests run).
        #[allow(non_upper_case_globals)]
        pub mod infos {
            $($(
                $crate::__private::pastey::paste! {
                    #[doc = concat!("The entry of `", stringify!($family), "__",
                                    stringify!($case), "`.")]
                    pub const [<$family __ $case>]: $crate::CaseInfo = $crate::CaseInfo {
                        family: stringify!($family),
                        name: stringify!($case),
                        run: super::shims::[<$family __ $case>],
                        needs: super::needs::$family,
                    };
                }
            )*)*
        }

        /// One type-erased entry point per case (what the generated tests call).
        #[allow(non_snake_case)]
        pub mod shims {
            $($(
                $crate::__private::pastey::paste! {
                    #[doc = concat!("Runs [`crate::cases::", stringify!($family), "::",
                                    stringify!($case), "`].")]
                    pub fn [<$family __ $case>]<'a>(
                        env: &'a $crate::Env<'_>,
                    ) -> $crate::__private::BoxFuture<'a, ()> {
                        ::std::boxed::Box::pin($crate::cases::$family::$case(env))
                    }
                }
            )*)*
        }

        /// Every case, in table order.
        pub static CASES: &[$crate::CaseInfo] = &[
            $($(
                $crate::__private::pastey::paste!(infos::[<$family __ $case>]),
            )*)*
        ];
    };
}
