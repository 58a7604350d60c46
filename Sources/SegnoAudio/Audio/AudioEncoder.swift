import SegnoCore
import SegnoDSP

/// The end of an encode tap: writes a stream's blocks into one output file, which appears at its
/// final path only when `finish` succeeds. `SndFileEncoder` (libsndfile's formats) and
/// `FFmpegEncoder` (AAC and ALAC in `.m4a`, through the `ffmpeg` program). Owned by one worker.
public protocol AudioEncoder: AnyObject {
    /// Where the file ends up.
    var path: String { get }
    /// Writes one block (interleaved Float32). Called for each block that reaches the tap.
    func write(_ block: AudioBlock) throws
    /// Completes the file and renames it into place. Called once, after the last block.
    func finish() throws
    /// Chapters and markers at their place in this output, in seconds (`ChapterList.mapped`),
    /// written by `finish` (`ChapterWriter`). Set before `finish`; empty: none.
    var chapters: ChapterList { get set }
    /// The source's iXML with its sync points placed in this output (`IXMLPlacement`), written by
    /// `finish` over the iXML written before the audio. Set before `finish`; nil: as written.
    var placedIXML: [UInt8]? { get set }
    /// Drops the unfinished file; nothing appears at the final path. Safe to call twice.
    func abandon()
}

extension SndFileEncoder: AudioEncoder {}
extension FFmpegEncoder: AudioEncoder {
    /// M4A carries no iXML.
    public var placedIXML: [UInt8]? { get { nil } set {} }
}
