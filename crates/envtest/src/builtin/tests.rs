//! Transcript-driven tests (filled in below).
