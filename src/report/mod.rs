//! Presenting results: human units and the terminal table. Reports never
//! re-measure; they only read run documents.

pub mod charts;
pub mod comparison;
pub mod csv;
pub mod html;
pub mod markdown;
pub mod table;
pub mod units;
