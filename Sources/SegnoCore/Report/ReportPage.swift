import Foundation

/// `segno report`'s HTML: one self-contained file (inline CSS and script, no network). The data
/// is embedded once as JSON and the script renders the table a page at a time, so an archive of
/// 100,000 recordings opens as fast as one of ten; each row's waveform is drawn on a canvas
/// from the embedded min/max pairs (as peaks.js draws), only for the rows on screen.
///
/// With `#check` at the end of its address the page writes what it drew into
/// `<pre id="segno-check">` (render time, each canvas's non-blank pixel count, each audio source):
/// the tests read it from `chromium --headless --dump-dom`.
public enum ReportPage {
    /// The whole page.
    public static func html(_ data: ReportData) -> String {
        let json = data.json(compact: true).escapingFileNameBytes().serialized()
            // Inside <script>, "</script>" or "<!--" in a string would end or confuse it; "<" only
            // occurs inside JSON strings, where \u003c means the same.
            .replacingOccurrences(of: "<", with: "\\u003c")
        let total = data.counts.values.reduce(0, +)
        func count(_ id: String, _ label: String, _ n: Int) -> String {
            "<div class=\"count \(id)\"><span id=\"count-\(id)\">\(n)</span> \(label)</div>"
        }
        var page = head.replacingOccurrences(of: "{{TITLE}}", with: escape("segno report: \(data.name)"))
        page += "<header><h1>\(escape(data.name))</h1><p class=\"sub\">\(escape(data.spec)) · state \(escape(data.statePath)) · generated "
        page += "<time>\(escape(ISO8601DateFormatter().string(from: data.generated)))</time> · segno \(escape(SegnoVersion.string))</p>\n"
        page += "<div class=\"counts\">" + count("recordings", "recordings", total) + count("done", "done", data.counts["done"] ?? 0)
        page += count("failed", "failed", data.counts["failed"] ?? 0) + count("partial", "partly done", data.counts["partial"] ?? 0) + "</div></header>\n"
        page += body
        page += "<script id=\"segno-data\" type=\"application/json\">" + json + "</script>\n"
        page += "<script>" + script + "</script>\n</body>\n</html>\n"
        return page
    }

    /// Text for HTML content and attribute values.
    static package func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    static package let head = #"""
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{{TITLE}}</title>
    <script>
    /* Errors anywhere on the page are shown at the top (and read by the tests). */
    window.segnoErrors = [];
    window.segnoError = function (m) {
      window.segnoErrors.push(String(m));
      var e = document.getElementById('segno-errors');
      if (e) { e.hidden = false; e.textContent = window.segnoErrors.join('\n'); }
    };
    window.addEventListener('error', function (ev) { window.segnoError('error: ' + (ev.message || ev.type) + (ev.lineno ? ' (line ' + ev.lineno + ')' : '')); }, true);
    window.addEventListener('unhandledrejection', function (ev) { window.segnoError('unhandled rejection: ' + ev.reason); });
    (function () { var c = console.error; console.error = function () { window.segnoError(Array.prototype.join.call(arguments, ' ')); c.apply(console, arguments); }; })();
    </script>
    <style>
    :root { --fg:#1d232b; --muted:#667085; --line:#e3e6ea; --bg:#fff; --card:#f6f7f9; --wave:#336ec4; --ok:#1a7f37; --bad:#c62828; --warn:#b26a00; }
    @media (prefers-color-scheme: dark) { :root { --fg:#e6e9ee; --muted:#98a2b3; --line:#2c3440; --bg:#14181e; --card:#1c222a; --wave:#6ea1ef; --ok:#4cc06a; --bad:#ff6b6b; --warn:#f0a43a; } }
    * { box-sizing: border-box; }
    body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
    h1 { margin: 0 0 2px; font-size: 24px; } h2 { margin: 28px 0 10px; font-size: 17px; }
    .sub { margin: 0; color: var(--muted); font-size: 12px; word-break: break-all; }
    .counts { display: flex; gap: 12px; margin-top: 14px; flex-wrap: wrap; }
    .count { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; color: var(--muted); }
    .count span { font-size: 22px; font-weight: 600; color: var(--fg); margin-right: 4px; }
    .count.done span { color: var(--ok); } .count.failed span { color: var(--bad); } .count.partial span { color: var(--warn); }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
    th { font-size: 12px; color: var(--muted); font-weight: 600; white-space: nowrap; }
    th.sortable { cursor: pointer; } th.sortable:hover { color: var(--fg); }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
    .path { color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
    .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; border: 1px solid currentColor; white-space: nowrap; }
    .badge.done { color: var(--ok); } .badge.failed, .badge.failures { color: var(--bad); } .badge.partial, .badge.interrupted, .badge.time-up, .badge.killed { color: var(--warn); }
    .outputs { max-width: 260px; }
    details.transcript { font-size: 12px; max-width: 420px; }
    details.transcript .cue { cursor: pointer; padding: 1px 0; }
    details.transcript .cue:hover { text-decoration: underline; }
    .outputs a { display: inline-block; margin: 0 4px 3px 0; padding: 0 6px; font-size: 12px; color: var(--wave); text-decoration: none; border: 1px solid var(--line); border-radius: 4px; }
    .outputs a.up { color: var(--muted); }
    td.date { white-space: nowrap; }
    .outputs a:hover { text-decoration: underline; }
    canvas.wave { width: 240px; height: 44px; display: block; background: var(--card); border-radius: 4px; }
    .who { font-size: 12px; color: var(--muted); } .who .sw { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin: 0 3px 0 8px; }
    .who .sw:first-child { margin-left: 0; }
    ol.chapters { margin: 4px 0 0; padding: 0; list-style: none; font-size: 12px; max-width: 240px; }
    ol.chapters li { cursor: pointer; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    ol.chapters li:hover { text-decoration: underline; }
    audio { height: 32px; width: 220px; }
    .failure { border-left: 3px solid var(--bad); background: var(--card); padding: 8px 12px; margin: 6px 0; border-radius: 0 6px 6px 0; }
    .failure .msg { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; white-space: pre-wrap; word-break: break-word; }
    .retry { display: flex; gap: 8px; align-items: center; margin: 8px 0 4px; }
    .retry code { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; font-size: 13px; user-select: all; }
    button, select, input { font: inherit; color: inherit; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; }
    button { cursor: pointer; } button:disabled { opacity: .4; cursor: default; }
    .controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-bottom: 8px; }
    .controls input[type=search] { min-width: 260px; }
    .muted { color: var(--muted); }
    .wide { overflow-x: auto; max-width: 100%; }
    .retry code { overflow-wrap: anywhere; min-width: 0; }
    /* Narrow windows (800 px): each recording becomes a wrapped block whose cells name themselves, so
       nothing runs past the window; the runs table scrolls inside its own box. */
    @media (max-width: 1000px) {
      body { padding: 16px 12px 32px; }
      th { white-space: normal; }
      #recordings, #recordings thead, #recordings tbody { display: block; }
      #recordings tr { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 14px; padding: 8px 0; border-bottom: 1px solid var(--line); }
      #recordings th, #recordings td { border: 0; padding: 0; text-align: left; }
      #recordings td.title { flex: 1 1 260px; min-width: 0; }
      #recordings td[data-label]::before { content: attr(data-label) " "; color: var(--muted); font-size: 12px; }
      .outputs, details.transcript { max-width: 100%; }
      .controls input[type=search] { min-width: 0; flex: 1 1 200px; }
    }
    #segno-errors { color: var(--bad); background: var(--card); border: 1px solid var(--bad); padding: 8px; white-space: pre-wrap; }
    </style>
    </head>
    <body>
    <pre id="segno-errors" hidden></pre>
    <noscript><p>This report draws its tables with JavaScript; the same data is in the page source as JSON, and <code>segno report --json</code> prints it.</p></noscript>

    """#

    static package let body = #"""
    <section><h2>Runs</h2>
    <div class="wide"><table id="runs"><thead><tr><th>Run</th><th>Started</th><th class="num">Duration</th><th>Status</th><th class="num">Planned</th><th class="num">Done</th><th class="num">Failed</th><th class="num">Up to date</th><th class="num">Pruned</th><th class="num">Audio</th><th class="num">× realtime</th></tr></thead><tbody></tbody></table></div>
    <p id="runs-empty" class="muted" hidden>No runs recorded.</p>
    </section>
    <section id="failures-section" hidden><h2>Failures</h2>
    <div class="retry"><code id="retry"></code><button id="copy-retry" type="button">Copy</button></div>
    <p class="muted">Input and spec failures wait until the file or the spec changes (or <code>segno retry</code>); environment and transient failures are tried again by the next run.</p>
    <div id="failures"></div>
    </section>
    <section><h2>Recordings</h2>
    <div class="controls">
    <input type="search" id="filter" placeholder="Filter by title or path">
    <select id="status-filter"><option value="">all statuses</option><option value="done">done</option><option value="failed">failed</option><option value="partial">partly done</option></select>
    <select id="per-page"><option>25</option><option selected>50</option><option>100</option><option>250</option></select>
    <button id="prev" type="button">‹ Previous</button><span id="page-info" class="muted"></span><button id="next" type="button">Next ›</button>
    </div>
    <table id="recordings"><thead><tr>
    <th>Waveform</th><th class="sortable" data-sort="title">Title</th><th class="sortable" data-sort="date">Date</th><th class="num sortable" data-sort="duration">Duration</th>
    <th class="num sortable" data-sort="loudness">Loudness</th><th class="num sortable" data-sort="peak">Peak</th><th>Status</th><th>Outputs</th><th>Listen</th>
    </tr></thead><tbody></tbody></table>
    <p id="recordings-empty" class="muted" hidden>No recordings.</p>
    </section>

    """#

    static package let script = #"""
    (function () {
      'use strict';
      var D = JSON.parse(document.getElementById('segno-data').textContent);
      var C = {}; D.columns.forEach(function (n, i) { C[n] = i; });
      var all = D.recordings, view = all, page = 0, per = 50, sortKey = null, sortDir = 1;

      function el(tag, attrs, text) {
        var e = document.createElement(tag);
        if (attrs) for (var k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
        if (text !== undefined && text !== null) e.textContent = text;
        return e;
      }
      function td(text, cls, label) { return el('td', { 'class': cls || null, 'data-label': label || null }, text); }
      function when(iso) { return iso ? iso.replace('T', ' ').replace(/(:\d\d)(\.\d+)?Z$/, '$1').replace(/Z$/, '') : '–'; }
      function clock(s) {
        if (s === null || s === undefined) return '–';
        if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
        var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), sec = Math.floor(s % 60);
        return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(sec).padStart(2, '0');
      }
      function db(v, unit) { return v === null || v === undefined ? '–' : v.toFixed(1) + ' ' + unit; }

      // Runs.
      var runs = document.querySelector('#runs tbody');
      D.runs.forEach(function (r) {
        var tr = el('tr');
        tr.appendChild(td('#' + r.id));
        tr.appendChild(td(when(r.started)));
        tr.appendChild(td(clock(r.seconds), 'num'));
        var st = td(); st.appendChild(el('span', { 'class': 'badge ' + r.status }, r.status)); tr.appendChild(st);
        ['planned', 'done', 'failed', 'skipped', 'pruned'].forEach(function (k) { tr.appendChild(td(String(r[k]), 'num')); });
        tr.appendChild(td(r.audio_seconds ? clock(r.audio_seconds) : '–', 'num'));
        tr.appendChild(td(r.realtime ? r.realtime.toFixed(1) + '×' : '–', 'num'));
        runs.appendChild(tr);
      });
      document.getElementById('runs-empty').hidden = D.runs.length > 0;

      // Failures, with the command that retries them.
      if (D.failures.length) {
        document.getElementById('failures-section').hidden = false;
        document.getElementById('retry').textContent = D.retry;
        document.getElementById('copy-retry').addEventListener('click', function () {
          var b = this;
          function done() { b.textContent = 'Copied'; setTimeout(function () { b.textContent = 'Copy'; }, 1500); }
          if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(D.retry).then(done, function () {}); return; }
          var range = document.createRange(); range.selectNodeContents(document.getElementById('retry'));
          var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
          try { document.execCommand('copy'); done(); } catch (e) { /* the text stays selected */ }
        });
        var box = document.getElementById('failures'), shown = D.failures.slice(0, 200);
        shown.forEach(function (f) {
          var d = el('div', { 'class': 'failure' });
          var top = el('div');
          top.appendChild(el('strong', null, f.path)); top.appendChild(document.createTextNode(' '));
          top.appendChild(el('span', { 'class': 'badge ' + f.status }, f.status === 'partial' ? 'partly done' : 'failed'));
          top.appendChild(document.createTextNode(' '));
          top.appendChild(el('span', { 'class': 'badge class-' + f['class'] }, f['class']));
          top.appendChild(el('span', { 'class': 'muted' }, ' · ' + f.attempts + (f.attempts === 1 ? ' attempt' : ' attempts') + ' · ' + when(f.at) + ' · ' + f.next));
          d.appendChild(top);
          d.appendChild(el('div', { 'class': 'msg' }, f.error));
          box.appendChild(d);
        });
        if (D.failures.length > shown.length) box.appendChild(el('p', { 'class': 'muted' }, '… and ' + (D.failures.length - shown.length) + ' more: choose “failed” in the table below.'));
      }

      // The waveform of one row, drawn as peaks.js draws: a vertical bar from min to max per column,
      // faint, and inside it (when the data has one) the RMS level, solid, so that a long recording
      // whose every column reaches full scale still shows where it is loud and where quiet.
      // Speaker turns (seconds of the waveform's timeline) as a band of each speaker's colour along the bottom.
      var TURN_COLOURS = ['#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285', '#c2255c', '#5c940d', '#495057'];
      function turnColour(i) { return TURN_COLOURS[i % TURN_COLOURS.length]; }
      function drawWave(canvas, b64, rmsB64, turns, duration) {
        var bytes = atob(b64), n = bytes.length / 2, rms = rmsB64 ? atob(rmsB64) : null;
        var ratio = window.devicePixelRatio || 1, w = 240 * ratio, h = 44 * ratio;
        canvas.width = w; canvas.height = h;
        var g = canvas.getContext('2d');
        g.fillStyle = getComputedStyle(document.documentElement).getPropertyValue('--wave') || '#336ec4';
        var mid = h / 2, colW = w / n, barW = Math.max(1, Math.ceil(colW) - (colW > 3 ? 1 : 0));
        function bar(i, hi, lo) {
          var top = Math.round(mid - hi * (mid - 1)), bottom = Math.round(mid - lo * (mid - 1));
          g.fillRect(Math.floor(i * colW), top, barW, Math.max(1, bottom - top));
        }
        g.globalAlpha = rms ? 0.35 : 1;
        for (var i = 0; i < n; i++) bar(i, (bytes.charCodeAt(2 * i + 1) - 128) / 127, (bytes.charCodeAt(2 * i) - 128) / 127);
        g.globalAlpha = 1;
        if (rms) for (var j = 0; j < n && j < rms.length; j++) { var r = rms.charCodeAt(j) / 255; if (r > 0) bar(j, r, -r); }
        var bars = 0;
        if (turns && duration > 0) {
          var band = Math.max(3, Math.round(5 * ratio));
          turns.forEach(function (t) {
            var x0 = Math.floor(t[0] / duration * w), x1 = Math.max(x0 + 1, Math.ceil(Math.min(t[1], duration) / duration * w));
            g.fillStyle = turnColour(t[2]); g.fillRect(x0, h - band, x1 - x0, band); bars++;
          });
        }
        canvas.setAttribute('data-turns', bars);
      }
      // Plays `src` in the row's player from `t` seconds (a transcript line or a chapter was clicked).
      function playFrom(tr, src, t) {
        var player = tr.querySelector('audio');
        if (!player || !src) return;
        if (player.getAttribute('src') !== src) player.setAttribute('src', src);
        player.setAttribute('data-seek', t);
        var go = function () { player.currentTime = t; player.play().catch(function () {}); };
        if (player.readyState >= 1) go(); else { player.preload = 'metadata'; player.addEventListener('loadedmetadata', go, { once: true }); player.load(); }
      }

      var tbody = document.querySelector('#recordings tbody');
      function render() {
        var pages = Math.max(1, Math.ceil(view.length / per));
        if (page >= pages) page = pages - 1;
        var frag = document.createDocumentFragment();
        view.slice(page * per, page * per + per).forEach(function (r) {
          var tr = el('tr');
          var w = td();
          if (r[C.wave]) { var cv = el('canvas', { 'class': 'wave', 'width': 240, 'height': 44, 'aria-label': 'waveform' }); w.appendChild(cv); drawWave(cv, r[C.wave], r[C.wave_rms], r[C.turns], r[C.wave_duration] || r[C.duration]); }
          else w.appendChild(el('span', { 'class': 'muted' }, '–'));
          // The chapters beside the waveform: a click plays the recording's audio from there.
          if (r[C.chapter_list]) {
            var ol = el('ol', { 'class': 'chapters' });
            r[C.chapter_list].forEach(function (c) {
              var li = el('li', { 'class': 'chapter', 'data-start': c[0], 'title': c[1] });
              li.appendChild(el('span', { 'class': 'muted' }, clock(c[0]) + ' ')); li.appendChild(document.createTextNode(c[1]));
              li.addEventListener('click', function () { playFrom(tr, r[C.audio] || r[C.transcript_audio], c[0]); });
              ol.appendChild(li);
            });
            w.appendChild(ol);
          }
          tr.appendChild(w);
          var t = td(null, 'title'); t.appendChild(el('div', null, r[C.title])); t.appendChild(el('div', { 'class': 'path' }, r[C.path]));
          // Who spoke how long, each in the colour of their turns on the waveform.
          if (r[C.who_spoke]) {
            var who = el('div', { 'class': 'who' });
            r[C.who_spoke].forEach(function (sp, i) {
              who.appendChild(el('span', { 'class': 'sw', 'style': 'background:' + turnColour(i) }));
              who.appendChild(el('span', { 'class': 'speaker' }, sp[0] + ' ' + clock(sp[1]) + ' (' + Math.round(sp[2] * 100) + ' %)'));
            });
            t.appendChild(who);
          }
          // The transcript: a click on a line plays the audio its times refer to from that time.
          if (r[C.transcript] && r[C.transcript].length) {
            var det = el('details', { 'class': 'transcript' }); det.appendChild(el('summary', null, 'transcript'));
            r[C.transcript].forEach(function (seg) {
              var line = el('div', { 'class': 'cue', 'data-start': seg[0] });
              line.appendChild(el('span', { 'class': 'muted' }, clock(seg[0]) + ' ')); line.appendChild(document.createTextNode(seg[1]));
              line.addEventListener('click', function () { playFrom(tr, r[C.transcript_audio] || r[C.audio], seg[0]); });
              det.appendChild(line);
            });
            t.appendChild(det);
          }
          tr.appendChild(t);
          tr.appendChild(td(when(r[C.date]), 'date'));
          tr.appendChild(td(clock(r[C.duration]), 'num', 'duration'));
          tr.appendChild(td(db(r[C.loudness], 'LUFS'), 'num', 'loudness'));
          tr.appendChild(td(db(r[C.peak], 'dBFS'), 'num', 'peak'));
          var s = td(); s.appendChild(el('span', { 'class': 'badge ' + r[C.status], 'title': r[C.error] || '' }, r[C.status] === 'partial' ? 'partly done' : r[C.status]));
          if (r[C.salvaged]) { var sv = r[C.salvaged]; s.appendChild(el('span', { 'class': 'badge partial', 'title': 'processed from a damaged file: ' + sv.frames_lost + ' frames lost' + (sv.at !== null ? ' from ' + sv.at + ' s' : '') + ' (' + sv.causes.join(', ') + ')' }, 'salvaged')); }
          if (r[C['class']]) { s.appendChild(document.createTextNode(' ')); s.appendChild(el('span', { 'class': 'muted' }, r[C['class']])); }
          tr.appendChild(s);
          var o = td(null, 'outputs');
          // Each output as a short chip named by what follows the stem ("flac", "meta.json"); uploads marked ↑.
          var stem = r[C.path].split('/').pop().replace(/\.[^.]*$/, '');
          r[C.outputs].forEach(function (x) {
            var name = x[1].split('/').pop(), label = name.indexOf(stem + '.') === 0 ? name.slice(stem.length + 1) : name;
            if (x[0] === 'upload') label = '↑ ' + label;
            if (x[2]) o.appendChild(el('a', { 'href': x[2], 'title': x[0] + ': ' + x[1], 'class': x[0] === 'upload' ? 'up' : null }, label));
            else o.appendChild(el('span', { 'class': 'muted', 'title': x[0] + ': ' + x[1] }, label + ' '));
          });
          // Measures of the taps that report them: "label value unit", one line.
          if (r[C.measures]) o.appendChild(el('div', { 'class': 'muted' }, r[C.measures].map(function (m) { return m[0] + ' ' + m[1] + (m[2] ? ' ' + m[2] : ''); }).join(' · ')));
          tr.appendChild(o);
          var a = td();
          // The player loads the file's header up front, so it shows the duration before play; a
          // failed recording has none (what failed is reading it).
          if (r[C.status] !== 'failed' && (r[C.audio] || r[C.transcript_audio])) a.appendChild(el('audio', { 'controls': '', 'preload': 'metadata', 'src': r[C.audio] || r[C.transcript_audio] }));
          tr.appendChild(a);
          frag.appendChild(tr);
        });
        tbody.textContent = '';
        tbody.appendChild(frag);
        document.getElementById('page-info').textContent = view.length ? 'page ' + (page + 1) + ' of ' + pages + ' · ' + view.length + ' recordings' : '';
        document.getElementById('prev').disabled = page === 0;
        document.getElementById('next').disabled = page >= pages - 1;
        document.getElementById('recordings-empty').hidden = view.length > 0;
      }

      function refilter() {
        var q = document.getElementById('filter').value.toLowerCase(), st = document.getElementById('status-filter').value;
        view = all.filter(function (r) {
          return (!st || r[C.status] === st) && (!q || r[C.title].toLowerCase().indexOf(q) >= 0 || r[C.path].toLowerCase().indexOf(q) >= 0);
        });
        if (sortKey !== null) {
          var k = C[sortKey];
          view.sort(function (a, b) {
            var x = a[k], y = b[k];
            if (x === y) return 0; if (x === null) return 1; if (y === null) return -1;
            return (x < y ? -1 : 1) * sortDir;
          });
        }
        page = 0;
        render();
      }
      document.getElementById('filter').addEventListener('input', refilter);
      document.getElementById('status-filter').addEventListener('change', refilter);
      document.getElementById('per-page').addEventListener('change', function () { per = +this.value; page = 0; render(); });
      document.getElementById('prev').addEventListener('click', function () { page--; render(); });
      document.getElementById('next').addEventListener('click', function () { page++; render(); });
      Array.prototype.forEach.call(document.querySelectorAll('th.sortable'), function (th) {
        th.addEventListener('click', function () {
          var k = th.getAttribute('data-sort');
          sortDir = sortKey === k ? -sortDir : 1; sortKey = k;
          refilter();
        });
      });
      render();

      // Self-check for tests and for `#check` in the address: what was drawn, in the DOM.
      if (location.hash.indexOf('check') >= 0) {
        // Per canvas: pixels drawn, and of them those solid (the RMS layer) and faint (min/max outside it).
        // One readback per canvas; its bottom row's distinct solid colours are the turn band's.
        var turnColours = [];
        var layers = Array.prototype.map.call(document.querySelectorAll('canvas.wave'), function (c) {
          var px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, solid = 0, faint = 0, seen = {};
          for (var i = 3; i < px.length; i += 4) { if (px[i] >= 250) solid++; else if (px[i] > 0) faint++; }
          for (var j = (c.height - 1) * c.width * 4; j < px.length; j += 4) if (px[j + 3] >= 250) seen[px[j] + ',' + px[j + 1] + ',' + px[j + 2]] = 1;
          turnColours.push(Object.keys(seen).length);
          return [solid, faint];
        });
        var canvases = layers.map(function (l) { return l[0] + l[1]; });
        var out = el('pre', { 'id': 'segno-check' }, JSON.stringify({
          rendered_ms: Math.round(performance.now()), rows: all.length, shown: tbody.children.length,
          canvases: canvases,
          layers: layers,
          preload: Array.prototype.map.call(document.querySelectorAll('audio'), function (a) { return a.getAttribute('preload'); }),
          failed_players: Array.prototype.filter.call(tbody.children, function (tr) { return tr.querySelector('.badge.failed') && tr.querySelector('audio'); }).length,
          failed_rows: Array.prototype.filter.call(tbody.children, function (tr) { return tr.querySelector('.badge.failed'); }).length,
          inner_width: window.innerWidth, scroll_width: document.documentElement.scrollWidth, audio: Array.prototype.map.call(document.querySelectorAll('audio'), function (a) { return a.getAttribute('src'); }),
          cues: document.querySelectorAll('.cue').length,
          // Per canvas: turns drawn, and the distinct colours along its bottom row (the turn band).
          turn_bars: Array.prototype.map.call(document.querySelectorAll('canvas.wave'), function (c) { return +(c.getAttribute('data-turns') || 0); }),
          turn_colours: turnColours,
          speakers: Array.prototype.map.call(document.querySelectorAll('.who .speaker'), function (e) { return e.textContent; }),
          chapters: Array.prototype.map.call(document.querySelectorAll('li.chapter'), function (e) { return [+e.getAttribute('data-start'), e.getAttribute('title')]; }),
          chapter_seek: (function () {
            var items = document.querySelectorAll('li.chapter'); if (!items.length) return null;
            var li = items[items.length - 1]; li.click();
            var player = li.closest('tr').querySelector('audio');
            return player ? [player.getAttribute('src'), +player.getAttribute('data-seek')] : null;
          })(),
          seek: (function () {
            // A click on the last transcript line on the page: which audio its player then plays, from when.
            var cues = document.querySelectorAll('.cue'); if (!cues.length) return null;
            var cue = cues[cues.length - 1]; cue.click();
            var player = cue.closest('tr').querySelector('audio');
            return player ? [player.getAttribute('src'), +player.getAttribute('data-seek')] : null;
          })(),
          errors: window.segnoErrors
        }));
        out.hidden = true;
        document.body.appendChild(out);
        // The embedded data is parsed: drop it, so a dumped DOM stays small.
        var data = document.getElementById('segno-data'); data.parentNode.removeChild(data);
      }
    })();
    """#
}
