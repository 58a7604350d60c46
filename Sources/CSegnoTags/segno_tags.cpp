// segno's C face of TagLib 1.13: see include/segno_tags.h.
#include "segno_tags.h"

#include <aifffile.h>
#include <apetag.h>
#include <attachedpictureframe.h>
#include <chapterframe.h>
#include <flacfile.h>
#include <flacpicture.h>
#include <id3v1tag.h>
#include <id3v2framefactory.h>
#include <id3v2tag.h>
#include <mp4coverart.h>
#include <mp4file.h>
#include <mp4tag.h>
#include <mpegfile.h>
#include <opusfile.h>
#include <tableofcontentsframe.h>
#include <textidentificationframe.h>
#include <tpropertymap.h>
#include <vorbisfile.h>
#include <wavfile.h>
#include <xiphcomment.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <new>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

using namespace TagLib;

struct segno_tags {
    std::string error;
    bool failed = false;
    std::vector<std::pair<std::string, std::string>> properties;
    std::vector<std::pair<std::string, std::string>> raw;
    struct Picture {
        int type = 3;
        std::string mime, description;
        int64_t size = 0;
        std::vector<uint8_t> data;
        bool hasData = false;
    };
    std::vector<Picture> pictures;
    int64_t limit = 0;
    /// Text bounds (0: none): a value over `valueLimit` bytes, or one that would take a list past
    /// `totalLimit` bytes, is not kept but listed in `dropped`.
    int64_t valueLimit = 0, totalLimit = 0;
    int64_t totals[2] = {0, 0};
    struct Dropped {
        std::string key;
        int64_t size = 0;
        int list = 0;    // 0: properties, 1: raw
        int reason = 0;  // 1: over valueLimit, 2: past totalLimit
    };
    std::vector<Dropped> dropped;

    /// Appends to list 0 (properties) or 1 (raw) within the text bounds; the total counts keys
    /// and values, as segno's `RecordingMetadata` does. At most 100 values kept out are listed.
    void keep(int list, std::string key, std::string value) {
        int64_t n = static_cast<int64_t>(value.size()), text = n + static_cast<int64_t>(key.size());
        int reason = valueLimit > 0 && n > valueLimit ? 1 : totalLimit > 0 && totals[list] + text > totalLimit ? 2 : 0;
        if (reason) {
            if (dropped.size() < 100) dropped.push_back({std::move(key), n, list, reason});
            return;
        }
        totals[list] += text;
        (list == 0 ? properties : raw).emplace_back(std::move(key), std::move(value));
    }
    void addProperties(const PropertyMap &map) {
        for (auto it = map.begin(); it != map.end(); ++it)
            for (auto v = it->second.begin(); v != it->second.end(); ++v)
                keep(0, it->first.to8Bit(true), v->to8Bit(true));
    }
    void addRaw(const std::string &key, const String &value) { keep(1, key, value.to8Bit(true)); }
    void addPicture(int type, const String &mime, const String &description, const ByteVector &data) {
        Picture p;
        p.type = type;
        p.mime = mime.to8Bit(true);
        p.description = description.to8Bit(true);
        p.size = data.size();
        if (limit > 0 && p.size <= limit) {
            p.data.assign(data.data(), data.data() + data.size());
            p.hasData = true;
        }
        pictures.push_back(std::move(p));
    }
    void addID3v2(ID3v2::Tag *tag) {
        if (!tag) return;
        const ID3v2::FrameList &frames = tag->frameList();
        for (auto f = frames.begin(); f != frames.end(); ++f) {
            std::string id((*f)->frameID().data(), (*f)->frameID().size());
            if (auto *apic = dynamic_cast<ID3v2::AttachedPictureFrame *>(*f)) {
                addPicture(apic->type(), apic->mimeType(), apic->description(), apic->picture());
            } else if (auto *chap = dynamic_cast<ID3v2::ChapterFrame *>(*f)) {
                // Start, end (ms) and the first TIT2 among its sub-frames; segno's own key.
                String title;
                const ID3v2::FrameList &t = chap->embeddedFrameList("TIT2");
                if (!t.isEmpty()) title = t.front()->toString();
                raw.emplace_back("segno:CHAP", std::to_string(chap->startTime()) + "\t" + std::to_string(chap->endTime()) + "\t" +
                                                   title.to8Bit(true));
            } else if (auto *txxx = dynamic_cast<ID3v2::UserTextIdentificationFrame *>(*f)) {
                StringList fields = txxx->fieldList();
                String value;
                for (unsigned i = 1; i < fields.size(); ++i) value += (i > 1 ? String("\n") : String()) + fields[i];
                addRaw(id + ":" + txxx->description().to8Bit(true), value);
            } else {
                addRaw(id, (*f)->toString());
            }
        }
    }
    void addXiph(Ogg::XiphComment *tag) {
        if (!tag) return;
        const Ogg::FieldListMap &fields = tag->fieldListMap();
        for (auto it = fields.begin(); it != fields.end(); ++it)
            for (auto v = it->second.begin(); v != it->second.end(); ++v) addRaw(it->first.to8Bit(true), *v);
        List<FLAC::Picture *> list = tag->pictureList();
        for (auto p = list.begin(); p != list.end(); ++p)
            addPicture((*p)->type(), (*p)->mimeType(), (*p)->description(), (*p)->data());
    }
};

static segno_tags *failure(segno_tags *t, const char *why) {
    t->failed = true;
    t->error = why;
    return t;
}

/// ID3v2 text is written as UTF-8 (v2.4); set once, before any frame is made.
static void id3UTF8() {
    static std::once_flag once;
    std::call_once(once, [] { ID3v2::FrameFactory::instance()->setDefaultTextEncoding(String::UTF8); });
}

static segno_tags *readWithin(const char *path, int format, const segno_tags_limits &limits);

extern "C" segno_tags *segno_tags_read(const char *path, int format, int64_t picture_limit) {
    segno_tags_limits limits = {picture_limit, 0, 0, 0, 0};
    return readWithin(path, format, limits);
}

static segno_tags *readWithin(const char *path, int format, const segno_tags_limits &limits) {
    segno_tags *t = new segno_tags();
    t->limit = limits.picture_bytes;
    t->valueLimit = limits.value_bytes;
    t->totalLimit = limits.total_bytes;
    try {
        switch (format) {
        case SEGNO_TAGS_FLAC: {
            FLAC::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as FLAC");
            t->addProperties(f.properties());
            if (f.hasXiphComment()) {
                const Ogg::FieldListMap &fields = f.xiphComment()->fieldListMap();
                for (auto it = fields.begin(); it != fields.end(); ++it)
                    for (auto v = it->second.begin(); v != it->second.end(); ++v) t->addRaw(it->first.to8Bit(true), *v);
            }
            if (f.hasID3v2Tag()) t->addID3v2(f.ID3v2Tag());
            List<FLAC::Picture *> list = f.pictureList();
            for (auto p = list.begin(); p != list.end(); ++p)
                t->addPicture((*p)->type(), (*p)->mimeType(), (*p)->description(), (*p)->data());
            break;
        }
        case SEGNO_TAGS_OGG_VORBIS: {
            Ogg::Vorbis::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as Ogg Vorbis");
            t->addProperties(f.properties());
            t->addXiph(f.tag());
            break;
        }
        case SEGNO_TAGS_OPUS: {
            Ogg::Opus::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as Opus");
            t->addProperties(f.properties());
            t->addXiph(f.tag());
            break;
        }
        case SEGNO_TAGS_MPEG: {
            MPEG::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as MPEG audio");
            t->addProperties(f.properties());
            if (f.hasID3v2Tag()) t->addID3v2(f.ID3v2Tag());
            if (f.hasAPETag()) {
                const APE::ItemListMap &items = f.APETag()->itemListMap();
                for (auto it = items.begin(); it != items.end(); ++it)
                    if (it->second.type() == APE::Item::Text) t->addRaw("APE:" + it->first.to8Bit(true), it->second.toString());
            }
            if (f.hasID3v1Tag()) {
                ID3v1::Tag *v1 = f.ID3v1Tag();
                if (!v1->title().isEmpty()) t->addRaw("ID3v1:title", v1->title());
                if (!v1->artist().isEmpty()) t->addRaw("ID3v1:artist", v1->artist());
                if (!v1->album().isEmpty()) t->addRaw("ID3v1:album", v1->album());
                if (!v1->comment().isEmpty()) t->addRaw("ID3v1:comment", v1->comment());
                if (v1->year() != 0) t->addRaw("ID3v1:year", String::number(v1->year()));
            }
            break;
        }
        case SEGNO_TAGS_MP4: {
            MP4::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as MP4");
            t->addProperties(f.properties());
            if (MP4::Tag *tag = f.tag()) {
                const MP4::ItemMap &items = tag->itemMap();
                for (auto it = items.begin(); it != items.end(); ++it) {
                    if (it->first == "covr") {
                        MP4::CoverArtList covers = it->second.toCoverArtList();
                        for (auto c = covers.begin(); c != covers.end(); ++c) {
                            const char *mime = c->format() == MP4::CoverArt::PNG ? "image/png"
                                             : c->format() == MP4::CoverArt::BMP ? "image/bmp"
                                             : c->format() == MP4::CoverArt::GIF ? "image/gif" : "image/jpeg";
                            t->addPicture(3, mime, String(), c->data());
                        }
                        continue;
                    }
                    StringList values = it->second.toStringList();
                    for (auto v = values.begin(); v != values.end(); ++v) t->addRaw(it->first.to8Bit(true), *v);
                }
            }
            break;
        }
        case SEGNO_TAGS_WAV: {
            RIFF::WAV::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as WAV");
            if (f.hasID3v2Tag()) {
                t->addProperties(f.ID3v2Tag()->properties());
                t->addID3v2(f.ID3v2Tag());
            }
            break;
        }
        case SEGNO_TAGS_AIFF: {
            RIFF::AIFF::File f(path, false);
            if (!f.isValid()) return failure(t, "TagLib cannot read it as AIFF");
            if (f.hasID3v2Tag()) {
                t->addProperties(f.tag()->properties());
                t->addID3v2(f.tag());
            }
            break;
        }
        default:
            return failure(t, "no tag reader for this container");
        }
    } catch (const std::bad_alloc &) {
        return failure(t, "reading them needs more memory than the tag reader may use");
    } catch (const std::exception &e) {
        return failure(t, e.what());
    } catch (...) {
        return failure(t, "TagLib failed");
    }
    return t;
}

namespace {
/// The child's answer on the pipe: every field of `segno_tags`, numbers as 8 bytes, strings and
/// picture data with their length first.
struct PipeWriter {
    int fd;
    bool ok = true;
    void bytes(const void *p, size_t n) {
        const char *c = static_cast<const char *>(p);
        while (ok && n > 0) {
            ssize_t w = ::write(fd, c, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { ok = false; return; }
            c += w;
            n -= static_cast<size_t>(w);
        }
    }
    void number(uint64_t v) { bytes(&v, sizeof v); }
    void string(const std::string &s) { number(s.size()); bytes(s.data(), s.size()); }
};

struct PipeReader {
    const std::vector<uint8_t> &buffer;
    size_t at = 0;
    bool ok = true;
    uint64_t number() {
        uint64_t v = 0;
        if (buffer.size() - at < sizeof v) { ok = false; return 0; }
        std::memcpy(&v, buffer.data() + at, sizeof v);
        at += sizeof v;
        return v;
    }
    std::string string() {
        uint64_t n = number();
        if (!ok || buffer.size() - at < n) { ok = false; return std::string(); }
        std::string s(reinterpret_cast<const char *>(buffer.data() + at), n);
        at += n;
        return s;
    }
};

void send(const segno_tags &t, PipeWriter &w) {
    w.number(t.failed);
    w.string(t.error);
    for (auto *list : {&t.properties, &t.raw}) {
        w.number(list->size());
        for (const auto &kv : *list) { w.string(kv.first); w.string(kv.second); }
    }
    w.number(t.pictures.size());
    for (const auto &p : t.pictures) {
        w.number(static_cast<uint64_t>(p.type));
        w.string(p.mime);
        w.string(p.description);
        w.number(static_cast<uint64_t>(p.size));
        w.number(p.hasData);
        if (p.hasData) { w.number(p.data.size()); w.bytes(p.data.data(), p.data.size()); }
    }
    w.number(t.dropped.size());
    for (const auto &d : t.dropped) {
        w.string(d.key);
        w.number(static_cast<uint64_t>(d.size));
        w.number(static_cast<uint64_t>(d.list));
        w.number(static_cast<uint64_t>(d.reason));
    }
}

bool receive(PipeReader &r, segno_tags *t) {
    t->failed = r.number() != 0;
    t->error = r.string();
    for (auto *list : {&t->properties, &t->raw}) {
        uint64_t n = r.number();
        for (uint64_t i = 0; r.ok && i < n; ++i) {
            std::string k = r.string();
            list->emplace_back(std::move(k), r.string());
        }
    }
    uint64_t n = r.number();
    for (uint64_t i = 0; r.ok && i < n; ++i) {
        segno_tags::Picture p;
        p.type = static_cast<int>(r.number());
        p.mime = r.string();
        p.description = r.string();
        p.size = static_cast<int64_t>(r.number());
        p.hasData = r.number() != 0;
        if (p.hasData) {
            uint64_t size = r.number();
            if (!r.ok || r.buffer.size() - r.at < size) return false;
            p.data.assign(r.buffer.begin() + static_cast<long>(r.at), r.buffer.begin() + static_cast<long>(r.at + size));
            r.at += size;
        }
        t->pictures.push_back(std::move(p));
    }
    n = r.number();
    for (uint64_t i = 0; r.ok && i < n; ++i) {
        segno_tags::Dropped d;
        d.key = r.string();
        d.size = static_cast<int64_t>(r.number());
        d.list = static_cast<int>(r.number());
        d.reason = static_cast<int>(r.number());
        t->dropped.push_back(std::move(d));
    }
    return r.ok && r.at == r.buffer.size();
}

/// Bytes of address space the process maps now (`/proc/self/statm`'s first field).
uint64_t mappedBytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}
}  // namespace

/// The reader's side: limits itself, reads, writes the answer to `fd`. In the `segno-tags`
/// program (after exec) or, where that program is missing, in a forked child of segno.
extern "C" int segno_tags_serve(const char *path, int format, const segno_tags_limits *limits, int fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // segno's fatal-signal handler marks the run's crash journal: a crash here is the tag
    // reader's alone, so it must end this process with no mark.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) signal(sig, SIG_DFL);
    struct rlimit mem = {static_cast<rlim_t>(mappedBytes() + static_cast<uint64_t>(limits->memory_bytes)), RLIM_INFINITY};
    mem.rlim_max = mem.rlim_cur;
    setrlimit(RLIMIT_AS, &mem);
    struct rlimit cpu = {static_cast<rlim_t>(limits->cpu_seconds), static_cast<rlim_t>(limits->cpu_seconds + 1)};
    setrlimit(RLIMIT_CPU, &cpu);
    signal(SIGALRM, SIG_DFL);
    alarm(static_cast<unsigned>(limits->cpu_seconds) * 4 + 1);  // a reader stuck without using CPU
    segno_tags *t = readWithin(path, format, *limits);
    PipeWriter w{fd};
    send(*t, w);
    return w.ok ? 0 : 3;
}

extern "C" segno_tags *segno_tags_read_isolated(const char *path, int format, const segno_tags_limits *limits,
                                                const char *program) {
    id3UTF8();  // in the parent: a forked child must not be the first to take its lock
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return failure(new segno_tags(), "cannot start the tag reader (pipe)");
    pid_t pid = -1;
    if (program) {
        // A fresh process: its memory is its own (a fork would start with segno's pages counted).
        char number[6][32];
        std::snprintf(number[0], sizeof number[0], "%d", SEGNO_TAGS_PROTOCOL);
        std::snprintf(number[1], sizeof number[1], "%d", format);
        std::snprintf(number[2], sizeof number[2], "%lld", static_cast<long long>(limits->picture_bytes));
        std::snprintf(number[3], sizeof number[3], "%lld", static_cast<long long>(limits->value_bytes));
        std::snprintf(number[4], sizeof number[4], "%lld", static_cast<long long>(limits->total_bytes));
        std::snprintf(number[5], sizeof number[5], "%lld:%d", static_cast<long long>(limits->memory_bytes), limits->cpu_seconds);
        char *argv[] = {const_cast<char *>(program), number[0], number[1], number[2], number[3], number[4], number[5],
                        const_cast<char *>(path), nullptr};
        char *envp[] = {nullptr};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
        int rc = posix_spawn(&pid, program, &actions, nullptr, argv, envp);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) pid = -1;
    } else {
        pid = fork();
        if (pid == 0) {
            // The child: only this thread exists; it reads, answers and leaves without running
            // any destructor or exit handler of segno's.
            close(fds[0]);
            _exit(segno_tags_serve(path, format, limits, fds[1]));
        }
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return failure(new segno_tags(), program ? "cannot start the tag reader program" : "cannot start the tag reader (fork)");
    }
    // What an answer within the limits can hold; more means the reader is not segno's.
    uint64_t most = static_cast<uint64_t>(limits->memory_bytes);
    std::vector<uint8_t> buffer;
    uint8_t chunk[65536];
    bool tooMuch = false;
    while (true) {
        ssize_t n = ::read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (buffer.size() + static_cast<size_t>(n) > most) {
            tooMuch = true;
            kill(pid, SIGKILL);
            break;
        }
        buffer.insert(buffer.end(), chunk, chunk + n);
    }
    close(fds[0]);
    int status = 0;
    pid_t waited;
    do { waited = waitpid(pid, &status, 0); } while (waited < 0 && errno == EINTR);
    segno_tags *t = new segno_tags();
    t->limit = limits->picture_bytes;
    if (tooMuch) return failure(t, "the tag reader answered with more than its memory limit; the tags are not carried");
    int cpu_seconds = limits->cpu_seconds;
    if (waited == pid && WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        char why[200];
        if (sig == SIGXCPU || sig == SIGALRM || sig == SIGKILL)
            std::snprintf(why, sizeof why, "the tag reader gave up after %d s of CPU (signal %d); the tags are not carried", cpu_seconds, sig);
        else
            std::snprintf(why, sizeof why, "the tags crash the tag reader (TagLib stopped on signal %d: %s); they are not carried", sig, strsignal(sig));
        return failure(t, why);
    }
    if (waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == SEGNO_TAGS_WRONG_PROTOCOL)
        return failure(t, "the segno-tags program beside segno is of another version; the tags are not carried (reinstall segno)");
    PipeReader r{buffer};
    if (!receive(r, t)) {
        delete t;
        t = new segno_tags();
        return failure(t, "the tag reader stopped before it answered; the tags are not carried");
    }
    return t;
}

extern "C" const char *segno_tags_error(const segno_tags *t) { return t->failed ? t->error.c_str() : nullptr; }
extern "C" size_t segno_tags_property_count(const segno_tags *t) { return t->properties.size(); }
extern "C" const char *segno_tags_property_key(const segno_tags *t, size_t i) { return t->properties[i].first.c_str(); }
extern "C" const char *segno_tags_property_value(const segno_tags *t, size_t i) { return t->properties[i].second.c_str(); }
extern "C" size_t segno_tags_raw_count(const segno_tags *t) { return t->raw.size(); }
extern "C" const char *segno_tags_raw_key(const segno_tags *t, size_t i) { return t->raw[i].first.c_str(); }
extern "C" const char *segno_tags_raw_value(const segno_tags *t, size_t i) { return t->raw[i].second.c_str(); }
extern "C" size_t segno_tags_picture_count(const segno_tags *t) { return t->pictures.size(); }
extern "C" int segno_tags_picture_type(const segno_tags *t, size_t i) { return t->pictures[i].type; }
extern "C" const char *segno_tags_picture_mime(const segno_tags *t, size_t i) { return t->pictures[i].mime.c_str(); }
extern "C" const char *segno_tags_picture_description(const segno_tags *t, size_t i) { return t->pictures[i].description.c_str(); }
extern "C" int64_t segno_tags_picture_size(const segno_tags *t, size_t i) { return t->pictures[i].size; }
extern "C" const uint8_t *segno_tags_picture_data(const segno_tags *t, size_t i) {
    return t->pictures[i].hasData ? t->pictures[i].data.data() : nullptr;
}
extern "C" size_t segno_tags_dropped_count(const segno_tags *t) { return t->dropped.size(); }
extern "C" const char *segno_tags_dropped_key(const segno_tags *t, size_t i) { return t->dropped[i].key.c_str(); }
extern "C" int64_t segno_tags_dropped_size(const segno_tags *t, size_t i) { return t->dropped[i].size; }
extern "C" int segno_tags_dropped_raw(const segno_tags *t, size_t i) { return t->dropped[i].list; }
extern "C" int segno_tags_dropped_reason(const segno_tags *t, size_t i) { return t->dropped[i].reason; }
extern "C" void segno_tags_free(segno_tags *t) { delete t; }

static PropertyMap propertyMap(const segno_tags_property *properties, size_t count) {
    PropertyMap map;
    for (size_t i = 0; i < count; ++i) {
        String key(properties[i].key, String::UTF8);
        map[key.upper()].append(String(properties[i].value, String::UTF8));
    }
    return map;
}

static ID3v2::AttachedPictureFrame *apic(const segno_tags_picture &p) {
    auto *frame = new ID3v2::AttachedPictureFrame();
    frame->setTextEncoding(String::UTF8);
    frame->setType(static_cast<ID3v2::AttachedPictureFrame::Type>(p.type));
    frame->setMimeType(String(p.mime, String::UTF8));
    frame->setDescription(String(p.description, String::UTF8));
    frame->setPicture(ByteVector(reinterpret_cast<const char *>(p.data), static_cast<unsigned>(p.size)));
    return frame;
}

static FLAC::Picture *flacPicture(const segno_tags_picture &p) {
    auto *picture = new FLAC::Picture();
    picture->setType(static_cast<FLAC::Picture::Type>(p.type));
    picture->setMimeType(String(p.mime, String::UTF8));
    picture->setDescription(String(p.description, String::UTF8));
    picture->setData(ByteVector(reinterpret_cast<const char *>(p.data), static_cast<unsigned>(p.size)));
    return picture;
}

/// Replaces an ID3v2 tag's frames with the properties and pictures.
static void fillID3v2(ID3v2::Tag *tag, const PropertyMap &map, const segno_tags_picture *pictures, size_t picture_count) {
    tag->setProperties(map);
    tag->removeFrames("APIC");
    for (size_t i = 0; i < picture_count; ++i) tag->addFrame(apic(pictures[i]));
}

static void fillXiph(Ogg::XiphComment *tag, const PropertyMap &map, const segno_tags_picture *pictures, size_t picture_count) {
    tag->setProperties(map);
    tag->removeAllPictures();
    for (size_t i = 0; i < picture_count; ++i) tag->addPicture(flacPicture(pictures[i]));
}

/// Copies `why` into the caller's `error` buffer (cut to fit) and returns -1.
static int failed(char *error, size_t error_size, const char *why) {
    if (error && error_size > 0) {
        std::strncpy(error, why, error_size - 1);
        error[error_size - 1] = 0;
    }
    return -1;
}

extern "C" int segno_tags_write(const char *path, int format, const segno_tags_property *properties, size_t count,
                                const segno_tags_picture *pictures, size_t picture_count, char *error, size_t error_size) {
    auto fail = [&](const char *why) { return failed(error, error_size, why); };
    id3UTF8();
    try {
        PropertyMap map = propertyMap(properties, count);
        bool saved = false;
        switch (format) {
        case SEGNO_TAGS_FLAC: {
            FLAC::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the FLAC it is to tag");
            f.xiphComment(true)->setProperties(map);
            f.removePictures();
            for (size_t i = 0; i < picture_count; ++i) f.addPicture(flacPicture(pictures[i]));
            saved = f.save();
            break;
        }
        case SEGNO_TAGS_OGG_VORBIS: {
            Ogg::Vorbis::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the Ogg Vorbis file it is to tag");
            fillXiph(f.tag(), map, pictures, picture_count);
            saved = f.save();
            break;
        }
        case SEGNO_TAGS_OPUS: {
            Ogg::Opus::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the Opus file it is to tag");
            fillXiph(f.tag(), map, pictures, picture_count);
            saved = f.save();
            break;
        }
        case SEGNO_TAGS_MPEG: {
            MPEG::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the MP3 it is to tag");
            fillID3v2(f.ID3v2Tag(true), map, pictures, picture_count);
            saved = f.save(MPEG::File::ID3v2, File::StripOthers, ID3v2::v4, File::DoNotDuplicate);
            break;
        }
        case SEGNO_TAGS_MP4: {
            MP4::File f(path, false);
            if (!f.isValid() || !f.tag()) return fail("TagLib cannot open the MP4 it is to tag");
            MP4::Tag *tag = f.tag();
            // ISO 6709 location goes where iPhones and ffmpeg look for it: the ©xyz item.
            PropertyMap rest = map;
            StringList location = rest["LOCATION"];
            rest.erase("LOCATION");
            // Names MP4 has no atom for (DESCRIPTION, ORIGINATOR…) become iTunes freeform items.
            PropertyMap unsupported = tag->setProperties(rest);
            for (auto it = unsupported.begin(); it != unsupported.end(); ++it)
                tag->setItem("----:com.apple.iTunes:" + it->first, MP4::Item(it->second));
            if (!location.isEmpty()) tag->setItem("\xA9xyz", MP4::Item(location));
            else tag->removeItem("\xA9xyz");
            MP4::CoverArtList covers;
            for (size_t i = 0; i < picture_count; ++i) {
                std::string mime(pictures[i].mime);
                MP4::CoverArt::Format fmt = mime == "image/png" ? MP4::CoverArt::PNG
                                          : mime == "image/bmp" ? MP4::CoverArt::BMP
                                          : mime == "image/gif" ? MP4::CoverArt::GIF
                                          : mime == "image/jpeg" || mime == "image/jpg" ? MP4::CoverArt::JPEG : MP4::CoverArt::Unknown;
                covers.append(MP4::CoverArt(fmt, ByteVector(reinterpret_cast<const char *>(pictures[i].data),
                                                             static_cast<unsigned>(pictures[i].size))));
            }
            if (!covers.isEmpty()) tag->setItem("covr", MP4::Item(covers));
            else tag->removeItem("covr");
            saved = f.save();
            break;
        }
        case SEGNO_TAGS_WAV: {
            RIFF::WAV::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the WAV it is to tag");
            fillID3v2(f.ID3v2Tag(), map, pictures, picture_count);
            saved = f.save(RIFF::WAV::File::ID3v2, File::StripNone, ID3v2::v4);
            break;
        }
        case SEGNO_TAGS_AIFF: {
            RIFF::AIFF::File f(path, false);
            if (!f.isValid()) return fail("TagLib cannot open the AIFF it is to tag");
            fillID3v2(f.tag(), map, pictures, picture_count);
            saved = f.save(ID3v2::v4);
            break;
        }
        default:
            return fail("no tag writer for this container");
        }
        if (!saved) return fail("TagLib could not save the tags");
    } catch (const std::exception &e) {
        return fail(e.what());
    } catch (...) {
        return fail("TagLib failed");
    }
    return 0;
}

extern "C" int segno_tags_write_chapters(const char *path, const segno_tags_chapter *chapters, size_t count,
                                         char *error, size_t error_size) {
    auto fail = [&](const char *why) { return failed(error, error_size, why); };
    id3UTF8();
    try {
        MPEG::File f(path, false);
        if (!f.isValid()) return fail("TagLib cannot open the MP3 it is to give chapters");
        ID3v2::Tag *tag = f.ID3v2Tag(true);
        tag->removeFrames("CHAP");
        tag->removeFrames("CTOC");
        ByteVectorList children;
        for (size_t i = 0; i < count; ++i) {
            std::string name = "chp" + std::to_string(i);
            ByteVector id(name.c_str(), static_cast<unsigned>(name.size()));
            auto *title = new ID3v2::TextIdentificationFrame("TIT2", String::UTF8);
            title->setText(String(chapters[i].title ? chapters[i].title : "", String::UTF8));
            ID3v2::FrameList sub;
            sub.append(title);
            tag->addFrame(new ID3v2::ChapterFrame(id, chapters[i].start_ms, chapters[i].end_ms, 0xFFFFFFFF, 0xFFFFFFFF, sub));
            children.append(id);
        }
        // A CTOC counts its children in one byte: past 255 chapters the top-level CTOC names
        // ordered sub-CTOCs (toc0, toc1, …) of at most 255 chapters each.
        const size_t most = 255;
        ByteVectorList top = children;
        if (count > most) {
            top.clear();
            for (size_t first = 0, k = 0; first < count; first += most, ++k) {
                std::string name = "toc" + std::to_string(k);
                ByteVector id(name.c_str(), static_cast<unsigned>(name.size()));
                ByteVectorList part;
                for (size_t i = first; i < count && i < first + most; ++i) part.append(children[static_cast<unsigned>(i)]);
                auto *sub = new ID3v2::TableOfContentsFrame(id, part);
                sub->setIsTopLevel(false);
                sub->setIsOrdered(true);
                tag->addFrame(sub);
                top.append(id);
            }
        }
        if (count > 0) {
            auto *toc = new ID3v2::TableOfContentsFrame(ByteVector("toc"), top);
            toc->setIsTopLevel(true);
            toc->setIsOrdered(true);
            tag->addFrame(toc);
        }
        if (!f.save(MPEG::File::ID3v2, File::StripOthers, ID3v2::v4, File::DoNotDuplicate)) return fail("TagLib could not save the chapters");
    } catch (const std::exception &e) {
        return fail(e.what());
    } catch (...) {
        return fail("TagLib failed");
    }
    return 0;
}
