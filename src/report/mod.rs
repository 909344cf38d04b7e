//! Presenting results: human units and the terminal table. Reports never
//! re-measure; they only read run documents.

pub mod table;
pub mod units;
