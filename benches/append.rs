//! What each `durability` setting costs per append: one message entry
//! (about 1.5 KB, with its token count) written to a session log under
//! `flush` and under `fsync`. The log lives in Cargo's target directory, so
//! it is on the disk a data directory usually is on, not a tmpfs.

use compactd::conversation::Message;
use compactd::store::{Durability, LogEntry, SessionStore, TokenCount};
use compactd::tokens::Encoding;
use criterion::{criterion_group, criterion_main, Criterion};

fn bench_durability(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let message = Message::user("m1", "let x = compute(&input)?; // ".repeat(50));
    let entry = LogEntry::Message {
        tokens: Some(TokenCount::new(Encoding::O200k, &message, 412)),
        message,
    };
    let mut group = c.benchmark_group("append one message");
    for (name, durability) in [("flush", Durability::Flush), ("fsync", Durability::Fsync)] {
        let store = SessionStore::new(dir.path(), durability);
        let mut log = store.create_log(name).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| log.append(std::slice::from_ref(&entry), false).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_durability);
criterion_main!(benches);
