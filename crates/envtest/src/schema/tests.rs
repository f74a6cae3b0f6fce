//! Replays of the recorded custom-resource and CRD steps (transcripts 04,
//! 05, 08, 09, 14) against the schema module.
