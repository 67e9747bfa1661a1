//! The case catalogue generated from the table in `table.rs`.

crate::__case_table!(__catalogue!());
