//! In process: each server behind `serve_lines` over a duplex pipe, one call at a time.

use std::time::Instant;

use pilotage::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::{call, check, env_or, spread, Path, Side, SIDES};

/// One in-process client of one side's server, speaking through `serve_lines`.
pub struct Pipe {
    writer: tokio::io::DuplexStream,
    reader: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    line: String,
}

impl Pipe {
    /// A fresh server of `side` behind `serve_lines`, initialized, whose calls are all `path`.
    pub async fn open(side: Side, path: Path) -> Pipe {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        crate::spawn_lines(side, path, server_in, server_out);
        let mut pipe = Pipe {
            writer: client_out,
            reader: BufReader::new(client_in).lines(),
            line: format!("{}\n", call(1, path)),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                          "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        for m in [init, initialized] {
            pipe.writer.write_all(format!("{m}\n").as_bytes()).await.expect("write");
        }
        pipe.reader.next_line().await.expect("read").expect("initialize reply");
        if env_or("FAIR_DUMP", 0) == 1 {
            let reply = pipe.call().await;
            eprintln!(
                "{} {}: {} bytes: {}",
                side.name(),
                path.label,
                reply.len(),
                &reply[..reply.len().min(700)]
            );
        }
        pipe
    }

    /// One call's reply line.
    pub async fn call(&mut self) -> String {
        self.writer.write_all(self.line.as_bytes()).await.expect("write");
        self.reader.next_line().await.expect("read").expect("reply")
    }

    /// Seconds per call over `calls` sequential calls.
    pub async fn time(&mut self, calls: u64) -> f64 {
        let start = Instant::now();
        for _ in 0..calls {
            check(&self.call().await);
        }
        start.elapsed().as_secs_f64() / calls as f64
    }
}

/// Medians of one in-process round: pilotage's time over each hand-written server's, and the
/// three times per call (pilotage, naive, careful).
pub struct Round {
    pub ratios: [f64; 2],
    pub times: [f64; 3],
}

/// One round in process: the three servers side by side, timed in `batches` short batches of
/// `calls` each that rotate which side goes first, so a change in the machine's load reaches
/// every side of a batch alike.
pub async fn round(path: Path, batches: usize, calls: u64) -> Round {
    let mut pipes = Vec::new();
    for side in SIDES {
        pipes.push(Pipe::open(side, path).await);
    }
    // Warm all up: allocator arenas, engine threads, caches.
    for pipe in &mut pipes {
        pipe.time(calls).await;
    }
    let (mut naive, mut careful, mut times) = (Vec::new(), Vec::new(), [vec![], vec![], vec![]]);
    for b in 0..batches {
        let mut t = [0.0; 3];
        for i in 0..3 {
            let side = (b + i) % 3;
            t[side] = pipes[side].time(calls).await;
        }
        naive.push(t[0] / t[1]);
        careful.push(t[0] / t[2]);
        for (all, one) in times.iter_mut().zip(t) {
            all.push(one);
        }
    }
    let times = times.map(|t| spread(t).0);
    Round { ratios: [spread(naive).0, spread(careful).0], times }
}
