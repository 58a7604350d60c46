import Foundation
import SegnoCore

/// The crash journal's descriptor, for the fatal-signal handler: a signal handler has no context
/// to capture, only static storage. Set once per run (`CrashMark.arm`), before work starts.
nonisolated(unsafe) private var crashJournalFD: Int32 = -1

/// Marks the run's crash journal (`CrashJournal.crashMark`) when segno dies of a fatal signal, so
/// the next run can tell a crash inside a library, which strikes the recordings in hand, from a
/// kill from outside, which does not (docs/decisions/0048). The CLI arms it; the library never
/// touches signal dispositions.
enum CrashMark {
    /// The signals a crash ends in: bad memory, a bad instruction (Swift's traps), an abort.
    static let fatal: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP]

    /// Points the handler at `journal` and installs it. Called once, when the run's journal is open.
    static func arm(_ journal: CrashJournal) {
        crashJournalFD = journal.fd
        var action = sigaction()
        action.__sigaction_handler.sa_handler = markAndDie
        action.sa_flags = SA_ONSTACK | Int32(bitPattern: UInt32(SA_RESETHAND))
        sigemptyset(&action.sa_mask)
        for sig in fatal { sigaction(sig, &action, nil) }
    }

    /// Gives the calling thread an alternate signal stack, so a stack overflow still runs the
    /// handler. Called first on each worker thread; the 64 KiB are kept for the thread's life.
    static func alternateStack() {
        let size = 64 * 1024
        guard let memory = malloc(size) else { return }
        var stack = stack_t(ss_sp: memory, ss_flags: 0, ss_size: size)
        sigaltstack(&stack, nil)
    }
}

/// Appends the crash mark with one `write` (async-signal-safe), then lets the signal's default
/// action end the process (`SA_RESETHAND` restored it).
private func markAndDie(_ sig: Int32) {
    var mark: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0x21, 0, 0, 0, 0)
    _ = withUnsafeBytes(of: &mark) { write(crashJournalFD, $0.baseAddress, 5) }
    raise(sig)
}
