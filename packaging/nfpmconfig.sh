#!/bin/sh
# Prints the nfpm configuration "make package" uses: packaging/nfpm.yaml,
# then, appended to its contents (its last key), the rpm's %doc entries,
# which must name each file (nfpm expands no pattern for them): the man
# pages in MANDIR and the documents in DOCDIR/share; then "changelog:",
# DOCDIR/changelog.yml, which nfpm reads as given (it expands no variable
# there).
set -eu
docdir=${1:?usage: nfpmconfig.sh DOCDIR MANDIR}
mandir=${2:?usage: nfpmconfig.sh DOCDIR MANDIR}

doc() {
	printf '  - src: %s\n    dst: %s\n    type: doc\n    packager: rpm\n    file_info:\n      mode: 0644\n' "$1" "$2"
}

cat "$(dirname "$0")/nfpm.yaml"
for sec in 8 5; do
	for f in "$mandir"/*.$sec.gz; do
		[ -e "$f" ] || { echo "nfpmconfig.sh: no section $sec man pages in $mandir" >&2; exit 1; }
		doc "$f" "/usr/share/man/man$sec/${f##*/}"
	done
done
for f in "$docdir"/share/*.md; do
	doc "$f" "/usr/share/doc/seedkeeper/${f##*/}"
done
for f in "$docdir"/share/docs/*.md; do
	doc "$f" "/usr/share/doc/seedkeeper/docs/${f##*/}"
done
echo "changelog: $docdir/changelog.yml"
