#!/bin/sh
# Writes segno(1) in roff to stdout from the binary's own --help texts, so the man page never
# disagrees with the program. argument-parser's generate-manual plugin needs the network; this
# needs only the binary. Usage: tools/manpage.sh path/to/segno > segno.1
set -eu
segno=${1:?usage: tools/manpage.sh SEGNO_BINARY}
version=$("$segno" --version 2>/dev/null || echo unknown)
# roff: a backslash is \e, and a line starting with . or ' would be a request.
escape() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
subcommands=$("$segno" --help | awk '/^SUBCOMMANDS:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
printf '.TH SEGNO 1 "" "segno %s" "User Commands"\n' "$version"
printf '.SH NAME\nsegno \\- declarative audio pipelines over folders of recordings\n'
printf '.SH SYNOPSIS\n'
for c in $subcommands; do
  "$segno" "$c" --help | awk '/^USAGE:/ {sub(/^USAGE: /, ""); print; exit}' | escape | sed 's/^/.br\n/'
done
printf '.SH DESCRIPTION\n.nf\n'
"$segno" --help | escape
printf '.fi\n'
for c in $subcommands; do
  printf '.SH "SEGNO %s"\n.nf\n' "$(echo "$c" | tr a-z A-Z)"
  "$segno" "$c" --help | escape
  printf '.fi\n'
done
printf '.SH SEE ALSO\nThe README.md of the segno sources documents specs, stages and the state database.\n'
