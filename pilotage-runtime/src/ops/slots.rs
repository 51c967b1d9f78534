//! The server's engine slots, shared fairly: the cap on concurrent engine calls
//! (`ServerBuilder::max_engine_calls`), of which one caller holds at most a share, plus a lane
//! reserved for catalog look-ups, so that no caller can take every slot while others wait and
//! no flood of runs can starve learning and look-up (issue 28).
//!
//! A call first takes a place in its caller's share, then a slot of its lane: a caller past its
//! share waits behind its own calls and never holds a slot it cannot use, and the slots go to
//! the waiting callers in the order they asked (tokio's semaphores are fair). A look-up takes a
//! free engine slot when there is one, else waits in its own lane. Shares are kept only while a
//! caller has a call holding or waiting for one, so the table is bounded by the calls in
//! flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Which slots a call uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneKind {
    /// Validations, runs, plain tools, and the catalog snapshots they take.
    Engine,
    /// Catalog look-ups (`pilotage_catalog`): a free engine slot, else the reserved lane.
    Lookup,
}

/// Why a call got no slot before its wait bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// The caller's own calls held its whole share.
    Share { share: usize, slots: usize },
    /// Every slot of the lane stayed busy.
    Server { slots: usize },
}

/// The engine slots of one server.
pub(crate) struct Slots {
    engine: Arc<Pool>,
    lookup: Arc<Pool>,
}

impl Slots {
    /// `max` engine slots, of which one caller holds at most `share` (at least 1, at most
    /// `max`), and a look-up lane of a quarter of `max` (at least 2).
    pub fn new(max: usize, share: usize) -> Slots {
        let max = max.max(1);
        let lookups = (max / 4).max(2);
        Slots { engine: Pool::new(max, share.clamp(1, max)), lookup: Pool::new(lookups, lookups.div_ceil(2)) }
    }

    /// The default share of `max` slots: half of them (rounded up), so one caller never holds
    /// every slot of a server with two or more.
    pub fn default_share(max: usize) -> usize {
        max.max(1).div_ceil(2)
    }

    /// A slot of lane `kind` for `caller`, waited for until `until`.
    pub async fn take(&self, kind: LaneKind, caller: &str, until: Instant) -> Result<Held, Full> {
        match kind {
            LaneKind::Engine => self.engine.take(caller, until).await,
            LaneKind::Lookup => match self.engine.try_take(caller) {
                Some(held) => Ok(held),
                None => self.lookup.take(caller, until).await,
            },
        }
    }
}

/// The slots of one lane and the share each caller holds of them.
struct Pool {
    slots: Arc<Semaphore>,
    size: usize,
    share: usize,
    /// The share of each caller with a call holding or waiting for a slot.
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Pool {
    fn new(size: usize, share: usize) -> Arc<Pool> {
        Arc::new(Pool { slots: Arc::new(Semaphore::new(size)), size, share, callers: Mutex::default() })
    }

    /// `caller`'s share, made when it has none.
    fn share_of(&self, caller: &str) -> Arc<Semaphore> {
        let mut callers = self.callers.lock().unwrap_or_else(|p| p.into_inner());
        callers.entry(caller.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.share))).clone()
    }

    /// Forget `caller`'s share once no call holds or waits for it.
    fn forget(&self, caller: &str) {
        let mut callers = self.callers.lock().unwrap_or_else(|p| p.into_inner());
        if callers.get(caller).is_some_and(|s| Arc::strong_count(s) == 1) {
            callers.remove(caller);
        }
    }

    /// A slot now, if the caller's share and the lane both have one free.
    fn try_take(self: &Arc<Self>, caller: &str) -> Option<Held> {
        let share = self.share_of(caller);
        let taken = share.try_acquire_owned().ok().and_then(|own| {
            let slot = self.slots.clone().try_acquire_owned().ok()?;
            Some(Held::new(self, caller, own, slot))
        });
        if taken.is_none() {
            self.forget(caller);
        }
        taken
    }

    async fn take(self: &Arc<Self>, caller: &str, until: Instant) -> Result<Held, Full> {
        let taken = self.wait_for(self.share_of(caller), until).await;
        match taken {
            Ok((own, slot)) => Ok(Held::new(self, caller, own, slot)),
            // Every handle on the share is gone by now, so an unused one is forgotten.
            Err(full) => {
                self.forget(caller);
                Err(full)
            }
        }
    }

    /// A place in `share`, then a slot, each waited for until `until`.
    async fn wait_for(
        &self,
        share: Arc<Semaphore>,
        until: Instant,
    ) -> Result<(OwnedSemaphorePermit, OwnedSemaphorePermit), Full> {
        let own = match share.clone().try_acquire_owned() {
            Ok(own) => own,
            Err(_) => match tokio::time::timeout_at(until, share.acquire_owned()).await {
                Ok(Ok(own)) => own,
                // A share of every slot is the server's: its slots were all busy.
                _ if self.share >= self.size => return Err(Full::Server { slots: self.size }),
                _ => return Err(Full::Share { share: self.share, slots: self.size }),
            },
        };
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => match tokio::time::timeout_at(until, self.slots.clone().acquire_owned()).await {
                Ok(Ok(slot)) => slot,
                _ => return Err(Full::Server { slots: self.size }),
            },
        };
        Ok((own, slot))
    }
}

/// A slot and the place in its caller's share, given back when dropped.
pub(crate) struct Held {
    permits: Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)>,
    pool: Arc<Pool>,
    caller: String,
}

impl Held {
    fn new(pool: &Arc<Pool>, caller: &str, own: OwnedSemaphorePermit, slot: OwnedSemaphorePermit) -> Held {
        Held { permits: Some((own, slot)), pool: pool.clone(), caller: caller.to_owned() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.permits.take());
        self.pool.forget(&self.caller);
    }
}

impl Full {
    /// Why the call could not start after waiting `waited`, for its request error.
    pub fn why(&self, what: &str, waited: Duration) -> String {
        match self {
            Full::Share { share, slots } => format!(
                "{what} could not start within its wait bound of {waited:?}: this caller's other calls held its \
                 share of the engine slots ({share} of {slots}) the whole time; retry later"
            ),
            Full::Server { slots } => format!(
                "{what} could not start within its wait bound of {waited:?}: every engine slot of this server \
                 stayed busy ({slots} in all); retry later"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use crate::ops::slots::{Full, LaneKind, Slots};

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(50)
    }

    #[tokio::test]
    async fn one_caller_holds_at_most_its_share_and_another_still_gets_a_slot() {
        let slots = Slots::new(4, Slots::default_share(4));
        let a1 = slots.take(LaneKind::Engine, "a", soon()).await.unwrap();
        let a2 = slots.take(LaneKind::Engine, "a", soon()).await.unwrap();
        assert_eq!(
            slots.take(LaneKind::Engine, "a", soon()).await.err(),
            Some(Full::Share { share: 2, slots: 4 })
        );
        let b1 = slots.take(LaneKind::Engine, "b", soon()).await.unwrap();
        let b2 = slots.take(LaneKind::Engine, "b", soon()).await.unwrap();
        assert_eq!(slots.take(LaneKind::Engine, "c", soon()).await.err(), Some(Full::Server { slots: 4 }));
        // Look-ups still have their own lane: two of them, one per caller at a time.
        let l1 = slots.take(LaneKind::Lookup, "c", soon()).await.unwrap();
        assert!(slots.take(LaneKind::Lookup, "c", soon()).await.is_err());
        let l2 = slots.take(LaneKind::Lookup, "d", soon()).await.unwrap();
        assert!(slots.take(LaneKind::Lookup, "e", soon()).await.is_err());
        drop((a1, l1));
        let a3 = slots.take(LaneKind::Engine, "a", soon()).await.unwrap();
        drop((a2, a3, b1, b2, l2));
        // Every share is forgotten once nothing holds or waits for it.
        assert!(slots.engine.callers.lock().unwrap().is_empty());
        assert!(slots.lookup.callers.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_waiting_call_gets_the_slot_freed_before_its_bound() {
        let slots = std::sync::Arc::new(Slots::new(1, Slots::default_share(1)));
        let held = slots.take(LaneKind::Engine, "a", soon()).await.unwrap();
        let waiter = {
            let slots = slots.clone();
            tokio::spawn(async move {
                let until = Instant::now() + Duration::from_secs(5);
                slots.take(LaneKind::Engine, "b", until).await.is_ok()
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert!(waiter.await.unwrap());
        assert_eq!(Slots::default_share(1), 1);
        assert_eq!(Slots::default_share(2), 1);
        assert_eq!(Slots::default_share(3), 2);
        assert_eq!(Slots::default_share(8), 4);
    }
}
