// This file implements PrefixWriter, the log sink that tells several processes' output apart.

package testproc

import (
	"bytes"
	"io"
)

// PrefixWriter returns a writer that writes each whole line written to
// it to w with prefix before it, so that the output of several processes
// in one log stays readable. It ignores w's errors (a broken log must not
// stop what writes to it) and holds a last line without its newline
// until the newline comes.
func PrefixWriter(prefix string, w io.Writer) io.Writer {
	return &prefixWriter{prefix: prefix, w: w}
}

type prefixWriter struct {
	prefix string
	w      io.Writer
	buf    []byte
}

func (pw *prefixWriter) Write(b []byte) (int, error) {
	pw.buf = append(pw.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(pw.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, pw.prefix...)
		out = append(out, pw.buf[:i+1]...)
		pw.buf = pw.buf[i+1:]
	}
	if len(out) > 0 {
		_, _ = pw.w.Write(out)
	}
	return len(b), nil
}
