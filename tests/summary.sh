#!/bin/sh
# summary.sh JUNIT_XML — the closing lines of `make test`: one line of counts,
#     weft: 40 passed, 0 failed, 31 skipped
# then one line per skipped test with the reason it printed. ctest's own "100% tests passed"
# counts a skip (exit 77) as a pass, so a machine without GPUs would look fully tested.
# Reads the JUnit file that ctest writes with --output-junit (its status per test and, for a
# skip, the test's output), since LastTest.log does not tell a skip from a pass. The reason is the
# last output line that mentions skipping ("skipped: no GPU", weftrun's "...; skipping"), else
# the last line of output. Prints only; the caller keeps ctest's exit status.
set -u
xml=${1:?usage: summary.sh JUNIT_XML}
if [ ! -s "$xml" ]; then
  echo "weft: no test results ($xml was not written)"
  exit 0
fi
awk '
  function attr(line, key,    i, rest) {
    i = index(line, " " key "=\"")
    if (!i) return ""
    rest = substr(line, i + length(key) + 3)
    return substr(rest, 1, index(rest, "\"") - 1)
  }
  function unescape(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
    gsub(/&amp;/, "\\&", s)
    return s
  }
  function output_line(s) {
    s = unescape(s)
    sub(/[[:space:]]+$/, "", s)
    if (s == "") return
    last = s
    if (tolower(s) ~ /skip/) reason = s
  }
  /<testcase / {
    name = attr($0, "name"); status = attr($0, "status")
    message = ""; reason = ""; last = ""; capturing = 0
  }
  /<skipped / { message = attr($0, "message") }
  {
    line = $0
    if (!capturing && (i = index(line, "<system-out>"))) {
      capturing = 1
      line = substr(line, i + length("<system-out>"))
    }
    if (capturing) {
      if ((i = index(line, "</system-out>"))) {
        capturing = 0
        line = substr(line, 1, i - 1)
      }
      output_line(line)
      next
    }
  }
  /<\/testcase>/ {
    if (status == "run") passed++
    else if (status == "disabled" || (status == "notrun" && message ~ /^SKIP_/)) {
      skipped++
      why = reason != "" ? reason : last != "" ? last : \
            status == "disabled" ? "disabled" : "printed no reason (" message ")"
      list = list "  skipped " name ": " why "\n"
    } else failed++
  }
  END {
    printf "weft: %d passed, %d failed, %d skipped\n", passed, failed, skipped
    printf "%s", list
  }' "$xml"
