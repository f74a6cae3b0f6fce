//! Tests of the patch module against the recorded transcripts.

mod kinds;
mod ownership;
mod patches;
mod props;
mod replay;
mod transcripts;
