//! Two AM engines of one process joined by an in-memory link, as two PEs on two hosts
//! are by the MPI conduit: the engine's link paths (requests and replies over a link,
//! records received in place, `quiet`'s flushes, the control words) without MPI.

use super::link::{HostLink, LinkPayload, LinkSink};
use super::{AmEngine, AmHeader, ControlOp, Wake};
use crate::segment::{JobSegments, Layout, Segment};
use crate::sync::WaitPolicy;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A record in flight.
type Record = (usize, AmHeader, Vec<u8>);

/// The link of a two-PE job: one queue per (destination, channel). Records of
/// `PLACE_FROM` bytes or more are handed over in two parts, as MPI's large records
/// are, so that the sinks' `place` is exercised.
struct LoopLink {
    me: usize,
    queues: Arc<[Mutex<VecDeque<Record>>; 4]>,
}

const PLACE_FROM: usize = 4096;

fn queue(to: usize, reply: bool) -> usize {
    to * 2 + usize::from(reply)
}

impl HostLink for LoopLink {
    fn send(&self, to: usize, reply: bool, header: &AmHeader, payload: LinkPayload) {
        // SAFETY: the payload is readable for its length until `send` returns (the
        // trait's contract); it is copied here.
        let bytes = unsafe { std::slice::from_raw_parts(payload.ptr(), payload.len()) }.to_vec();
        self.queues[queue(to, reply)]
            .lock()
            .unwrap()
            .push_back((self.me, *header, bytes));
    }

    fn poll(&self, reply: bool, sink: &mut dyn LinkSink) -> bool {
        let mut any = false;
        loop {
            let next = self.queues[queue(self.me, reply)]
                .lock()
                .unwrap()
                .pop_front();
            let Some((src, header, bytes)) = next else {
                return any;
            };
            any = true;
            match bytes.len() >= PLACE_FROM {
                true => match sink.place(src, &header) {
                    Some(at) => {
                        // SAFETY: a sink's place has room for the header's payload
                        // length, which is `bytes.len()` (this link set both).
                        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len()) };
                        sink.deliver(src, &header, None);
                    }
                    None => sink.deliver(src, &header, Some(&bytes)),
                },
                false => sink.deliver(src, &header, Some(&bytes)),
            }
        }
    }

    fn has_incoming(&self) -> bool {
        !self.queues[queue(self.me, false)]
            .lock()
            .unwrap()
            .is_empty()
            || !self.queues[queue(self.me, true)].lock().unwrap().is_empty()
    }

    fn settle(&self) {}
}

/// Two engines, PE 0 and PE 1, each seeing only its own segment, with their
/// progress threads running until the value is dropped.
struct TwoHosts([Arc<AmEngine>; 2]);

impl Drop for TwoHosts {
    fn drop(&mut self) {
        for engine in &self.0 {
            engine.stop();
        }
    }
}

fn two_hosts() -> TwoHosts {
    let layout = Layout::new(2, 1 << 16, 1 << 20, 0).unwrap();
    let queues = Arc::new([(); 4].map(|_| Mutex::new(VecDeque::new())));
    TwoHosts([0usize, 1].map(|me| {
        let seg = Segment::anonymous(me as u32, layout).unwrap();
        let mut segs = vec![None, None];
        segs[me] = Some(seg);
        let segs = Arc::new(JobSegments::new(me, segs, None).unwrap());
        let link: Arc<dyn HostLink> = Arc::new(LoopLink {
            me,
            queues: queues.clone(),
        });
        let policy = WaitPolicy::for_host(2);
        let engine = Arc::new(AmEngine::new(segs, policy, Some(link)).unwrap());
        // Stopped by `TwoHosts`'s drop; never joined (a test ends soon after).
        let _ = engine.start().unwrap();
        engine
    }))
}

#[test]
fn puts_gets_and_flushes_cross_the_link_in_order() {
    let hosts = two_hosts();
    let a = &hosts.0[0];
    // Puts of every size class (inline and placed), each overwriting the last, then a
    // quiet: the target holds the last put's bytes, which a get (small and placed)
    // brings back.
    let pattern =
        |i: usize, len: usize| -> Vec<u8> { (0..len).map(|k| (k * 31 + i * 7) as u8).collect() };
    for (i, len) in [8usize, 100, 4096, 70_000, 5000, 8].into_iter().enumerate() {
        a.put(1, 128, &pattern(i, len));
    }
    a.quiet().unwrap();
    let mut back = vec![0u8; 70_000];
    a.get(1, 128, &mut back).unwrap();
    // The last put wrote 8 bytes over the 70 000 of the one before it.
    let mut want = pattern(3, 70_000);
    want[..5000].copy_from_slice(&pattern(4, 5000));
    want[..8].copy_from_slice(&pattern(5, 8));
    assert_eq!(back, want);
    // A get past the heap's end is an error reply, not a hang.
    let mut tail = vec![0u8; 64];
    let err = a.get(1, (1 << 20) - 32, &mut tail).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
}

#[test]
fn control_words_cross_the_link() {
    let hosts = two_hosts();
    let [a, b] = &hosts.0;
    // PE 0 adds to and raises words of PE 1's team slot 3; PE 1 sees them in its own
    // block once PE 0's quiet has covered the posts.
    a.control_word(1, |c| &c.teams[3].arrivals)
        .post(ControlOp::Add, 5, Wake::User);
    a.control_word(1, |c| &c.teams[3].rounds[2])
        .post(ControlOp::Max, 9, Wake::Team(3));
    a.control_word(1, |c| &c.teams[3].rounds[2])
        .post(ControlOp::Max, 4, Wake::Team(3));
    a.quiet().unwrap();
    let own = b.segs.mine().control();
    assert_eq!(
        own.teams[3]
            .arrivals
            .load(std::sync::atomic::Ordering::Acquire),
        5
    );
    assert_eq!(
        own.teams[3].rounds[2].load(std::sync::atomic::Ordering::Acquire),
        9
    );
    // Loads and reads go the other way too.
    own.coll[1].words[2].store(77, std::sync::atomic::Ordering::Release);
    assert_eq!(
        a.control_word(1, |c| &c.teams[3].arrivals).load().unwrap(),
        5
    );
    let words = a.control_words(1, |c| &c.coll[1].words[..]).unwrap();
    assert_eq!(words, vec![0, 0, 77, 0, 0, 0]);
}

#[test]
fn a_control_record_for_a_futex_word_is_refused() {
    let hosts = two_hosts();
    let a = &hosts.0[0];
    // A forged offset (the user signal's futex word) is refused by the owner and
    // reported by the sender's next quiet, not applied.
    let control = a.segs.mine().control();
    let signal = &control.user_signal as *const _ as usize - control as *const _ as usize;
    a.post(
        1,
        super::H_CONTROL,
        [ControlOp::Store as u64, signal as u64, 1, 0],
        &[],
    );
    let err = a.quiet().unwrap_err();
    assert!(
        err.to_string().contains("not a word other PEs may use"),
        "{err}"
    );
}

#[test]
fn many_threads_put_and_quiet_across_the_link() {
    // Stress: four threads of PE 0 each put their own counter to PE 1 and quiet
    // after each; a quiet that returned before its put was applied would let a get
    // read an older value.
    let hosts = two_hosts();
    let a = &hosts.0[0];
    std::thread::scope(|s| {
        for t in 0..4usize {
            s.spawn(move || {
                for i in 1..=200u64 {
                    a.put(1, t * 64, &i.to_le_bytes());
                    a.quiet().unwrap();
                    let mut back = [0u8; 8];
                    a.get(1, t * 64, &mut back).unwrap();
                    assert_eq!(u64::from_le_bytes(back), i, "thread {t}");
                }
            });
        }
    });
    a.quiet().unwrap();
}
