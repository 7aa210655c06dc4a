#!/usr/bin/env bash
# Fails when a committed reference doc differs from the one TableGen
# generates now. Arguments: pairs of GENERATED COMMITTED.
status=0
while [ $# -ge 2 ]; do
  if ! cmp -s "$1" "$2"; then
    echo "docs: $2 is out of date; run 'ninja -C build soap-docs' and commit it"
    status=1
  fi
  shift 2
done
exit $status
