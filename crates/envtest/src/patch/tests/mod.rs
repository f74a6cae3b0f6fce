//! Tests of the patch module against the recorded transcripts.

mod kinds;
mod patches;
mod replay;
mod transcripts;
