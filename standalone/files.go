// This file implements the file set: what a load keeps of each file for the next.

package standalone

// Serve reloads the files whenever one changes, and most reloads change
// one file of many. A fileSet keeps, per file, the hash of its content
// and the objects parsed from it. A load reads every file again, but
// parses only those whose content changed: the others' objects are
// handed on as the very same objects; and in a file that changed, the
// YAML documents that did not are not parsed again either. An object
// handed on is never edited: a change (a creation time, a status) makes
// a copy, with a new resourceVersion (newVersion), which is how
// translate.Cache tells an unchanged object, so their translation is
// reused.
//
// Creation times follow the same rule. An object without a
// creationTimestamp is given one in file order: baseTime, plus fileSpan
// seconds for each file before its own, plus its index in its file, in
// seconds. On the first load the index is its place in the file; after,
// an object keeps the index it had (or, when its document changed, its
// last version had) as long as it still comes after the one before it,
// else takes the next. So an object removed from a file moves no other
// object's time, and one added moves only the objects after it up to the
// first gap a removal left; and no file's objects move when another file
// changes. A file added or removed does move the times of the files after
// it. An object whose time moves is copied with the new time.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// fileSpan is the seconds between the creation times of the first
// objects of two files in a row: about 12 days, more than any file holds
// objects, and few enough that 200,000 files stay within year 9999.
const fileSpan = 1 << 20

// parsedFile is one file's content hash and what was parsed from it: its
// objects and its errors, in document order, and its YAML documents
// that loaded without error.
type parsedFile struct {
	sum  [sha256.Size]byte
	objs []loaded
	errs []error
	docs map[string]parsedDoc
}

// parseFile parses the documents of one file. A YAML document found in
// prev, the file's last parse (nil: none), is not parsed again: its
// objects are prev's (loader.reuse).
func parseFile(name string, data []byte, prev *parsedFile) *parsedFile {
	l := newLoader()
	l.docs = map[string]docSpan{}
	if prev != nil {
		l.prevDocs = prev.docs
	}
	l.file(name, data)
	pf := &parsedFile{sum: sha256.Sum256(data), objs: l.objs, errs: l.errs, docs: make(map[string]parsedDoc, len(l.docs))}
	// Slices of objs, which assemble updates in place (moveTo): the
	// next parse takes the objects as last handed on.
	for data, d := range l.docs {
		pf.docs[data] = parsedDoc{prefix: d.prefix, objs: pf.objs[d.start:d.end:d.end]}
	}
	return pf
}

// fileEntry is a file of a load: parsed, or an error reading it.
type fileEntry struct {
	file *parsedFile
	err  error
}

// fileSet is what a load keeps of each file, for the next load. The zero
// fileSet has nothing kept. A fileSet is not safe for concurrent use.
type fileSet struct {
	files map[string]*parsedFile
	// The namespaces a load added (not in any file), by name.
	namespaces map[string]loaded
	// The files and objects of the last snapshot made (status.go), the
	// objects by kind and name.
	last  []fileEntry
	byKey map[objectKey]*loaded
}

// load is Load, parsing only the files whose content changed since the
// last load, and handing on the objects of the rest unchanged.
func (s *fileSet) load(paths []string) (*translate.Snapshot, error) {
	entries, _ := s.read(paths)
	return s.assemble(entries)
}

// read reads the files, parsing only those whose content changed since
// the last read, and reports whether they are the files of the last
// snapshot made, unchanged.
func (s *fileSet) read(paths []string) (entries []fileEntry, unchanged bool) {
	next := make(map[string]*parsedFile, len(s.files))
	for _, p := range paths {
		files, err := filesIn(p)
		if err != nil {
			entries = append(entries, fileEntry{err: err})
			continue
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				entries = append(entries, fileEntry{err: err})
				continue
			}
			pf := next[f] // a file read twice: its objects are duplicates
			if pf == nil {
				if old := s.files[f]; old != nil && old.sum == sha256.Sum256(data) {
					pf = old
				} else {
					pf = parseFile(f, data, old)
				}
			}
			next[f] = pf
			entries = append(entries, fileEntry{file: pf})
		}
	}
	s.files = next
	unchanged = s.last != nil && len(entries) == len(s.last)
	for i := 0; unchanged && i < len(entries); i++ {
		unchanged = entries[i].err == nil && entries[i].file == s.last[i].file
	}
	return entries, unchanged
}

// assemble makes a snapshot of the files' objects, or reports their
// errors and objects found twice, in file and document order. It adds
// the namespaces the objects live in that no file declares, sorted, after
// the rest, and applies the defaults.
func (s *fileSet) assemble(entries []fileEntry) (*translate.Snapshot, error) {
	var errs []error
	// seen holds each object, where it was first found.
	seen := make(map[objectKey]*loaded, len(s.byKey))
	for _, e := range entries {
		if e.err != nil {
			errs = append(errs, e.err)
			continue
		}
		pf, n := e.file, 0
		for k := range pf.objs {
			o := &pf.objs[k]
			errs, n = append(errs, pf.errs[n:o.errsBefore]...), o.errsBefore
			key := objectKey{o.kind.name, o.obj.GetNamespace(), o.obj.GetName()}
			if prev, dup := seen[key]; dup {
				errs = append(errs, fmt.Errorf("%s (%s): duplicate of the object at %s",
					o.place, objectName(key.kind, key.namespace, key.name), prev.place))
				continue
			}
			seen[key] = o
		}
		errs = append(errs, pf.errs[n:]...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// A cluster always has the namespaces its objects live in.
	var missing []string
	known := map[string]bool{"": true}
	for _, e := range entries {
		for _, o := range e.file.objs {
			ns := o.obj.GetNamespace()
			if known[ns] {
				continue
			}
			known[ns] = true
			if seen[objectKey{"Namespace", "", ns}] == nil {
				missing = append(missing, ns)
			}
		}
	}
	slices.Sort(missing)

	snap := &translate.Snapshot{}
	for f, e := range entries {
		objs := e.file.objs
		last := -1 // the index in the file of the object before
		for k := range objs {
			o := &objs[k]
			var prev *loaded // the object's last version, when it was parsed anew
			if o.at < 0 {
				prev = s.byKey[objectKey{o.kind.name, o.obj.GetNamespace(), o.obj.GetName()}]
			}
			last = inFileIndex(o, prev, f, last, len(objs)-k-1)
			o.moveTo(f*fileSpan + last) // the defaults drop a status in the file
			if prev != nil {
				carryStatus(prev.obj, o.obj)
				newVersion(o.obj, prev.obj.GetResourceVersion())
			}
			o.kind.add(snap, o.obj)
		}
	}
	s.last, s.byKey = entries, seen
	namespaces := make(map[string]loaded, len(missing))
	for k, ns := range missing {
		o, ok := s.namespaces[ns]
		if !ok {
			o = loaded{kind: kinds[core+"/Namespace"], obj: newNamespace(ns), at: -1}
		}
		o.moveTo(len(entries)*fileSpan + k)
		o.kind.add(snap, o.obj)
		namespaces[ns] = o
	}
	s.namespaces = namespaces
	return snap, nil
}

// moveTo makes o the object at index i of a load (see the top of this
// file) with its defaults applied: once, when it is new; when its time
// was defaulted at another index, a copy with the time of i replaces it,
// for the object handed on before is never edited.
func (o *loaded) moveTo(i int) {
	switch {
	case o.at == i:
		return
	case o.at < 0:
		ts := o.obj.GetCreationTimestamp()
		o.timed = ts.IsZero()
		defaultMeta(o.kind, o.obj, i)
		o.kind.defaults(o.obj)
		if o.timed {
			newVersion(o.obj, createdAt(i))
		}
	case o.timed:
		c := o.obj.DeepCopyObject().(object)
		c.SetCreationTimestamp(metav1.NewTime(createdAt(i)))
		newVersion(c, createdAt(i))
		o.obj = c
	}
	o.at = i
}

// inFileIndex is the index in its file (number f) that object o takes
// (see the top of this file): the one it had, or its last version had
// when it was parsed anew, if that still comes after last, the index of
// the object before it, and leaves room in the file for the rest objects
// after it; else the one after last.
func inFileIndex(o, prev *loaded, f, last, rest int) int {
	at := o.at
	if at < 0 && prev != nil {
		at = prev.at
	}
	if j := at - f*fileSpan; at >= 0 && j > last && j+rest < fileSpan {
		return j
	}
	return last + 1
}

// createdAt is the creationTimestamp defaultMeta gives the object at
// index i of a load.
func createdAt(i int) time.Time { return baseTime.Add(time.Duration(i) * time.Second) }

// writeBack replaces each object of the last snapshot whose conditions
// out set anew by a copy carrying its status in out (status.go), and
// reports how many it replaced.
func (s *fileSet) writeBack(out *translate.Output) int {
	n := 0
	for _, e := range s.last {
		for k := range e.file.objs {
			o := &e.file.objs[k]
			if c := withStatus(o.obj, out); c != nil {
				o.obj = c // byKey points at o
				n++
			}
		}
	}
	return n
}

// snapshot is the last snapshot made again, with the objects it has now.
func (s *fileSet) snapshot() (*translate.Snapshot, error) {
	return s.assemble(s.last)
}
