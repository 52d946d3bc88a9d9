// This file implements Load.

package standalone

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/internal/gwcompat"
)

// Load reads the objects in paths into a snapshot. A path is a file, read
// whatever its name, or a directory, walked recursively for files ending in
// .yaml, .yml or .json, in path order. Entries under a directory whose
// name starts with a dot are skipped: an editor's lock file (Emacs's
// ".#routes.yaml", a link to nowhere) or a mounted volume's own entries
// (a ConfigMap's "..data" and "..2026_11_28…", which hold a second copy
// of every file) are not the user's manifests.
//
// A file holds YAML documents separated by "---" lines, or a stream of JSON
// objects if its name ends in .json. Each document is an object or a List
// of objects, decoded strictly and defaulted as an API server would (see
// defaults.go). Errors name the file and the document's number in it,
// counting from 1 and skipping empty documents, as in "gw.yaml:2
// (HTTPRoute default/web)". Load reports every error it finds, joined, and
// then returns no snapshot.
func Load(paths []string) (*translate.Snapshot, error) {
	return new(fileSet).load(paths)
}

// LoadBytes is Load for the contents of one file; name is used in errors
// and, by its extension, tells JSON from YAML.
func LoadBytes(name string, data []byte) (*translate.Snapshot, error) {
	f := parseFile(name, data, nil)
	return new(fileSet).assemble([]fileEntry{{file: f}})
}

// filesIn returns path if it is a file, or the files under it with a
// manifest extension, sorted, if it is a directory.
func filesIn(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && isManifest(p) {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

func isManifest(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// loader accumulates the objects and errors of the file it is given.
// Objects found twice are told apart later, across files (assemble).
type loader struct {
	objs []loaded
	errs []error
	// prevDocs are the YAML documents of the file's last parse that
	// loaded without error, by their bytes: one found again is not
	// parsed again, its objects are taken as they are (files.go).
	prevDocs map[string]parsedDoc
	// docs are this parse's, as indexes into objs.
	docs map[string]docSpan
}

// parsedDoc is what a YAML document loaded: its objects, their places
// starting with prefix, the document's place then.
type parsedDoc struct {
	prefix string
	objs   []loaded
}

// docSpan is a document's place and its objects' indexes in objs.
type docSpan struct {
	prefix     string
	start, end int
}

type objectKey struct{ kind, namespace, name string }

// loaded is one decoded object and its kind, where it was found, and
// how many of its file's errors came before it.
type loaded struct {
	kind       *kind
	obj        object
	place      string
	errsBefore int
	// timed says the object's creationTimestamp is the one defaultMeta
	// gave it, at index at; at is -1 until it is defaulted.
	timed bool
	at    int
}

func newLoader() *loader {
	return &loader{}
}

// file loads the documents of one file.
func (l *loader) file(name string, data []byte) {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		l.jsonFile(name, data)
		return
	}
	n := 0
	for _, doc := range splitYAML(data) {
		if prev, ok := l.prevDocs[string(doc.data)]; ok {
			n++
			l.reuse(fmt.Sprintf("%s:%d", name, n), string(doc.data), prev)
			continue
		}
		j, err := yaml.YAMLToJSONStrict(doc.data)
		if err != nil {
			n++
			l.errs = append(l.errs, fmt.Errorf("%s:%d: invalid YAML: %s", name, n, yamlError(err, doc.line)))
			continue
		}
		if bytes.Equal(j, []byte("null")) {
			continue // empty or comments only
		}
		n++
		place, objs, errs := fmt.Sprintf("%s:%d", name, n), len(l.objs), len(l.errs)
		l.document(place, j)
		if l.docs != nil && len(l.errs) == errs {
			l.docs[string(doc.data)] = docSpan{place, objs, len(l.objs)}
		}
	}
}

// reuse takes the objects a document loaded last time, now at place.
func (l *loader) reuse(place, data string, prev parsedDoc) {
	start := len(l.objs)
	for _, o := range prev.objs {
		o.place = place + strings.TrimPrefix(o.place, prev.prefix)
		o.errsBefore = len(l.errs)
		l.objs = append(l.objs, o)
	}
	l.docs[data] = docSpan{place, start, len(l.objs)}
}

// jsonFile loads a stream of JSON documents.
func (l *loader) jsonFile(name string, data []byte) {
	d := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := d.Decode(&raw)
		if err == io.EOF {
			return
		}
		if err != nil {
			// A broken stream has no reliable place to resume from.
			l.errs = append(l.errs, fmt.Errorf("%s:%d: invalid JSON: %v", name, n, err))
			return
		}
		l.document(fmt.Sprintf("%s:%d", name, n), raw)
	}
}

// yamlDoc is one YAML document and the line of the file it starts on.
type yamlDoc struct {
	data []byte
	line int
}

// splitYAML splits data at document separators: lines that begin with
// "---" followed by nothing, a space or a tab. What follows the marker on
// its line belongs to the next document, as in YAML itself.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	start, startLine := 0, 1
	for off, line := 0, 1; off < len(data); line++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		if isSeparator(data[off:next]) {
			docs = append(docs, yamlDoc{data[start:off], startLine})
			start, startLine = off+len("---"), line
		}
		off = next
	}
	return append(docs, yamlDoc{data[start:], startLine})
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r')
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError makes a YAML parser error one line, its line numbers counted
// in the file rather than in the document, which starts on line first.
func yamlError(err error, first int) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(m[len("line "):])
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
	return strings.Join(strings.Fields(msg), " ")
}

// header is the part of a document that says what it is.
type header struct {
	apiVersion, kind, name, namespace string
}

// peek reads the header of a JSON document leniently: type errors in it
// are left for the strict decode to report.
func peek(data []byte) (header, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return header{}, errors.New("not an object")
	}
	var md map[string]json.RawMessage
	json.Unmarshal(top["metadata"], &md)
	str := func(raw json.RawMessage) string {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	return header{
		apiVersion: str(top["apiVersion"]),
		kind:       str(top["kind"]),
		name:       str(md["name"]),
		namespace:  str(md["namespace"]),
	}, nil
}

// document loads one JSON document found at place: an object, or a list
// of them.
func (l *loader) document(place string, data []byte) {
	h, err := peek(data)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: %v", place, err))
		return
	}
	if item, ok := listOf(h); ok {
		l.list(place, h, data, item)
		return
	}
	l.object(place, data, h)
}

// object loads one object with header h.
func (l *loader) object(place string, data []byte, h header) {
	k, err := lookup(h.apiVersion, h.kind)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s%s: %v", place, h.label(nil), err))
		return
	}
	if !k.cluster && h.namespace == "" {
		h.namespace = "default"
	}
	doc := data
	if k.name == kindHTTPRoute || k.name == kindGRPCRoute {
		data = upgradeRoute(data)
	}
	obj, err := k.decode(data)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s%s: %v", place, h.label(k), err))
		return
	}
	if obj.GetName() == "" {
		l.errs = append(l.errs, fmt.Errorf("%s%s: metadata.name is required", place, h.label(k)))
		return
	}
	// Cluster-scoped objects have no namespace; the API server drops one
	// given by mistake.
	obj.SetNamespace(h.namespace)
	if k.cluster {
		obj.SetNamespace("")
	}
	if obj.GetResourceVersion() == "" {
		obj.SetResourceVersion(contentVersion(doc))
	}
	l.objs = append(l.objs, loaded{kind: k, obj: obj, place: place, errsBefore: len(l.errs), at: -1})
}

// contentVersion is the resourceVersion of an object that has none: a
// hash of its document, by which translate's Cache tells it unchanged
// from one load to the next, as it does an API server's objects by
// theirs. What is added to an object after (a creation time, a status)
// makes a new version of it (newVersion).
func contentVersion(doc []byte) string {
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// newVersion gives o a resourceVersion for what was added to it since
// its version (a creation time, a status), as an API server gives one
// for every change.
func newVersion(o object, added any) {
	b, _ := json.Marshal(added)
	o.SetResourceVersion(contentVersion(append([]byte(o.GetResourceVersion()+"\x00"), b...)))
}

// upgradeRoute rewrites a route written for Gateway API v1.6 CRDs into
// v1.7's shape (gwcompat.Route: session persistence's sessionName and
// cookieConfig), so that files written for either release load. Data that
// does not decode is returned as it is, for the strict decode to report.
func upgradeRoute(data []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var obj map[string]any
	if d.Decode(&obj) != nil || !gwcompat.Route(obj) {
		return data
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

// label is " (Kind namespace/name)" for errors, with what h has of it.
func (h header) label(k *kind) string {
	switch {
	case h.kind == "":
		return ""
	case h.name == "":
		return " (" + h.kind + ")"
	case k != nil && k.cluster || h.namespace == "":
		return " (" + h.kind + " " + h.name + ")"
	}
	return " (" + h.kind + " " + h.namespace + "/" + h.name + ")"
}

// listOf reports whether h is a list, and the apiVersion and kind its
// items default to: v1 List (kubectl get -o yaml) has none, a typed list
// such as gateway.networking.k8s.io/v1 HTTPRouteList has its own.
func listOf(h header) (item header, ok bool) {
	if h.apiVersion == "v1" && h.kind == "List" {
		return header{}, true
	}
	base, ok := strings.CutSuffix(h.kind, "List")
	if !ok || base == "" {
		return header{}, false
	}
	if _, err := lookup(h.apiVersion, base); err != nil {
		return header{}, false
	}
	return header{apiVersion: h.apiVersion, kind: base}, true
}

// list loads the items of a list document. An item without apiVersion
// and kind takes them from item, as the items of an HTTPRouteList do.
func (l *loader) list(place string, h header, data []byte, item header) {
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   json.RawMessage   `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := decodeStrict(data, &list); err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s (%s): %v", place, h.kind, err))
		return
	}
	for i, it := range list.Items {
		itemPlace := fmt.Sprintf("%s items[%d]", place, i)
		ih, err := peek(it)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: %v", itemPlace, err))
			continue
		}
		if ih.apiVersion == "" && ih.kind == "" {
			ih.apiVersion, ih.kind = item.apiVersion, item.kind
		}
		if _, nested := listOf(ih); nested {
			l.errs = append(l.errs, fmt.Errorf("%s (%s): a list cannot hold a list", itemPlace, ih.kind))
			continue
		}
		l.object(itemPlace, it, ih)
	}
}

// objectName is "Kind namespace/name", or "Kind name" without namespace.
func objectName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
