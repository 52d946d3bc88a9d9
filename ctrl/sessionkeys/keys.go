// This file reads the key directory.

package sessionkeys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The files of a key directory.
const (
	CurrentFile  = "current"
	PreviousFile = "previous"
)

// MinKeyLen is the shortest key accepted: 128 bits, if random.
const MinKeyLen = 16

// maxKeyLen bounds what is read from a key file.
const maxKeyLen = 4096

// Read returns the keys in dir, the signing key first: current, then
// previous if it exists.
func Read(dir string) ([][]byte, error) {
	dir = snapshotDir(dir)
	cur, err := readKey(filepath.Join(dir, CurrentFile))
	if err != nil {
		return nil, err
	}
	prev, err := readKey(filepath.Join(dir, PreviousFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return [][]byte{cur}, nil
	case err != nil:
		return nil, err
	}
	return [][]byte{cur, prev}, nil
}

func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyLen+1))
	if err != nil {
		return nil, fmt.Errorf("session key %s: %w", path, err)
	}
	switch n := len(b); {
	case n > maxKeyLen:
		return nil, fmt.Errorf("session key %s: longer than %d bytes", path, maxKeyLen)
	case n < MinKeyLen:
		return nil, fmt.Errorf("session key %s: %d bytes; want at least %d random bytes", path, n, MinKeyLen)
	}
	return b, nil
}

// snapshotDir is the directory to read both keys from. A kubelet writes a
// Secret volume as files linking into ..data, a link it swaps to a new
// directory on each update: reading both keys through the directory it
// points to now, rather than each file's link, never pairs a new current
// with an old previous (which could drop the key a rotation just moved).
func snapshotDir(dir string) string {
	if d, err := filepath.EvalSymlinks(filepath.Join(dir, "..data")); err == nil {
		return d
	}
	return dir
}
