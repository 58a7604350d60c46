#!/usr/bin/env python3
"""Check that every relative link in README.md, CHANGELOG.md, bench/README.md and docs/**/*.md
resolves: the file (or folder) exists, and a #fragment names a heading of the target Markdown file
(GitHub's anchor rules). External links (http:, https:, mailto:) are not fetched.

Usage: python3 tools/check-doc-links.py [REPO_ROOT]   (exit 1 and one line per broken link)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^\s*(```|~~~)')


def markdown_files():
    files = [os.path.join(ROOT, f) for f in ('README.md', 'CHANGELOG.md', 'bench/README.md')]
    for folder, _, names in os.walk(os.path.join(ROOT, 'docs')):
        files += [os.path.join(folder, n) for n in names if n.endswith('.md')]
    return sorted(f for f in files if os.path.isfile(f))


def strip_code(text):
    """The text without fenced code blocks and inline code spans (links there are not links)."""
    out, fenced = [], False
    for line in text.split('\n'):
        if FENCE.match(line):
            fenced = not fenced
            out.append('')
            continue
        out.append('' if fenced else re.sub(r'`[^`]*`', '', line))
    return '\n'.join(out)


def anchors(path, cache={}):
    """GitHub's heading anchors of a Markdown file."""
    if path not in cache:
        seen, found, fenced = {}, set(), False
        for line in open(path, encoding='utf-8').read().split('\n'):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            slug = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else '%s-%d' % (slug, n))
        cache[path] = found
    return cache[path]


def main():
    broken = 0
    for md in markdown_files():
        text = strip_code(open(md, encoding='utf-8').read())
        for number, line in enumerate(text.split('\n'), 1):
            for target in LINK.findall(line):
                if re.match(r'[a-z][a-z0-9+.-]*:', target, re.I):
                    continue
                base, _, fragment = target.partition('#')
                resolved = md if base == '' else os.path.normpath(os.path.join(os.path.dirname(md), base))
                where = '%s:%d: %s' % (os.path.relpath(md, ROOT), number, target)
                if not os.path.exists(resolved):
                    print('%s: no such file' % where)
                    broken += 1
                elif fragment and resolved.endswith('.md') and fragment.lower() not in anchors(resolved):
                    print('%s: no heading #%s in %s' % (where, fragment, os.path.relpath(resolved, ROOT)))
                    broken += 1
    if broken:
        print('check-doc-links: %d broken link(s)' % broken)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
