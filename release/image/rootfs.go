// This file builds the image's root filesystem.

package image

import (
	"archive/tar"
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// UID and GID are the image's user, nonroot: the user the chart's pods
// run as (and cloudflared's image uses).
const (
	UID = 65532
	GID = 65532
)

// Entrypoint is the binary the image runs unless told otherwise: the
// tunnelgate binary, whose first argument names the command.
const Entrypoint = "/tunnelgate"

// CABundlePath is where Go (and most TLS stacks on Linux) look for roots.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// Accounts of the image. nonroot's home does not exist (the Debian way of
// saying "no home"): the root filesystem is read-only in the chart, and
// tunnelgate writes nowhere but the volumes it is given.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// File is an entry of the root filesystem: a directory when Mode says so
// (Data is then empty), else a regular file. Everything is owned by root;
// the process runs as nonroot and only reads.
type File struct {
	Path string // absolute, slash-separated
	Mode fs.FileMode
	Data []byte
}

// Binary is an executable of the image, at /Name.
type Binary struct {
	Name string // tunnelgate, tunnelgate-proxy
	Data []byte
}

// checkBinaries says what is wrong with the binaries of an image, or nil:
// one of them is the entrypoint, and each has a name of its own, without
// a slash, and bytes.
func checkBinaries(binaries []Binary) error {
	seen := map[string]bool{}
	for _, b := range binaries {
		switch {
		case b.Name == "" || strings.Contains(b.Name, "/") || b.Name == "etc":
			return fmt.Errorf("binary name %q: want a file name for the image's root", b.Name)
		case seen[b.Name]:
			return fmt.Errorf("binary %s given twice", b.Name)
		case len(b.Data) == 0:
			return fmt.Errorf("binary %s is empty", b.Name)
		}
		seen[b.Name] = true
	}
	if !seen[strings.TrimPrefix(Entrypoint, "/")] {
		return fmt.Errorf("no binary is the entrypoint %s", Entrypoint)
	}
	return nil
}

// RootFS returns the image's root filesystem for its binaries, each at
// /<name>: every file and the directories above them, sorted by path, so
// a directory comes before what it holds.
func RootFS(binaries []Binary) []File {
	files := []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: CABundlePath, Mode: 0o644, Data: CABundle()},
	}
	for _, b := range binaries {
		files = append(files, File{Path: "/" + b.Name, Mode: 0o755, Data: b.Data})
	}
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		files = append(files, File{Path: d, Mode: fs.ModeDir | 0o755})
	}
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	return files
}

// WriteTar writes files as a layer's tar stream: entries in the given
// order, relative paths (as layers have them), owned by 0:0 with no user
// or group names, every time set to mtime, so the bytes depend on the
// files and mtime alone.
func WriteTar(w io.Writer, files []File, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    int64(f.Mode.Perm()),
			ModTime: mtime.UTC().Truncate(time.Second),
			Format:  tar.FormatUSTAR,
		}
		if f.Mode.IsDir() {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar header of %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return fmt.Errorf("tar entry %s: %w", f.Path, err)
		}
	}
	return tw.Close()
}

// WriteDir writes files under dir, which must not exist yet, with their
// modes: the tree the Dockerfile copies into a scratch image.
func WriteDir(dir string, files []File) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("the root filesystem goes in a new directory: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		var err error
		if f.Mode.IsDir() {
			err = os.Mkdir(p, f.Mode.Perm())
		} else {
			err = os.WriteFile(p, f.Data, f.Mode.Perm())
		}
		if err == nil {
			// Mkdir and WriteFile apply the umask; the image's modes do not.
			err = os.Chmod(p, f.Mode.Perm())
		}
		if err != nil {
			return fmt.Errorf("writing the root filesystem: %w", err)
		}
	}
	return nil
}
