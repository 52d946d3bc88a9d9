// This file implements textWriter, the Prometheus text format writer of the streamed families.

package observe

import (
	"bufio"
	"math"
	"strconv"
)

// textWriter writes metric families in the Prometheus text exposition
// format, version 0.0.4 (Prometheus's "Exposition formats", text-based
// format), one line at a time into a reused scratch buffer and from there
// into a bufio.Writer: a scrape allocates nothing per series. The rules it
// follows:
//
//   - A family is its "# HELP name text" and "# TYPE name type" lines,
//     once, followed by all of its samples; a family with no sample is not
//     written at all (as the Prometheus client leaves it out). A family's
//     samples are contiguous, and a name is one family in the whole
//     scrape: the handler's two parts (metrics.go) serve different names.
//   - In HELP text a backslash is written `\\` and a line feed `\n`.
//   - A sample line is the name, then its labels in braces when it has
//     any, `name="value"` separated by commas and in the order of their
//     names (as Prometheus's client writes them, so that a series reads
//     the same whichever wrote it), then a space and the value, then a
//     line feed. No timestamps.
//   - In a label value a backslash is written `\\`, a double quote `\"`
//     and a line feed `\n`; every other byte is written as it is (label
//     values are UTF-8; names come from the config, whose names are).
//   - Counter and gauge values that are integers are written as decimal
//     integers, which the format's float parser takes as they are (and
//     which, unlike %g, keep every digit of a large count); other values
//     as Go's shortest 'g' form, and +Inf, -Inf and NaN as written so.
//   - A histogram is its cumulative `name_bucket{...,le="bound"}` lines in
//     increasing order of bound, the last `le="+Inf"` (which equals the
//     count), then `name_sum` and `name_count`, each with the series'
//     labels; `le` is written last, as Prometheus's client writes it.
//   - A family's type is counter, gauge or histogram; a counter's name
//     ends in _total.
type textWriter struct {
	w *bufio.Writer
	// pairs are the labels of the series being written, in name order;
	// labels the same escaped, without braces, once encoded: a histogram
	// encodes them once and copies them into each of its lines.
	pairs        []labelPair
	encoded      bool
	line, labels []byte
	// fam is the family being written, and wrote whether its HELP and
	// TYPE are out already.
	fam   *family
	wrote bool
}

// labelPair is a label of a series.
type labelPair struct{ name, value string }

// family is a metric family's name, type and help text.
type family struct {
	name, typ, help string
}

// begin starts f: its HELP and TYPE are written with its first sample.
func (t *textWriter) begin(f *family) {
	t.fam, t.wrote = f, false
}

// series starts a series of the family begun: it clears the labels for
// label to add.
func (t *textWriter) series() { t.pairs, t.encoded = t.pairs[:0], false }

// label adds a label to the series begun. Labels are written in the order
// of their names, whatever the order they are added in.
func (t *textWriter) label(name, value string) {
	i := len(t.pairs)
	t.pairs = append(t.pairs, labelPair{})
	for ; i > 0 && t.pairs[i-1].name > name; i-- {
		t.pairs[i] = t.pairs[i-1]
	}
	t.pairs[i] = labelPair{name, value}
	t.encoded = false
}

// encodeLabels writes the series' labels into t.labels, once.
func (t *textWriter) encodeLabels() {
	if t.encoded {
		return
	}
	b := t.labels[:0]
	for i, p := range t.pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.name...)
		b = append(b, '=', '"')
		b = appendLabelValue(b, p.value)
		b = append(b, '"')
	}
	t.labels, t.encoded = b, true
}

// head writes the family's HELP and TYPE lines, if not yet written.
func (t *textWriter) head() {
	if t.wrote {
		return
	}
	t.wrote = true
	f := t.fam
	b := append(t.line[:0], "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = appendHelp(b, f.help)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.typ...)
	b = append(b, '\n')
	t.w.Write(b)
	t.line = b
}

// start begins a sample line of the family begun, with suffix after its
// name and the series' labels, and le beside them when not "".
func (t *textWriter) start(suffix, le string) []byte {
	t.head()
	t.encodeLabels()
	b := append(t.line[:0], t.fam.name...)
	b = append(b, suffix...)
	if len(t.labels) > 0 || le != "" {
		b = append(b, '{')
		b = append(b, t.labels...)
		if le != "" {
			if len(t.labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, `le="`...)
			b = append(b, le...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// end writes the line b.
func (t *textWriter) end(b []byte) {
	b = append(b, '\n')
	t.w.Write(b)
	t.line = b
}

// int writes a sample of the series begun with an integer value.
func (t *textWriter) int(v int64) {
	t.end(strconv.AppendInt(t.start("", ""), v, 10))
}

// float writes a sample of the series begun with value v.
func (t *textWriter) float(v float64) {
	t.end(appendFloat(t.start("", ""), v))
}

// histogram writes the series begun as a histogram of h's counts.
func (t *textWriter) histogram(h *Histogram) {
	buckets, count, sum := h.Cumulative()
	for i, n := range buckets {
		t.end(strconv.AppendUint(t.start("_bucket", leLabels[i]), n, 10))
	}
	t.end(strconv.AppendUint(t.start("_bucket", "+Inf"), count, 10))
	t.end(appendFloat(t.start("_sum", ""), sum))
	t.end(strconv.AppendUint(t.start("_count", ""), count, 10))
}

// leLabels are the latency buckets' bounds as their le labels are
// written: seconds, in the shortest 'g' form, as the Prometheus client
// writes them.
var leLabels = func() (out [len(latencyBounds)]string) {
	for i, b := range latencyBounds {
		out[i] = string(appendFloat(nil, b.Seconds()))
	}
	return out
}()

// appendFloat appends v as the text format writes a float.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendLabelValue appends v escaped as a label value: backslash, double
// quote and line feed.
func appendLabelValue(b []byte, v string) []byte { return appendEscaped(b, v, true) }

// appendHelp appends v escaped as HELP text: backslash and line feed.
func appendHelp(b []byte, v string) []byte { return appendEscaped(b, v, false) }

// appendEscaped appends v with backslash and line feed escaped, and the
// double quote too when quote is set.
func appendEscaped(b []byte, v string, quote bool) []byte {
	start := 0
	for i := 0; i < len(v); i++ {
		var esc string
		switch {
		case v[i] == '\\':
			esc = `\\`
		case v[i] == '\n':
			esc = `\n`
		case v[i] == '"' && quote:
			esc = `\"`
		default:
			continue
		}
		b = append(b, v[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	return append(b, v[start:]...)
}

// seconds is nanos in seconds.
func seconds(nanos int64) float64 { return float64(nanos) / 1e9 }
