import Dispatch
import Synchronization

/// Puts a recording's checkpoints on the disk off the worker's thread (decision 0095, amended
/// 2026-11-29): `fdatasync` of the kept stream, then the record's write, sync and rename, run here
/// while the pass goes on. The stream's sync blocked the worker for 10–200 ms at each checkpoint,
/// and with it every thread of a split pass (0.85 s of a 2-hour run). One checkpoint at a time: the
/// next waits for the last, so a record on the disk always vouches for stream bytes already there,
/// and a kill loses at most the checkpoint being written (the one before it stands).
///
/// Made by `CheckpointingDecoder`; `start` and `wait` are called on the worker's thread.
final class CheckpointSyncer: Sendable {
    private let queue = DispatchQueue(label: "segno.checkpoint-sync")
    private let group = DispatchGroup()
    private let failure = Mutex<(any Error)?>(nil)

    /// Runs `job` on the syncer's thread. Called after `wait` returned: one job at a time.
    func start(_ job: @escaping @Sendable () throws -> Void) {
        queue.async(group: group) { [self] in
            do { try job() } catch { failure.withLock { $0 = error } }
        }
    }

    /// Waits until the job in flight (if any) is done; returns its failure, once.
    func wait() -> (any Error)? {
        group.wait()
        return failure.withLock { f in
            defer { f = nil }
            return f
        }
    }
}
