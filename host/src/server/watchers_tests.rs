//! The watchers against a fake upstream whose calls can be held mid-way (to order two clients'
//! changes of one URI by events) and clients that take their updates when the test lets them.

use std::collections::{BTreeSet, VecDeque};
use std::pin::pin;
use std::sync::{Arc, Mutex};

use codemode_policies::Caller;
use codemode_upstream::resources::UpstreamRequestError;
use futures::future::BoxFuture;
use futures::poll;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::super::delivery::{Listener, Mailbox, Posted};
use super::{
    Judge, MAX_WATCHES, ResourceWatchers, SharedUpstreams, UpstreamSubscriptions, WatchError,
};

const ORIGINAL: &str = "demo://resource/1";
const MAPPED: &str = "codemode://srv/demo://resource/1";

type Reply = Result<(), UpstreamRequestError>;

/// A call of the fake upstream held until the test releases it.
struct Held {
    entered: oneshot::Receiver<()>,
    release: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Fake {
    servers: BTreeSet<String>,
    /// What the upstream holds subscribed now.
    subscribed: BTreeSet<String>,
    calls: Vec<String>,
    held_subscribes: VecDeque<(oneshot::Sender<()>, oneshot::Receiver<Reply>)>,
    held_unsubscribes: VecDeque<(oneshot::Sender<()>, oneshot::Receiver<Reply>)>,
}

/// An upstream that subscribes at once, unless told to hold its next call.
#[derive(Default)]
struct FakeUpstream(Mutex<Fake>);

impl FakeUpstream {
    fn with_servers(servers: &[&str]) -> Self {
        let fake = FakeUpstream::default();
        fake.lock().servers = servers.iter().map(|s| s.to_string()).collect();
        fake
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Fake> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn hold(queue: &mut VecDeque<(oneshot::Sender<()>, oneshot::Receiver<Reply>)>) -> Held {
        let (entered_tx, entered) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        queue.push_back((entered_tx, release_rx));
        Held { entered, release }
    }

    fn hold_next_subscribe(&self) -> Held {
        Self::hold(&mut self.lock().held_subscribes)
    }

    fn hold_next_unsubscribe(&self) -> Held {
        Self::hold(&mut self.lock().held_unsubscribes)
    }

    fn subscribed(&self) -> BTreeSet<String> {
        self.lock().subscribed.clone()
    }

    fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    /// Waits for the test's word when the call is held; the reply otherwise `Ok`.
    async fn reply(held: Option<(oneshot::Sender<()>, oneshot::Receiver<Reply>)>) -> Reply {
        let Some((entered, release)) = held else {
            return Ok(());
        };
        let _ = entered.send(());
        release
            .await
            .unwrap_or_else(|_| Err(UpstreamRequestError::Failed("released unanswered".into())))
    }
}

impl UpstreamSubscriptions for FakeUpstream {
    fn subscribe<'a>(&'a self, server: &'a str, uri: &'a str) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let held = {
                let mut fake = self.lock();
                fake.calls.push(format!("subscribe {server} {uri}"));
                fake.held_subscribes.pop_front()
            };
            let reply = Self::reply(held).await;
            if reply.is_ok() {
                self.lock().subscribed.insert(uri.to_string());
            }
            reply
        })
    }

    fn unsubscribe<'a>(&'a self, server: &'a str, uri: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let held = {
                let mut fake = self.lock();
                fake.calls.push(format!("unsubscribe {server} {uri}"));
                fake.held_unsubscribes.pop_front()
            };
            let _ = Self::reply(held).await;
            self.lock().subscribed.remove(uri);
        })
    }

    fn has_server(&self, server: &str) -> bool {
        self.lock().servers.contains(server)
    }
}

/// A client that takes an update only when the test gives it a permit, and says what it heard.
struct TestListener {
    permits: Semaphore,
    heard: mpsc::UnboundedSender<String>,
}

impl TestListener {
    fn new(permits: usize) -> (Arc<Self>, mpsc::UnboundedReceiver<String>) {
        let (heard, rx) = mpsc::unbounded_channel();
        let permits = Semaphore::new(permits);
        (Arc::new(TestListener { permits, heard }), rx)
    }
}

impl Listener for TestListener {
    fn notify<'a>(&'a self, mapped: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Ok(permit) = self.permits.acquire().await else {
                return false;
            };
            permit.forget();
            self.heard.send(mapped.to_string()).is_ok()
        })
    }
}

/// The fake upstream with `servers`, and the same as the watchers hold it.
fn fake(servers: &[&str]) -> (Arc<FakeUpstream>, SharedUpstreams) {
    let up = Arc::new(FakeUpstream::with_servers(servers));
    (up.clone(), up)
}

/// A config under which nobody may hear of any resource (a reload hid them).
struct HidesAll;

impl Judge for HidesAll {
    fn lets_resource(&self, _caller: &Caller, _name: &str) -> bool {
        false
    }
}

struct LetsAll;

impl Judge for LetsAll {
    fn lets_resource(&self, _caller: &Caller, _name: &str) -> bool {
        true
    }
}

fn watcher() -> (Arc<dyn Listener>, Caller) {
    (TestListener::new(usize::MAX >> 4).0, Caller::local())
}

fn set(uris: &[&str]) -> BTreeSet<String> {
    uris.iter().map(|u| u.to_string()).collect()
}

/// A second client waits while the first one's subscribe is under way; when it fails, the
/// second subscribes itself (before, it counted on the failing one and watched a URI nobody
/// held upstream).
#[tokio::test]
async fn a_new_watcher_is_subscribed_after_a_failing_first_subscribe() {
    let (up, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let held = up.hold_next_subscribe();
    let mut first = pin!(watchers.watch(&ups, MAPPED, "a", watcher()));
    assert!(poll!(&mut first).is_pending());
    held.entered
        .await
        .expect("the first subscribe reaches the upstream");
    let mut second = pin!(watchers.watch(&ups, MAPPED, "b", watcher()));
    assert!(
        poll!(&mut second).is_pending(),
        "the second waits for the first's subscribe"
    );
    let refused = UpstreamRequestError::Failed("refused".into());
    held.release.send(Err(refused)).expect("the call waits");
    assert!(matches!(first.await, Err(WatchError::Upstream(_))));
    assert!(second.await.is_ok());
    assert_eq!(up.subscribed(), set(&[ORIGINAL]));
    assert_eq!(
        (watchers.watch_count("a"), watchers.watch_count("b")),
        (0, 1)
    );
    let subscribe = format!("subscribe srv {ORIGINAL}");
    assert_eq!(up.calls(), [subscribe.clone(), subscribe]);
}

/// A client that watches a URI while the last one's unsubscribe is under way subscribes it
/// again after (before, the late unsubscribe undid the new subscription).
#[tokio::test]
async fn a_new_watcher_is_subscribed_after_a_last_unsubscribe() {
    let (up, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    assert!(watchers.watch(&ups, MAPPED, "a", watcher()).await.is_ok());
    let held = up.hold_next_unsubscribe();
    let mut leaving = pin!(watchers.forget(&ups, MAPPED, "a"));
    assert!(poll!(&mut leaving).is_pending());
    held.entered
        .await
        .expect("the unsubscribe reaches the upstream");
    let mut joining = pin!(watchers.watch(&ups, MAPPED, "b", watcher()));
    assert!(
        poll!(&mut joining).is_pending(),
        "the new watcher waits for the unsubscribe"
    );
    held.release.send(Ok(())).expect("the call waits");
    assert!(leaving.await);
    assert!(joining.await.is_ok());
    assert_eq!(up.subscribed(), set(&[ORIGINAL]));
    assert_eq!(
        up.calls(),
        [
            format!("subscribe srv {ORIGINAL}"),
            format!("unsubscribe srv {ORIGINAL}"),
            format!("subscribe srv {ORIGINAL}"),
        ]
    );
}

/// Each client's count is its own: one at the cap is refused, another is not, and a watch let
/// go (one, or all of a client's) frees its place.
#[tokio::test]
async fn each_client_counts_its_own_watches_up_to_the_cap() {
    let (up, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let uri = |i: usize| format!("codemode://srv/demo://cap/{i}");
    for i in 0..MAX_WATCHES {
        assert!(watchers.watch(&ups, &uri(i), "a", watcher()).await.is_ok());
    }
    let past = watchers
        .watch(&ups, &uri(MAX_WATCHES), "a", watcher())
        .await;
    assert!(matches!(past, Err(WatchError::TooMany)), "{past:?}");
    assert!(watchers.watch(&ups, &uri(0), "a", watcher()).await.is_ok());
    assert!(watchers.watch(&ups, &uri(0), "b", watcher()).await.is_ok());
    assert!(watchers.forget(&ups, &uri(1), "a").await);
    assert!(!watchers.forget(&ups, &uri(1), "a").await);
    assert!(
        watchers
            .watch(&ups, &uri(MAX_WATCHES), "a", watcher())
            .await
            .is_ok()
    );
    assert_eq!(watchers.watch_count("a"), MAX_WATCHES);
    watchers.forget_client(&ups, "a").await;
    assert_eq!(
        (watchers.watch_count("a"), watchers.watch_count("b")),
        (0, 1)
    );
    assert_eq!(up.subscribed(), set(&["demo://cap/0"]));
}

/// A reload that removes a server drops its watches without a word upstream (the server is
/// gone); the same URI watched once the server is back is subscribed again.
#[tokio::test]
async fn a_reload_that_removes_a_server_drops_its_watchers() {
    let (up, ups) = fake(&["srv", "kept"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let kept = "codemode://kept/demo://resource/1";
    assert!(watchers.watch(&ups, MAPPED, "a", watcher()).await.is_ok());
    assert!(watchers.watch(&ups, kept, "a", watcher()).await.is_ok());
    up.lock().servers.remove("srv");
    assert_eq!(watchers.drop_removed(up.as_ref()).await, 1);
    assert_eq!(watchers.watch_count("a"), 1);
    assert!(!up.calls().iter().any(|c| c.starts_with("unsubscribe")));
    up.lock().servers.insert("srv".into());
    assert!(watchers.watch(&ups, MAPPED, "b", watcher()).await.is_ok());
    assert_eq!(
        up.calls().last().map(String::as_str),
        Some(format!("subscribe srv {ORIGINAL}").as_str())
    );
}

/// An update reaches a client that takes it while another client takes none: passing it on
/// waits for nobody (before, each client's send was awaited in turn).
#[tokio::test]
async fn a_slow_client_delays_no_other_clients_updates() {
    let (_, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let (slow, mut slow_heard) = TestListener::new(0);
    let (fast, mut fast_heard) = TestListener::new(8);
    let caller = Caller::local();
    let slow_watch = (slow.clone() as Arc<dyn Listener>, caller.clone());
    assert!(
        watchers
            .watch(&ups, MAPPED, "slow", slow_watch)
            .await
            .is_ok()
    );
    let fast_watch = (fast as Arc<dyn Listener>, caller);
    assert!(
        watchers
            .watch(&ups, MAPPED, "fast", fast_watch)
            .await
            .is_ok()
    );
    for _ in 0..2 {
        let passed = poll!(pin!(watchers.updated(&ups, &LetsAll, ("srv", ORIGINAL))));
        assert!(
            passed.is_ready(),
            "passing an update on waits for no client"
        );
        assert_eq!(fast_heard.recv().await.as_deref(), Some(MAPPED));
    }
    assert!(slow_heard.try_recv().is_err());
    slow.permits.add_permits(2);
    assert_eq!(slow_heard.recv().await.as_deref(), Some(MAPPED));
    assert_eq!(slow_heard.recv().await.as_deref(), Some(MAPPED));
}

/// A mailbox keeps each URI once: an update of a URI already waiting is merged with it, one of
/// a URI being sent (taken out) waits again.
#[tokio::test]
async fn a_mailbox_merges_an_update_of_a_uri_already_waiting() {
    let mailbox = Mailbox::default();
    assert_eq!(mailbox.post("s1", "u1"), Posted::Queued);
    assert_eq!(mailbox.post("s1", "u1"), Posted::Merged);
    assert_eq!(mailbox.post("s1", "u2"), Posted::Queued);
    assert_eq!(mailbox.next().await.as_deref(), Some("u1"));
    assert_eq!(mailbox.post("s1", "u1"), Posted::Queued);
    assert_eq!(mailbox.next().await.as_deref(), Some("u2"));
    assert_eq!(mailbox.next().await.as_deref(), Some("u1"));
    mailbox.close();
    assert_eq!(mailbox.post("s1", "u1"), Posted::Dropped);
    assert_eq!(mailbox.next().await, None);
}

/// A subscribe whose request is dropped while the upstream's subscribe is under way (its client
/// cancelled it) still completes, its watch and the upstream's subscription together (before,
/// the watch stayed while the subscribe was dropped, and the next watcher counted on a
/// subscription nobody held upstream).
#[tokio::test]
async fn a_subscribe_dropped_midway_completes_with_its_watch() {
    let (up, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let held = up.hold_next_subscribe();
    let mut cancelled = Box::pin(watchers.watch(&ups, MAPPED, "a", watcher()));
    assert!(poll!(&mut cancelled).is_pending());
    held.entered
        .await
        .expect("the subscribe reaches the upstream");
    drop(cancelled);
    let _ = held.release.send(Ok(()));
    // The next watcher waits for the first change of the URI to end, then counts on it.
    assert!(watchers.watch(&ups, MAPPED, "b", watcher()).await.is_ok());
    assert_eq!(up.subscribed(), set(&[ORIGINAL]));
    assert_eq!(
        (watchers.watch_count("a"), watchers.watch_count("b")),
        (1, 1)
    );
    assert_eq!(up.calls(), [format!("subscribe srv {ORIGINAL}")]);
}

/// An update that ends a watch (a reload hid the resource) is passed on without waiting for
/// the upstream's unsubscribe, and later updates reach their clients meanwhile (before, the
/// forwarding loop waited for the unsubscribe).
#[tokio::test]
async fn ending_a_hidden_watch_holds_up_no_update() {
    let (up, ups) = fake(&["srv"]);
    let watchers = Arc::new(ResourceWatchers::default());
    let (other, other_original) = ("codemode://srv/demo://resource/2", "demo://resource/2");
    let (listener, mut heard) = TestListener::new(8);
    let other_watch = (listener as Arc<dyn Listener>, Caller::local());
    assert!(watchers.watch(&ups, MAPPED, "a", watcher()).await.is_ok());
    assert!(watchers.watch(&ups, other, "b", other_watch).await.is_ok());
    let held = up.hold_next_unsubscribe();
    let hiding = poll!(pin!(watchers.updated(&ups, &HidesAll, ("srv", ORIGINAL))));
    assert!(hiding.is_ready(), "ending a watch waits for no upstream");
    held.entered
        .await
        .expect("the hidden watch's unsubscribe reaches the upstream");
    let next = poll!(pin!(watchers.updated(
        &ups,
        &LetsAll,
        ("srv", other_original)
    )));
    assert!(next.is_ready());
    assert_eq!(heard.recv().await.as_deref(), Some(other));
    held.release.send(Ok(())).expect("the call waits");
    // A new watcher waits for the unsubscribe to end, then subscribes again.
    assert!(watchers.watch(&ups, MAPPED, "c", watcher()).await.is_ok());
    assert_eq!(watchers.watch_count("a"), 0);
    assert_eq!(up.subscribed(), set(&[ORIGINAL, other_original]));
    assert_eq!(
        up.calls(),
        [
            format!("subscribe srv {ORIGINAL}"),
            format!("subscribe srv {other_original}"),
            format!("unsubscribe srv {ORIGINAL}"),
            format!("subscribe srv {ORIGINAL}"),
        ]
    );
}
