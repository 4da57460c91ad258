//! Laying out canonical nodes in a pipeline: the generator must run node after node on one
//! thread, but once a node's draws are made its sort (most of py1e's time) depends on nothing
//! else, so it runs on the plan's thread pool while the next node is drawn.

use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::sort::sort_by_position;
use crate::batching::pool;
use crate::shuffle::Parts;
use crate::Result;

/// One node after its draws.
pub(super) enum Laid {
    /// Its part as it stands (`None`: not wanted).
    Done(Option<Vec<i64>>),
    /// Its samples and their jittered positions, still to be sorted.
    Sort(Vec<i64>, Vec<f64>),
}

/// `draw(0..count)` in order on this thread, each node's sort on the pool. At most as many
/// nodes as the pool has threads are drawn and not yet sorted, so memory stays that many
/// nodes' worth (a node of 12.5M samples takes about 600 MB while it is sorted).
pub(super) fn lay_out(
    count: usize,
    mut draw: impl FnMut(usize) -> Result<Laid> + Send,
) -> Result<Parts> {
    let parts: Vec<Mutex<Option<Vec<i64>>>> = (0..count).map(|_| Mutex::new(None)).collect();
    pool::install(|| {
        rayon::scope(|scope| -> Result<()> {
            let slots = rayon::current_num_threads().max(1);
            let (give, take) = sync_channel::<()>(slots);
            for _ in 0..slots {
                give.send(())
                    .expect("the channel holds one token per thread");
            }
            for (node, part) in parts.iter().enumerate() {
                wait_for_token(&take);
                match draw(node)? {
                    Laid::Done(done) => {
                        *part.lock().unwrap_or_else(PoisonError::into_inner) = done;
                        give.send(())
                            .expect("the receiver lives until the scope ends");
                    }
                    Laid::Sort(samples, positions) => {
                        let give = give.clone();
                        scope.spawn(move |_| {
                            let sorted = sort_by_position(&samples, &positions);
                            drop((samples, positions));
                            *part.lock().unwrap_or_else(PoisonError::into_inner) = Some(sorted);
                            // The drawing thread may have returned early with an error.
                            let _ = give.send(());
                        });
                    }
                }
            }
            Ok(())
        })
    })?;
    Ok(parts
        .into_iter()
        .map(|part| part.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect())
}

/// Waits for a free slot, running queued sorts on this thread meanwhile when it is one of the
/// pool's (the only way forward on a pool of one thread).
fn wait_for_token(take: &Receiver<()>) {
    loop {
        match take.try_recv() {
            Ok(()) | Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) => {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
        }
    }
}
