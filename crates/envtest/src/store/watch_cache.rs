//! How far back a watch of one resource can start, as kube-apiserver's
//! watch cache (`pkg/storage/cacher/watch_cache.go`, v1.32) decides it: each
//! resource keeps its own ring of recent changes, 100 to begin with; a full
//! ring doubles (up to 102,400) while its oldest change is less than 75 s
//! old, halves (down to 100) when even the change three quarters along is
//! older than that, and otherwise drops its oldest change. Once a change has
//! been dropped, a watch from before the oldest kept one gets 410 `too old
//! resource version`, however large the server's own history is.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::ResKey;

/// `eventFreshDuration`: how long a change is worth keeping.
const FRESH_FOR: Duration = Duration::from_secs(75);
/// `defaultLowerBoundCapacity` and `defaultUpperBoundCapacity`.
const LOWER_BOUND: usize = 100;
const UPPER_BOUND: usize = 100 * 1024;

/// The changes of one resource the watch cache holds: (resourceVersion,
/// when it was recorded).
#[derive(Debug)]
struct Ring {
    capacity: usize,
    events: VecDeque<(u64, Instant)>,
    /// Whether a change was ever dropped (before that, every change since
    /// the server started can be replayed).
    dropped: bool,
}

impl Default for Ring {
    fn default() -> Ring {
        Ring {
            capacity: LOWER_BOUND,
            events: VecDeque::with_capacity(LOWER_BOUND),
            dropped: false,
        }
    }
}

impl Ring {
    fn is_full(&self) -> bool {
        self.events.len() >= self.capacity
    }

    /// `resizeCacheLocked`, then `updateCache`'s eviction and append.
    fn record(&mut self, rv: u64, now: Instant) {
        self.resize(now);
        if self.is_full() {
            self.events.pop_front();
            self.dropped = true;
        }
        self.events.push_back((rv, now));
    }

    fn resize(&mut self, now: Instant) {
        if !self.is_full() {
            return;
        }
        let age = |i: usize| {
            self.events
                .get(i)
                .map_or(Duration::ZERO, |(_, at)| now.saturating_duration_since(*at))
        };
        if age(0) < FRESH_FOR {
            self.capacity = (self.capacity * 2).min(UPPER_BOUND);
            return;
        }
        let three_quarters = self.events.len() - self.capacity / 4;
        if age(three_quarters) > FRESH_FOR {
            let capacity = (self.capacity / 2).max(LOWER_BOUND);
            while self.events.len() > capacity {
                self.events.pop_front();
                self.dropped = true;
            }
            self.capacity = capacity;
        }
    }

    /// The oldest resourceVersion a watch may start from, once changes were
    /// dropped: one before the oldest kept change.
    fn floor(&self) -> Option<u64> {
        if !self.dropped {
            return None;
        }
        self.events.front().map(|(rv, _)| rv.saturating_sub(1))
    }
}

/// The watch caches of every resource.
#[derive(Debug, Default)]
pub(super) struct WatchCaches {
    rings: HashMap<ResKey, Ring>,
}

impl WatchCaches {
    pub(super) fn record(&mut self, res: &ResKey, rv: u64, now: Instant) {
        self.rings.entry(res.clone()).or_default().record(rv, now);
    }

    /// The oldest resourceVersion a watch of `res` may start from, if its
    /// cache has dropped changes.
    pub(super) fn floor(&self, res: &ResKey) -> Option<u64> {
        self.rings.get(res).and_then(Ring::floor)
    }

    /// Makes every recorded change `by` older (tests of the time rules).
    #[cfg(test)]
    pub(super) fn age(&mut self, by: Duration) {
        for ring in self.rings.values_mut() {
            for (_, at) in ring.events.iter_mut() {
                *at = at.checked_sub(by).unwrap_or(*at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_of_fresh_changes_grows_instead_of_dropping() {
        let now = Instant::now();
        let mut ring = Ring::default();
        for rv in 1..=250 {
            ring.record(rv, now);
        }
        assert_eq!(ring.capacity, 400);
        assert_eq!(ring.floor(), None, "nothing dropped");
    }

    #[test]
    fn a_ring_of_old_changes_drops_the_oldest_then_shrinks() {
        let start = Instant::now();
        let later = start + FRESH_FOR + Duration::from_secs(1);
        let mut ring = Ring::default();
        for rv in 1..=100 {
            ring.record(rv, start);
        }
        // Full, and its oldest change is stale: the 101st pushes the first out
        // (capacity 100 is the lower bound, so it does not shrink).
        ring.record(101, later);
        assert_eq!(ring.capacity, 100);
        assert_eq!(ring.floor(), Some(1));
        // Grown to 200 by fresh changes, then everything goes stale: halved.
        let mut ring = Ring::default();
        for rv in 1..=150 {
            ring.record(rv, start);
        }
        assert_eq!(ring.capacity, 200);
        for rv in 151..=200 {
            ring.record(rv, start);
        }
        ring.record(201, later);
        assert_eq!(ring.capacity, 100);
        assert_eq!(ring.events.len(), 100);
        assert_eq!(ring.floor(), Some(101));
    }
}
